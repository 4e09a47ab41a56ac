"""The resolved configuration of a run, each value with where it came from (`python run.py config show`).

A value is either set by a YAML file (the config given, or a file it pulls in through `include:`;
the last file to set it wins, as in the merge), or it is the code default (`ragwatch/config.py` and
the blocks it includes), or it was derived while validating (`retrieval_only: true` turns the LLM
steps off). Judges' option blocks are shown for every enabled judge, defaults included.

Example:
    >>> print(show_config("configs/full.yaml", "evaluate"))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragwatch.config import FullConfig
from ragwatch.config_loader import read_yaml, validate_config
from ragwatch.judges import registry
from ragwatch.judges.config import JudgesConfig

PIPELINE_SECTIONS = {
    "ingest": ("ingest",),
    "testset": ("testset",),
    "evaluate": ("evaluate",),
    "full": ("ingest", "testset", "evaluate"),
}
DEFAULT = "default"
DERIVED = "derived while validating (e.g. retrieval_only)"


def resolved_values(config_path: str | Path) -> tuple[FullConfig, list[tuple[str, Any, str]]]:
    """The validated config and `(dotted key, value, origin)` for every leaf value, in model order.

    Origin is the file that set the value, `default`, or `derived ...` when validation changed it.
    """
    path = Path(config_path).expanduser().resolve()
    sources: dict[str, str] = {}
    data = read_yaml(path, path_keys=FullConfig.PATH_KEYS, sources=sources)
    config = validate_config(data, FullConfig, source=str(path))
    defaults = dict(_leaves(FullConfig()))
    rows = []
    for key, value in _leaves(config):
        origin = _origin(key, sources)
        if origin is None:
            origin = DEFAULT if key not in defaults or _same(defaults[key], value) else DERIVED
        rows.append((key, value, origin))
    return config, rows


def show_config(config_path: str | Path, pipeline: str = "full") -> str:
    """The resolved config of `pipeline` as aligned lines `key  value  origin`."""
    if pipeline not in PIPELINE_SECTIONS:
        raise ValueError(f"unknown pipeline {pipeline!r}; choose one of {', '.join(PIPELINE_SECTIONS)}")
    path = Path(config_path).expanduser().resolve()
    _, rows = resolved_values(path)
    sections = PIPELINE_SECTIONS[pipeline]
    rows = [r for r in rows if "." not in r[0] or r[0].split(".", 1)[0] in sections]
    cwd = Path.cwd()
    shown = [(key, _render(value), _short(origin, cwd)) for key, value, origin in rows]
    key_width = max(len(k) for k, _, _ in shown)
    value_width = min(max(len(v) for _, v, _ in shown), 48)
    files = sorted({o for _, _, o in shown if o not in (DEFAULT, DERIVED)})
    lines = [
        f"# the configuration `{pipeline}` runs with, from {_short(str(path), cwd)}",
        f"# origin: a file that set the value (last one wins), or '{DEFAULT}' (ragwatch/config.py and the"
        " blocks it includes; every key: docs/reference/config.md)",
        f"# files: {', '.join(files) if files else 'none sets a value'}",
    ]
    for key, value, origin in shown:
        lines.append(f"{key.ljust(key_width)}  {value.ljust(value_width)}  # {origin}")
    return "\n".join(lines)


def _leaves(model: BaseModel, prefix: str = "") -> list[tuple[str, Any]]:
    """Dotted key -> value of every field that is not itself a model (lists of models are walked)."""
    out: list[tuple[str, Any]] = []
    fields: dict[str, Any] = {name: getattr(model, name) for name in type(model).model_fields}
    if isinstance(model, JudgesConfig):  # options of every enabled built-in judge and of every block given
        given = list((model.__pydantic_extra__ or {}).keys())
        known = registry.names()
        for name in [n for n in model.enabled if n in known] + given:
            fields.setdefault(name, model.options(name))
    for name, value in fields.items():
        key = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            out += _leaves(value, key + ".")
        elif isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            for i, item in enumerate(value):
                out += _leaves(item, f"{key}[{i}].")
        else:
            out.append((key, value))
    return out


def _origin(key: str, sources: dict[str, str]) -> str | None:
    """The file that set `key` or the nearest enclosing key (a list item belongs to its list); for a
    mapping-valued leaf (`gate.per_metric`), the files that set its keys."""
    parts = re.sub(r"\[\d+\]", "", key).split(".")
    for end in range(len(parts), 0, -1):
        origin = sources.get(".".join(parts[:end]))
        if origin is not None:
            return origin
    below = sorted({origin for k, origin in sources.items() if k.startswith(".".join(parts) + ".")})
    return " + ".join(below) if below else None


def _same(a: Any, b: Any) -> bool:
    return _render(a) == _render(b)


def _render(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def _short(origin: str, cwd: Path) -> str:
    """A file under the current directory as a relative path; everything else as it is."""
    try:
        return str(Path(origin).relative_to(cwd))
    except ValueError:
        return origin
