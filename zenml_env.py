"""Process environment for ZenML and litellm, set before either is imported.

ZenML keeps its store in a project-local directory unless the user chose one and sends no analytics
(offline it would block every run on time-outs). litellm's offline setting lives in ragwatch/__init__.py.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent


def configure_environment(zenml_home: Path | None = None) -> None:
    """Set the defaults; values the user already exported win."""
    os.environ.setdefault("ZENML_CONFIG_PATH", str(zenml_home or PROJECT_ROOT / ".zenml_home"))
    os.environ.setdefault("ZENML_ANALYTICS_OPT_IN", "false")
    os.environ.setdefault("ZENML_AUTO_OPEN_DASHBOARD", "false")
    os.environ.setdefault("ZENML_LOGGING_VERBOSITY", "WARN")
    os.environ.setdefault("ZENML_ENABLE_RICH_TRACEBACK", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def ensure_repository(root: Path = PROJECT_ROOT) -> None:
    """Mark `root` as the ZenML source root (`zenml init`), so artifacts load from any process.

    Without it ZenML guesses the source root from the main module, which fails in notebooks and
    points at the wrong directory under pytest.
    """
    if (root / ".zen").is_dir():
        return
    from zenml.client import Client

    Client.initialize(root=root)
