"""YAML configuration files validated by pydantic models.

A file may start with `include: [other.yaml, ...]` (paths relative to it): the included files are
merged first, then the file's own keys override them, recursively for mappings. Unknown keys are
errors that name the key, the file, the nearest known key of its block ("did you mean 'top_k'?") and the
page of every key (`docs/reference/config.md`). `read_yaml(..., sources={})` also records which file set
each key (its provenance: `python run.py config show`). Relative paths under the model's `PATH_KEYS`
(dotted keys; lists are walked) resolve against the directory of the file that sets them, before merging.

Example:
    >>> from ragwatch.config import EvaluateConfig
    >>> config = load_config("configs/evaluate.yaml", EvaluateConfig)  # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

ConfigT = TypeVar("ConfigT", bound=BaseModel)


class ConfigError(ValueError):
    """A configuration file is missing, malformed or has a wrong key or value."""


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` on top of `base`; nested mappings merge, everything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_paths(data: dict[str, Any], keys: Sequence[str], base: Path) -> dict[str, Any]:
    """Make the relative paths at dotted `keys` absolute against `base`, in place (lists are walked:
    `testset.imports.path` is the `path` of every import); `~` expands to the home directory."""
    for key in keys:
        _resolve(data, key.split("."), base)
    return data


def _absolute(value: Any, base: Path) -> Any:
    if not isinstance(value, str) or not value.strip():
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _resolve(node: Any, parts: list[str], base: Path) -> None:
    if isinstance(node, list):
        for item in node:
            _resolve(item, parts, base)
        return
    if not isinstance(node, dict) or parts[0] not in node:
        return
    if len(parts) > 1:
        _resolve(node[parts[0]], parts[1:], base)
    elif isinstance(node[parts[0]], list):
        node[parts[0]] = [_absolute(v, base) for v in node[parts[0]]]
    else:
        node[parts[0]] = _absolute(node[parts[0]], base)


def read_yaml(
    path: str | Path, _seen: tuple[Path, ...] = (), *, path_keys: Sequence[str] = (),
    sources: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Read a YAML mapping, resolving `include:` lists and the relative paths at `path_keys`.

    With `sources`, it is filled with the dotted key of every value set -> the file that set it last
    (a list or a scalar is one value; a mapping merges key by key, as `deep_merge` does).
    """
    path = Path(path).expanduser().resolve()
    if path in _seen:
        raise ConfigError(f"{path}: include cycle through {' -> '.join(str(p) for p in _seen)}")
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    _check_keys(data, path)
    includes = data.pop("include", []) or []
    if isinstance(includes, str):
        includes = [includes]
    resolve_paths(data, path_keys, path.parent)
    merged: dict[str, Any] = {}
    for include in includes:
        merged = deep_merge(merged, read_yaml(path.parent / include, (*_seen, path), path_keys=path_keys,
                                              sources=sources))
    if sources is not None:  # after the includes: the file's own keys override theirs, as in the merge
        record_sources(data, str(path), sources)
    return deep_merge(merged, data)


def record_sources(data: dict[str, Any], source: str, sources: dict[str, str], prefix: str = "") -> None:
    """Note `source` as the origin of every value in `data`, replacing what it overrides."""
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            if value:
                sources.pop(dotted, None)  # a mapping over a scalar replaces it; over a mapping it merges
                record_sources(value, source, sources, dotted)
            elif not any(k == dotted or k.startswith(dotted + ".") for k in sources):
                sources[dotted] = source  # an empty mapping merges nothing into an existing one
            continue
        for below in [k for k in sources if k.startswith(dotted + ".")]:
            del sources[below]  # a scalar or a list replaces the whole subtree
        sources[dotted] = source


def _check_keys(data: Any, path: Path, where: str = "") -> None:
    """YAML 1.1 reads unquoted on/off/yes/no as booleans, also as keys: say so instead of failing later."""
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                hint = ' (YAML reads on/off/yes/no as booleans: quote the key, e.g. "on": auto)' if isinstance(
                    key, bool) else ""
                raise ConfigError(f"{path}: key {key!r} under '{where or '(top level)'}' is not a string{hint}")
            _check_keys(value, path, f"{where}.{key}" if where else key)
    elif isinstance(data, list):
        for item in data:
            _check_keys(item, path, where)


