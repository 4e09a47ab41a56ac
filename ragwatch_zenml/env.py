"""Process environment for ZenML and litellm, set before either is imported, and where things live.

ZenML keeps its store in the project directory (`project_home()`) unless the user chose one, never inside
the installed package, and sends no analytics (offline it would block every run on time-outs). litellm's
offline setting lives in ragwatch/__init__.py.

Where things live:
- `CHECKOUT`: the source checkout this package runs from (`python run.py`, `pip install -e .`), or None
  for an installed package.
- `BUNDLED`: the bundled `configs/` and `data/sample/`: the checkout's own, or the copies an installed
  package carries (`ragwatch/_bundled/`, put there when the wheel is built).
- `project_home()`: the project directory, which holds the ZenML store (`.zenml_home/`) and the state
  (`.ragwatch/`): `$RAGWATCH_HOME` if set; else the checkout; else the nearest directory from the current
  one up that already holds a `.zenml_home/`, else the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import ragwatch

_PACKAGE = Path(ragwatch.__file__).resolve().parent  # the core package, which carries _bundled/ when installed


def _checkout() -> Path | None:
    root = _PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() and (root / "run.py").is_file() else None


CHECKOUT = _checkout()
BUNDLED = CHECKOUT or _PACKAGE / "_bundled"
STORE_DIR = ".zenml_home"  # the ZenML store's directory under the project home


def project_home() -> Path:
    """The project directory: the ZenML store and the state live under it (see the module doc)."""
    if os.environ.get("RAGWATCH_HOME"):
        return Path(os.environ["RAGWATCH_HOME"]).expanduser().resolve()
    if CHECKOUT is not None:
        return CHECKOUT
    here = Path.cwd().resolve()
    return next((d for d in (here, *here.parents) if (d / STORE_DIR).is_dir()), here)


def store_path() -> Path:
    """The ZenML store in use: `ZENML_CONFIG_PATH` if set, else `.zenml_home/` of the project home."""
    return Path(os.environ.get("ZENML_CONFIG_PATH") or project_home() / STORE_DIR)


def configure_environment(zenml_home: Path | None = None) -> None:
    """Set the defaults; values the user already exported win."""
    os.environ.setdefault("ZENML_CONFIG_PATH", str(zenml_home or store_path()))
    os.environ.setdefault("ZENML_ANALYTICS_OPT_IN", "false")
    os.environ.setdefault("ZENML_AUTO_OPEN_DASHBOARD", "false")
    os.environ.setdefault("ZENML_LOGGING_VERBOSITY", "WARN")
    os.environ.setdefault("ZENML_ENABLE_RICH_TRACEBACK", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    record_analytics_choice()


def record_analytics_choice() -> None:
    """Write the analytics choice (`ZENML_ANALYTICS_OPT_IN`) into the store's own `config.yaml`.

    ZenML creates that file with `analytics_opt_in: true`; our processes obey the environment
    variable, but the `zenml` CLI run by hand in a shell without it obeys the file. A store not
    created yet gets a file with the choice alone, which ZenML completes when it creates the store.
    """
    import yaml

    opt_in = os.environ.get("ZENML_ANALYTICS_OPT_IN", "false").strip().lower() in ("1", "true", "yes", "on")
    path = store_path() / "config.yaml"
    try:
        data = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.is_file() else {}
    except (OSError, yaml.YAMLError):
        return  # ZenML reports a broken store itself
    if not isinstance(data, dict) or data.get("analytics_opt_in") is opt_in:
        return
    data["analytics_opt_in"] = opt_in
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(yaml.safe_dump(data), encoding="utf-8")
        tmp.replace(path)  # atomic: a concurrent ZenML process never reads half a file
    except OSError:
        return  # a read-only store: the environment variable still holds for our processes


def ensure_repository(root: Path | None = None) -> None:
    """Make `root` (default: the project home) ZenML's source root, so steps and artifacts load from any
    process, from any current directory and from the `ragwatch` console script. Call before ZenML is
    imported.

    `ZENML_CUSTOM_SOURCE_ROOT` does it without a `.zen` repository: a repository remembers the
    active project and stack of one store, and after switching stores (`ZENML_CONFIG_PATH`) every
    command warned twice "The current repo active project (stack) is no longer available". A `.zen`
    left in the checkout by an earlier version is kept in step with the store in use.
    """
    root = root or project_home()
    os.environ.setdefault("ZENML_CUSTOM_SOURCE_ROOT", str(root))
    if (root / ".zen").is_dir():
        sync_repository_store(root)


def sync_repository_store(root: Path) -> None:
    """Copy the active project and stack of the store in use (`ZENML_CONFIG_PATH`) into the
    repository's `.zen/config.yaml`.

    ZenML keeps them in the repository, so after switching stores every command warned twice "The
    current repo active project (stack) is no longer available". Call before ZenML is imported.
    """
    import yaml

    repo_config = root / ".zen" / "config.yaml"
    store_config = store_path() / "config.yaml"
    keys = ("active_project_id", "active_stack_id")
    try:
        # a store not created yet has no ids: then the repository should name none either
        store = yaml.safe_load(store_config.read_text(encoding="utf-8")) or {} if store_config.is_file() else {}
        repo = yaml.safe_load(repo_config.read_text(encoding="utf-8")) or {} if repo_config.is_file() else {}
    except (OSError, yaml.YAMLError):
        return  # ZenML reports a broken store itself
    wanted = {key: store.get(key) for key in keys}
    if all(repo.get(key) == value for key, value in wanted.items()):
        return
    repo.update({key: value for key, value in wanted.items() if value})
    for key in keys:
        if not wanted[key]:
            repo.pop(key, None)
    tmp = repo_config.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(yaml.safe_dump(repo), encoding="utf-8")
    tmp.replace(repo_config)  # atomic: a concurrent ZenML process never reads half a file


def skip_dashboard_survey() -> None:
    """Mark the active user's first-run survey as answered, so the local dashboard opens on the runs
    instead of an account form (no e-mail is sent anywhere: the store is local and analytics are off).

    The dashboard (0.98) shows the form while the user's `email_opted_in` is unset and its metadata
    lacks `finished_onboarding_survey`.
    """
    from zenml.client import Client

    client = Client()
    user = client.active_user
    metadata = dict(user.user_metadata or {})
    if user.email_opted_in is not None and metadata.get("finished_onboarding_survey"):
        return
    metadata["finished_onboarding_survey"] = True
    client.update_user(user.id, updated_email_opt_in=user.email_opted_in or False, updated_metadata=metadata)
