"""Process environment for ZenML and litellm, set before either is imported.

ZenML keeps its store in a project-local directory unless the user chose one and sends no analytics
(offline it would block every run on time-outs). litellm's offline setting lives in ragwatch/__init__.py.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the checkout: ragwatch/zenml/env.py -> the root


def configure_environment(zenml_home: Path | None = None) -> None:
    """Set the defaults; values the user already exported win."""
    os.environ.setdefault("ZENML_CONFIG_PATH", str(zenml_home or PROJECT_ROOT / ".zenml_home"))
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
    path = Path(os.environ.get("ZENML_CONFIG_PATH", PROJECT_ROOT / ".zenml_home")) / "config.yaml"
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


def ensure_repository(root: Path = PROJECT_ROOT) -> None:
    """Make `root` ZenML's source root, so steps and artifacts load from any process, from any
    current directory and from the `ragwatch` console script. Call before ZenML is imported.

    `ZENML_CUSTOM_SOURCE_ROOT` does it without a `.zen` repository: a repository remembers the
    active project and stack of one store, and after switching stores (`ZENML_CONFIG_PATH`) every
    command warned twice "The current repo active project (stack) is no longer available". A `.zen`
    left in the checkout by an earlier version is kept in step with the store in use.
    """
    os.environ.setdefault("ZENML_CUSTOM_SOURCE_ROOT", str(root))
    if (root / ".zen").is_dir():
        sync_repository_store(root)


def sync_repository_store(root: Path = PROJECT_ROOT) -> None:
    """Copy the active project and stack of the store in use (`ZENML_CONFIG_PATH`) into the
    repository's `.zen/config.yaml`.

    ZenML keeps them in the repository, so after switching stores every command warned twice "The
    current repo active project (stack) is no longer available". Call before ZenML is imported.
    """
    import yaml

    repo_config = root / ".zen" / "config.yaml"
    store_config = Path(os.environ.get("ZENML_CONFIG_PATH", PROJECT_ROOT / ".zenml_home")) / "config.yaml"
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
