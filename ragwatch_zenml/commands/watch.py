"""Evaluate once for every change of the system under test.

A change is any difference in the watch key: the configuration fingerprint of the system under
test, the corpus fingerprint, or the versions and stages of its ZenML model. The key after the last
evaluation is stored, so a restarted watcher does not evaluate a change twice; the key is read again
after our own run, so the version and promotion that the run itself made do not count as a change.

OSS ZenML emits no model-version events, hence polling.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ragwatch.config import FullConfig, corpus_fingerprint, system_fingerprint
from ragwatch.config_loader import load_config
from ragwatch_zenml.commands.scheduling import state_dir


class WatchKey(BaseModel):
    system: str
    corpus: str
    model_versions: dict[str, str] = Field(default_factory=dict)  # version name -> stage

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]

    def changes_from(self, old: WatchKey | None) -> list[str]:
        if old is None:
            return ["never evaluated by this watcher"]
        changes = []
        if self.system != old.system:
            changes.append("configuration of the system under test changed")
        if self.corpus != old.corpus:
            changes.append("corpus changed")
        for version, stage in self.model_versions.items():
            if version not in old.model_versions:
                changes.append(f"new model version {version} ({stage})")
            elif old.model_versions[version] != stage:
                changes.append(f"model version {version}: {old.model_versions[version]} -> {stage}")
        return changes


def model_versions(model_name: str) -> dict[str, str]:
    from zenml.client import Client

    try:
        versions = Client().list_model_versions(model_name_or_id=model_name, size=1000).items
    except KeyError:
        return {}
    return {str(v.name): str(v.stage.value if hasattr(v.stage, "value") else v.stage or "none") for v in versions}


def current_key(config_path: str | Path) -> WatchKey:
    config = load_config(config_path, FullConfig)
    return WatchKey(
        system=system_fingerprint(config.evaluate.system, config.ingest.embedding, config.ingest.chunking),
        corpus=corpus_fingerprint(config.ingest.corpus),
        model_versions=model_versions(config.evaluate.system.model_name),
    )


class WatchState:
    """The key evaluated last, per config file, in `<state dir>/watch.json`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / "watch.json"

    def _all(self) -> dict[str, Any]:
        return json.loads(self.path.read_text()) if self.path.is_file() else {}

    def get(self, config_path: str | Path) -> WatchKey | None:
        raw = self._all().get(str(Path(config_path).resolve()))
        return WatchKey.model_validate(raw) if raw else None

    def set(self, config_path: str | Path, key: WatchKey) -> None:
        data = self._all()
        data[str(Path(config_path).resolve())] = key.model_dump()
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.path)


def check_once(
    config_path: str | Path, evaluate: Callable[[], Any], state: WatchState | None = None
) -> tuple[list[str], Any]:
    """Evaluate if the key changed since the last evaluation; returns (changes, evaluate's result)."""
    state = state or WatchState()
    key = current_key(config_path)
    changes = key.changes_from(state.get(config_path))
    if not changes:
        return [], None
    result = evaluate()
    state.set(config_path, current_key(config_path))
    return changes, result


def watch(
    config_path: str | Path,
    evaluate: Callable[[], Any],
    *,
    interval_s: float = 60.0,
    max_checks: int | None = None,
    on_change: Callable[[list[str], Any], None] | None = None,
) -> None:
    """Poll every `interval_s` seconds until interrupted (or `max_checks` checks)."""
    checks = 0
    while max_checks is None or checks < max_checks:
        changes, result = check_once(config_path, evaluate)
        if changes and on_change is not None:
            on_change(changes, result)
        checks += 1
        if max_checks is None or checks < max_checks:
            time.sleep(interval_s)
