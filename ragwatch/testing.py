"""A pytest check that fails when a metric regresses against a stored baseline, decided as the gate
decides a promotion: `ragwatch.decision.compare.compare_runs` (paired intervals on the metric's scale) and
`ragwatch.decision.gate.gate_decision` (allowed drops, judges below the agreement bar shown not gated),
and said in the report's words (`ragwatch.report.verdicts`).

The baseline is a JSON file of `MetricResult`s (per-item scores included, so the comparison is
paired). When it does not exist yet, the first call writes it and passes with a warning; commit it.
`update=True`, or `RAGWATCH_UPDATE_BASELINE=1` in the environment, rewrites it from `results`.

A regression fails the test. A metric the gate cannot decide either way on so few items (an
inconclusive difference under `inconclusive: min_n`) does not, unless `fail_on_hold=True`; its
reason is in the warning.

Example:
    >>> results = evaluate_records(records, metrics=["answer/context_support"])  # doctest: +SKIP
    >>> assert_no_regression(results, "tests/baselines/rag.json")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragwatch.config import SHIPPED_GATE
from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import GateDecision, gate_decision
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.summary import comparison_text
from ragwatch.report.verdicts import reason_lines
from ragwatch.results import MetricResult

UPDATE_ENV = "RAGWATCH_UPDATE_BASELINE"


class RegressionWarning(UserWarning):
    """The baseline was written, or the gate held (too few items to tell)."""


def save_baseline(results: Mapping[str, MetricResult], path: str | Path) -> Path:
    """Write `results` as the baseline (JSON, stable key order)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {name: result.model_dump(mode="json") for name, result in sorted(results.items())}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load_baseline(path: str | Path) -> dict[str, MetricResult]:
    """The `MetricResult`s of a baseline file written by `save_baseline`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {name: MetricResult.model_validate(value) for name, value in data.items()}
    except (ValueError, AttributeError) as exc:
        raise ValueError(f"{path}: not a ragwatch baseline ({exc}); delete it, or write one with "
                         f"save_baseline(results, path) or {UPDATE_ENV}=1") from None


def gate_thresholds(thresholds: GateThresholds | Mapping[str, Any] | None = None) -> GateThresholds:
    """The gate's thresholds: the shipped ones (as a config gets them), with `thresholds` on top."""
    if isinstance(thresholds, GateThresholds):
        return thresholds
    return GateThresholds.model_validate({**SHIPPED_GATE, **dict(thresholds or {})})


def assert_no_regression(
    results: Mapping[str, MetricResult],
    baseline_path: str | Path,
    *,
    thresholds: GateThresholds | Mapping[str, Any] | None = None,
    update: bool | None = None,
    fail_on_hold: bool = False,
) -> GateDecision:
    """Fail (AssertionError) when a gated metric of `results` regressed against the baseline at
    `baseline_path`; return the gate's decision otherwise. `thresholds`: `GateThresholds` or its keys
    (`default_allowed_drop`, `per_metric`, `gated_metrics`, `min_n`, ...) over the shipped gate."""
    path = Path(baseline_path)
    update = os.environ.get(UPDATE_ENV, "") not in ("", "0") if update is None else update
    gate = gate_thresholds(thresholds)
    if update or not path.exists():
        save_baseline(results, path)
        warnings.warn(f"ragwatch baseline {'rewritten' if update else 'written'}: {path} ({len(results)} "
                      "metrics); commit it: later runs are compared with it", RegressionWarning, stacklevel=2)
        return gate_decision(None, gate)
    comparison = compare_runs(dict(results), load_baseline(path), thresholds=gate, new_label="this run",
                              old_label=f"baseline {path.name}")
    decision = gate_decision(comparison, gate)
    if decision.status == "regressed" or (decision.status == "hold" and fail_on_hold):
        raise AssertionError(f"ragwatch: {decision.status} against {path}\n  - " + "\n  - ".join(reason_lines(decision))
                             + "\n\n" + comparison_text(comparison))
    if decision.status == "hold":
        warnings.warn("ragwatch: undecided against the baseline: " + "; ".join(reason_lines(decision)),
                      RegressionWarning, stacklevel=2)
    return decision
