"""ragwatch: continuous evaluation of retrieval-augmented generation systems.

The core library never imports zenml: every metric runs from a notebook or pytest.
"""

import os

from ragwatch._moved import install

# litellm fetches a model price map from the internet at import unless told to use its bundled one;
# every ragwatch module that imports litellm is below this package, so this runs first.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

install()  # old import paths of moved modules (stored artifacts name their types by them)

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `ragwatch.evaluate_records` without importing the judges (and litellm) at `import ragwatch`
    if name in ("evaluate_records", "Record"):
        from ragwatch import api

        return getattr(api, name)
    raise AttributeError(f"module 'ragwatch' has no attribute {name!r}")
