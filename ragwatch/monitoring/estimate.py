"""The bill of a monitor run before it runs: the judges' real plans on the sampled windows' real
answers, against a `DryClient` that sends nothing (cache hits free). The generator is not in it: a
logged answer is never generated.

Example:
    >>> print(format_estimate(estimate_monitor(config, windows)))  # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ragwatch.calibration.loaders import to_eval_pairs
from ragwatch.estimate.dry import DryClient
from ragwatch.estimate.table import Estimate, estimate_row
from ragwatch.evalset.logged import log_samples
from ragwatch.judges import build_judges, run_judges
from ragwatch.llm.history import read_history
from ragwatch.monitoring.anchor import anchor_config, anchored_metrics, load_anchor
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch.monitoring.windows import Windows
from ragwatch.rag.logged import LoggedRAG


class _NoEmbedder:
    """Similarity's embedder, never called for a count: similarity sends no LLM call."""

    identity = "estimate"
    dim = 8

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


def _anchor_rows(config: MonitorConfig, estimate: Estimate, windows: int) -> list[Any]:
    """The anchor re-judged with this run's judge: once (the LLM cache serves the other windows' runs), or
    once per window evaluated when the judge's LLM cache is off."""
    rows = []
    repeats = 1 if config.judges.llm.cache else windows
    for metric in anchored_metrics(config.judges, config.drift.anchor):
        _, unit, items = load_anchor(metric, config.drift.anchor)
        anchor = anchor_config(config.judges, metric)
        dry = DryClient(anchor.llm, role="judge", history=read_history())
        samples, answers = to_eval_pairs(items)
        for _ in range(repeats):
            run_judges(build_judges(anchor, dry, embedder=_NoEmbedder(), generator_llm=None), samples, answers)
        rows += [estimate_row(count, anchor.llm) for count in dry.stages.values()]
        estimate.notes.append(f"anchor: {len(items)} labelled {unit} re-judged by the {metric} judge "
                              + ("(once: the LLM cache serves an unchanged judge)" if repeats == 1 else
                                 f"(once per window evaluated, {repeats}: the judge's LLM cache is off)"))
    return rows


def estimate_monitor(config: MonitorConfig, windows: Windows) -> Estimate:
    """Calls, tokens, dollars and wall time of judging the sampled windows (each window once)."""
    started = time.perf_counter()
    estimate = Estimate(pipeline="monitor")
    seen: set[str] = set()
    samples = []
    for window in (windows.current, windows.previous, windows.reference):
        fresh = [r for r in window.records if r.trace_id not in seen]
        seen.update(r.trace_id for r in fresh)
        samples += log_samples(fresh)
        estimate.notes.append(window.describe())
    estimate.notes.append("generator: 0 calls (the answers are logged; nothing is generated)")
    if not config.judges.enabled or not samples:
        estimate.notes.append("no judge enabled: the system-as-run metrics need no LLM call")
    else:
        dry = DryClient(config.judges.llm, role="judge", history=read_history())
        judges = [j for j in build_judges(config.judges, dry, embedder=_NoEmbedder(), generator_llm=None)
                  if getattr(j, "llm", None) is dry]
        if judges:
            run_judges(judges, samples, LoggedRAG().answer_samples(samples))
        estimate.rows += [estimate_row(count, config.judges.llm) for count in dry.stages.values()]
        distinct = {(w.start, w.end) for w in (windows.current, windows.previous, windows.reference) if w.records}
        estimate.rows += _anchor_rows(config, estimate, len(distinct))
    estimate.seconds = time.perf_counter() - started
    return estimate
