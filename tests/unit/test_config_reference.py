"""docs/reference/config.md is generated from the config models: it lists every key of every config file a
command reads (each reachable from its top section through the page's links) and is never stale."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from ragwatch.judges import registry
from ragwatch.monitoring.settings import MonitorConfig

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "scripts" / "config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_what_the_models_say():
    # A fresh process: tests in this one register judges of their own, which a user's config never sees.
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "config_reference.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, ("docs/reference/config.md is stale: run python scripts/config_reference.py\n"
                                  + done.stdout + done.stderr)


def _sections(page: str) -> dict[str, dict[str, str]]:
    """Anchor -> {key: its table row} of every section of the page."""
    sections: dict[str, dict[str, str]] = {}
    rows: dict[str, str] = {}
    for line in page.splitlines():
        if anchor := re.fullmatch(r'<a id="([^"]+)"></a>', line.strip()):
            rows = sections.setdefault(anchor.group(1), {})
        elif key := re.match(r"\| `([^`]+)` \|", line):
            rows[key.group(1)] = line
    return sections


def _block(annotation) -> type[BaseModel] | None:
    stack = [annotation]
    while stack:
        arg = stack.pop()
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
        stack.extend(typing.get_args(arg))
    return None


def _missing(model: type[BaseModel], anchor: str, sections: dict[str, dict[str, str]], seen: set) -> list[str]:
    """Every key of `model` and of the blocks it holds that the page lacks, following the page's links
    from the section at `anchor` as a reader would."""
    if (model, anchor) in seen:
        return []
    seen.add((model, anchor))
    if anchor not in sections:
        return [f"{model.__name__}: no section #{anchor}"]
    missing = []
    for name, field in model.model_fields.items():
        row = sections[anchor].get(name)
        if row is None or not field.description:
            missing.append(f"{model.__name__}.{name} has no entry (or no description) in section #{anchor}")
            continue
        sub = _block(field.annotation)
        if sub is not None:
            link = re.search(r"\]\(#([^)]+)\)", row)
            if link is None:
                missing.append(f"{model.__name__}.{name} holds a block but links to no section")
            else:
                missing += _missing(sub, link.group(1), sections, seen)
    return missing


def test_every_command_config_has_a_top_section():
    # a file `run.py` or a command reads is a model given to load_config: each one is a top config of the page
    script = _script()
    tops = {model.__name__ for model, _, _ in script.TOP_CONFIGS}
    read = set()
    for folder in ("run.py", "ragwatch", "ragwatch_zenml"):  # ragwatch_zenml/: the CLI, commands, pipelines, steps
        for file in [ROOT / folder] if folder.endswith(".py") else (ROOT / folder).rglob("*.py"):
            code = "\n".join(line for line in file.read_text(encoding="utf-8").splitlines() if ">>>" not in line)
            read |= set(re.findall(r"load_config\([^,()]+,\s*([A-Z]\w+)", code))  # a class, not a docstring's
    assert {"FullConfig", "MonitorConfig", "CalibrationSettings"} <= read
    assert read <= tops, f"config models read by a command but not in the reference: {sorted(read - tops)}"


def test_every_key_of_every_config_is_on_the_page():
    # the committed page: the first test checks it is what a fresh process renders (this process holds
    # judges other tests registered)
    page = (ROOT / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    sections = _sections(page)
    missing: list[str] = []
    for model, _, prefix in _script().TOP_CONFIGS:
        missing += _missing(model, prefix or "top-level", sections, set())
    script = _script()
    for name in registry.names():
        spec = registry.spec(name)
        if spec.module.startswith("ragwatch."):  # not a judge some other test registered
            missing += _missing(spec.options, script._anchor(f"evaluate.judges.{name}"), sections, set())
    assert not missing, "\n".join(missing)
    assert "window" in sections["monitor"] and "tolerance" in sections["monitor-drift"]


def test_a_key_without_an_entry_fails(monkeypatch):
    page = (ROOT / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    without = page.replace("| `tolerance` |", "| tolerance |")
    assert _missing(MonitorConfig, "monitor", _sections(without), set()) == [
        "DriftSettings.tolerance has no entry (or no description) in section #monitor-drift"]
