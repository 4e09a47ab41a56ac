"""YAML configuration files validated by pydantic models.

A file may start with `include: [other.yaml, ...]` (paths relative to it): the included files are
merged first, then the file's own keys override them, recursively for mappings. Unknown keys are
errors that name the key and the file.

Example:
    >>> from ragwatch.config import EvaluateConfig
    >>> config = load_config("configs/evaluate.yaml", EvaluateConfig)  # doctest: +SKIP
"""

from __future__ import annotations

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


def read_yaml(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a YAML mapping, resolving `include:` lists."""
    path = Path(path).resolve()
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
    merged: dict[str, Any] = {}
    for include in includes:
        merged = deep_merge(merged, read_yaml(path.parent / include, (*_seen, path)))
    return deep_merge(merged, data)


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


def describe_validation_error(exc: ValidationError, source: str) -> str:
    """One line per problem, naming the dotted key: `evaluate.judges.foo: unknown key`."""
    lines = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"]) or "(top level)"
        if error["type"] == "extra_forbidden":
            lines.append(f"{key}: unknown key (check the spelling; see the defaults in ragwatch/config.py)")
        else:
            lines.append(f"{key}: {error['msg']}")
    return f"{source}: invalid configuration\n  " + "\n  ".join(lines)


def validate_config(data: dict[str, Any], model: type[ConfigT], source: str = "config") -> ConfigT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source)) from None


def load_config(path: str | Path, model: type[ConfigT], overrides: dict[str, Any] | None = None) -> ConfigT:
    """Read, merge includes and overrides, and validate a YAML config file."""
    data = read_yaml(path)
    if overrides:
        data = deep_merge(data, overrides)
    return validate_config(data, model, source=str(path))
