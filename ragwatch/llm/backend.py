"""litellm, imported on first use: the import takes seconds (about 1.5 s idle, far more on a loaded
machine), and validating a config, `run.py`'s preflight or `import ragwatch.judges` need none of it.

Example:
    >>> litellm = load_litellm()  # the first call imports and configures it; later calls are a lookup
    >>> litellm.suppress_debug_info
    True
"""

from __future__ import annotations

from types import ModuleType


def load_litellm() -> ModuleType:
    """The configured litellm module (its offline price-map setting is in ragwatch/__init__.py)."""
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banners in our logs
    return litellm
