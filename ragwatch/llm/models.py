"""The one reading of the `local/<name>` spelling: a model string that names a packaged model run in
this process by the local runtime (`ragwatch.llm.local`), not one a provider serves.

Example:
    >>> is_local("local/smollm2-135m-instruct"), local_name("local/smollm2-135m-instruct")
    (True, 'smollm2-135m-instruct')
"""

from __future__ import annotations

LOCAL_PROVIDER = "local"  # the litellm provider name of the in-process models (ragwatch.llm.local)
LOCAL_PREFIX = f"{LOCAL_PROVIDER}/"  # `local/<name>`: a packaged model (an LLM here, an embedder in embeddings.py)


def is_local(model: str) -> bool:
    """Whether a model string names a packaged model run in process (`local/<name>`), not a provider's."""
    return model.startswith(LOCAL_PREFIX)


def local_name(model: str) -> str:
    """`local/<name>` -> `<name>`; any other string as it is."""
    return model.removeprefix(LOCAL_PREFIX)