REFERENCE_PAGE = "docs/reference/config.md"


def describe_validation_error(exc: ValidationError, source: str, model: type[BaseModel] | None = None) -> str:
    """One line per problem, naming the dotted key: `evaluate.system.rag.topk: unknown key; did you mean
    'top_k'?`. With `model`, an unknown key is matched against the keys its block knows."""
    lines = _problems(exc, model, ())
    if any(" unknown key" in line for line in lines):
        lines.append(f"every key, its type and default: {REFERENCE_PAGE}")
    return f"{source}: invalid configuration\n  " + "\n  ".join(lines)


def _problems(exc: ValidationError, model: type[BaseModel] | None, at: tuple[int | str, ...]) -> list[str]:
    lines = []
    for error in exc.errors():
        loc = (*at, *error["loc"])
        key = ".".join(str(part) for part in loc) or "(top level)"
        inner = getattr((error.get("ctx") or {}).get("error"), "__cause__", None)
        block = re.match(r"(?:Value error, )?judges\.(\w+): ", error["msg"])
        if error["type"] == "extra_forbidden":
            known = _known_keys(model, error["loc"][:-1]) if model is not None else []
            lines.append(f"{key}: unknown key{_suggestion(str(loc[-1]), known)}")
        elif (unknown := re.match(r"(?:Value error, )?unknown key '([^']+)'", error["msg"])) is not None:
            # a block that takes extra keys says which it knows (judges: its fields and the judges' names)
            known = [name for name in re.findall(r"'(\w+)'", error["msg"]) if name != unknown.group(1)]
            lines.append(f"{key}: {error['msg']}{_suggestion(unknown.group(1), known, listed=True)}")
        elif isinstance(inner, ValidationError) and block is not None:
            # a judge's options block, validated by its own model: its problems, each at its own key
            lines += _problems(inner, _judge_options(block.group(1)), (*loc, block.group(1)))
        else:
            lines.append(f"{key}: {error['msg']}")
    return lines


def _judge_options(name: str) -> type[BaseModel] | None:
    """The options model of judge `name`: the one block whose model is chosen by its key."""
    from ragwatch.judges import registry

    return registry.spec(name).options if name in registry.names() else None


def _suggestion(wrong: str, known: Sequence[str], *, listed: bool = False) -> str:
    """"; did you mean 'top_k'?" for the nearest known key, else the keys this block knows (unless the
    message lists them)."""
    close = difflib.get_close_matches(wrong, known, n=1, cutoff=0.6) or difflib.get_close_matches(
        wrong.lower().replace("-", "_"), known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; the keys here: {', '.join(known)}" if known and not listed else ""


def _known_keys(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys of the block at `loc` in `model` (list indices and optional blocks are walked through)."""
    block: type[BaseModel] | None = model
    for part in loc:
        if block is None:
            return []
        if isinstance(part, int):
            continue
        field = block.model_fields.get(part)
        block = _block_in(field.annotation) if field is not None else None
    return list(block.model_fields) if block is not None else []


def _block_in(annotation: Any) -> type[BaseModel] | None:
    """The config block a field holds (directly, optionally or as a list), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _block_in(arg)) is not None:
            return found
    return None


def validate_config(data: dict[str, Any], model: type[ConfigT], source: str = "config") -> ConfigT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source, model)) from None


def load_config(
    path: str | Path,
    model: type[ConfigT],
    overrides: dict[str, Any] | None = None,
    *,
    path_keys: Sequence[str] | None = None,
) -> ConfigT:
    """Read, merge includes and overrides, and validate a YAML config file.

    Relative paths at `path_keys` (default: the model's `PATH_KEYS`) resolve against the directory
    of the file that sets them; `overrides` are taken as they are.
    """
    keys = path_keys if path_keys is not None else getattr(model, "PATH_KEYS", ())
    data = read_yaml(path, path_keys=keys)
    if overrides:
        data = deep_merge(data, overrides)
    return validate_config(data, model, source=str(path))
