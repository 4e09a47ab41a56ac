"""Session-wide isolation: a temporary ZenML store, LLM cache and state directory.

Set before zenml or litellm is imported anywhere. Assembled model files are shared across sessions
(`~/.cache/ragwatch/models`), since rebuilding 500 MB per test run proves nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_SESSION_DIR = Path(tempfile.mkdtemp(prefix="ragwatch-tests-"))
_SHARED_MODELS = Path(os.environ.get("RAGWATCH_CACHE_DIR", Path.home() / ".cache" / "ragwatch")) / "models"
_SHARED_MODELS.mkdir(parents=True, exist_ok=True)
(_SESSION_DIR / "cache").mkdir()
(_SESSION_DIR / "cache" / "models").symlink_to(_SHARED_MODELS, target_is_directory=True)

os.environ["RAGWATCH_CACHE_DIR"] = str(_SESSION_DIR / "cache")
os.environ["RAGWATCH_STATE_DIR"] = str(_SESSION_DIR / "state")
os.environ["ZENML_CONFIG_PATH"] = str(_SESSION_DIR / "zenml")

from ragwatch_zenml.env import configure_environment, ensure_repository  # noqa: E402

configure_environment()
ensure_repository()
