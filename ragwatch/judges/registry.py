"""Judges register by name: the name, its options model (the YAML block) and how to build it.

A judge file declares itself with `@register_judge`; the built-in judge files of this package (and
judge packages such as `faithfulness/`, whose `__init__` imports the registering module) are imported by
`load_builtin()`, so a new judge is one new file (plus its test) and nothing else.

Example (a complete registration; `JudgeDeps` carries the judge LLM, its model and the other shared clients):
    >>> class ShoutOptions(JudgeOptions):
    ...     threshold: float | None = 0.5
    >>> @register_judge("shout", options=ShoutOptions)  # doctest: +SKIP
    ... def build(options: ShoutOptions, deps: JudgeDeps) -> ShoutJudge:
    ...     return ShoutJudge(deps.llm, model=deps.model, threshold=options.threshold)
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict


class JudgeOptions(BaseModel):
    """Base of every judge's options block; an unknown key is an error naming it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


@dataclass
class JudgeDeps:
    """What a judge may be built with: the judge LLM and its model, logprob use, the embedder, the generator
    and its model. The models are the configured strings (`JudgesConfig.llm.model`, the generator's
    `LLMSettings.model`), carried here so that no judge reads them back off a client."""

    llm: Any = None
    model: str | None = None  # the judge LLM's model string, `local/<name>` for a packaged one
    use_logprobs: bool = False
    embedder: Any = None
    generator_llm: Any = None
    generator_model: str | None = None  # the generator's model string (perplexity)
    system_fingerprint: str | None = None  # the system under test's (`RagSystem.fingerprint()`), when known


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    options: type[JudgeOptions]
    build: Callable[[Any, JudgeDeps], Any]
    default: bool  # in the default `enabled` list
    module: str


_REGISTRY: dict[str, JudgeSpec] = {}
_LOADED = False


def register_judge(
    name: str, *, options: type[JudgeOptions] = JudgeOptions, default: bool = False
) -> Callable[[Callable[[Any, JudgeDeps], Any]], Callable[[Any, JudgeDeps], Any]]:
    """Register `build(options, deps) -> judge` under `name` (the YAML key and the `enabled` entry)."""

    def decorate(build: Callable[[Any, JudgeDeps], Any]) -> Callable[[Any, JudgeDeps], Any]:
        known = _REGISTRY.get(name)
        if known is not None and known.module != build.__module__:
            raise ValueError(f"judge name {name!r} is registered twice ({known.module}, {build.__module__})")
        _REGISTRY[name] = JudgeSpec(name, options, build, default, build.__module__)
        return build

    return decorate


def load_builtin() -> None:
    """Import every judge file and judge package of this package once, so each registers itself."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    package = importlib.import_module("ragwatch.judges")
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"ragwatch.judges.{info.name}")


def spec(name: str) -> JudgeSpec:
    load_builtin()
    if name not in _REGISTRY:
        raise KeyError(f"no judge named {name!r}; registered: {names()}")
    return _REGISTRY[name]


def names() -> list[str]:
    load_builtin()
    return sorted(_REGISTRY)


def default_names() -> list[str]:
    load_builtin()
    return [name for name, s in _REGISTRY.items() if s.default]
