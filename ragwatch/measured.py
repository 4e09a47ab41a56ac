"""Which metrics a configuration measures: the one answer to "does this config measure metric X?".

Every metric comes from a source the config turns on or off:
- a judge listed in `evaluate.judges.enabled` (built-in or `custom`): its name, the names that start
  with it (a rubric's criteria: `rubric_helpfulness`), and `answer_confidence` beside `perplexity`;
- the keyword tests (`e2e_failure_rate`, `e2e_failure_rate/<table>`): on with `evaluate.e2e.enabled`
  and `evaluate.e2e.tables`, off for a log (`system.rag.kind: logged`);
- the system as it ran (`system/*`, `answer/*`): off with `retrieval_only`, which answers nothing;
- retrieval over the index (`<mode>/<measure>`, every mode and k of `evaluate.retrieval`): always on.

The gate (`ragwatch.decision.gate`) warns once about a gated metric this config does not measure, naming
the setting to change, and decides on what was measured; `ragwatch.preflight` refuses, before the run, a
gated metric that the user's own config file lists and this config never measures (or that no source makes:
a typo). What a given system cannot have (perplexity without token logprobs) is known only when it runs:
`MetricGroup.unavailable`.

Example:
    >>> not_measured("faithfulness", config.evaluate)  # doctest: +SKIP
    'the faithfulness judge is not enabled (evaluate.judges.enabled: []): add faithfulness to it'
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from ragwatch.checks.e2e import METRIC_PREFIX as E2E
from ragwatch.checks.system_metrics import SYSTEM_METRICS
from ragwatch.config import EvaluateConfig
from ragwatch.decision.thresholds import matches
from ragwatch.judges import registry
from ragwatch.retrieval.evaluate import retrieval_infos

# metrics a judge reports beside the one named after it (PerplexityJudge.metrics)
_ALSO = {"perplexity": ("answer_confidence",)}


@dataclass(frozen=True)
class Source:
    """What makes some metrics: their names (`family`: also every name that starts with one of them and
    "/" or "_"), whether this config runs it, and, when it does not, why and the setting to change."""

    names: tuple[str, ...]
    on: bool
    off: str = ""
    family: bool = False

    def makes(self, pattern: str) -> bool:
        """A metric this source makes matches `pattern` (exact, prefix or glob, as the gate matches)."""
        return any(matches(n, pattern) or (self.family and pattern.startswith((f"{n}/", f"{n}_")))
                   for n in self.names)


def sources(config: EvaluateConfig, *, retrieval_only: bool = False) -> list[Source]:
    """Every source of metrics, on or off under `config` (`retrieval_only`: the top-level key, which
    turns the judges and keyword tests off while validating)."""
    only = " (retrieval_only: true turns it off)" if retrieval_only else ""
    enabled = config.judges.enabled
    judges = [*registry.names(), *(c.name for c in config.judges.custom)]
    out = [Source((name, *_ALSO.get(name, ())), on=name in enabled, family=True,
                  off=f"the {name} judge is not enabled (evaluate.judges.enabled: {list(enabled)}): add {name} "
                      f"to it{only}")
           for name in judges]
    e2e = config.e2e
    if config.system.rag.kind == "logged":
        e2e_off = "a log cannot be asked the keyword tests' questions (evaluate.system.rag.kind: logged)"
    elif not e2e.enabled:
        e2e_off = f"the keyword tests are off (evaluate.e2e.enabled: false){only}: set it to true"
    else:
        e2e_off = "no keyword-test tables (evaluate.e2e.tables is not set): name a tables file"
    out.append(Source((E2E,), on=e2e.enabled and bool(e2e.tables) and config.system.rag.kind != "logged",
                      off=e2e_off, family=True))
    out.append(Source(SYSTEM_METRICS, on=not retrieval_only,
                      off="retrieval_only: true asks the system nothing: set it to false"))
    infos = retrieval_infos(config.retrieval.ks)
    out.append(Source(tuple(f"{mode}/{name}" for mode in config.retrieval.modes for name in infos), on=True))
    return out


def not_measured(pattern: str, config: EvaluateConfig, *, retrieval_only: bool = False) -> str | None:
    """Why this config measures no metric that `pattern` names, with the setting to change; None when a
    source it runs makes one, or when no source makes any (`unknown`)."""
    found = [s for s in sources(config, retrieval_only=retrieval_only) if s.makes(pattern)]
    if not found or any(s.on for s in found):
        return None
    return "; ".join(dict.fromkeys(s.off for s in found))


def unknown(pattern: str, config: EvaluateConfig) -> str | None:
    """When no source makes a metric `pattern` names (a typo): what it may have meant; else None."""
    every = sources(config)
    if any(s.makes(pattern) for s in every):
        return None
    names = [n for s in every for n in s.names]
    close = difflib.get_close_matches(pattern, names, n=3)
    return f"did you mean {', '.join(close)}?" if close else f"known metrics include {', '.join(names[:12])}, ..."


def unmeasured_gated(config: EvaluateConfig, *, retrieval_only: bool = False,
                     unavailable: Mapping[str, str] | None = None) -> dict[str, str]:
    """Gated pattern -> why this run does not measure it (the setting to change), for the gate's warning;
    `unavailable` (a run's `MetricGroup.unavailable`): what its system could not have, and why."""
    out = {}
    for pattern in config.gate.gated_metrics or []:
        why = next((w for n, w in (unavailable or {}).items() if matches(n, pattern)), None)
        if (why := why or not_measured(pattern, config, retrieval_only=retrieval_only)) is not None:
            out[pattern] = why
        elif (hint := unknown(pattern, config)) is not None:
            out[pattern] = f"it names no metric ragwatch makes ({hint})"
    return out


def unmeasured_of(names: list[str], config: EvaluateConfig) -> dict[str, str]:
    """Metric name -> why this config does not measure it, for the names (of another run) it does not."""
    return {name: f"not measured by this config: {why}" for name in names
            if (why := not_measured(name, config)) is not None}
