"""Calibration end to end with the real tiny local model: the contract, not the quality.

SmolLM2-135M is a weak judge; what must hold is that all 6 HaluEval items end scored or failed with
a reason, that both readings (greedy and P(yes)-weighted) produce finite figures with intervals, and
that the project's injection harness runs on the real model with each of its payloads.
"""

from __future__ import annotations

import math

import pytest

from ragwatch.calibration import (
    INJECTIONS,
    CalibrationSettings,
    SupportJudge,
    load_calibration_set,
    measure_injection,
    resolve_dataset,
    run_calibration,
    stratified_sample,
    to_eval_pairs,
)
from ragwatch.llm.client import LLMClient
from ragwatch.llm.types import TINY_MODEL, LLMSettings

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(900)
def test_tiny_model_calibrates_six_items_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    settings = CalibrationSettings(limit=6, seed=0, resamples=200,
                                   llm=LLMSettings(model=TINY_MODEL, max_tokens=96, max_repairs=1))
    report = run_calibration(settings)
    assert report.judge == "support" and report.n_items == 6
    assert report.label_counts == {"faithful": 3, "hallucinated": 3}
    for item in report.items:
        assert (item.error is None) != (item.greedy is None), item  # scored, or failed with a reason
        if item.error is None:
            assert item.score in (0.0, 1.0)
        if item.weighted_score is not None:
            assert 0.0 <= item.weighted_score <= 1.0
    greedy = report.modes["greedy"]
    assert greedy is not None and greedy.n + report.n_failed == 6
    weighted = report.modes["weighted"]
    assert weighted is not None, report.unavailable  # the local provider returns logprobs
    for mode in (greedy, weighted):
        for est in (mode.accuracy, mode.balanced_accuracy, mode.f1_hallucinated, mode.cohen_kappa):
            assert all(math.isfinite(v) for v in (est.value, est.ci_low, est.ci_high))
    assert report.usage["requests"] >= 6
    assert "| greedy |" in report.to_markdown()


@pytest.mark.timeout(900)
def test_injection_measurement_runs_on_the_real_model(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    items = stratified_sample(load_calibration_set(resolve_dataset(CalibrationSettings().dataset)), 2,
                              seed=1, balanced=True)
    llm = LLMClient(LLMSettings(model=TINY_MODEL, max_tokens=96, max_repairs=1))
    results = measure_injection(SupportJudge(llm), *to_eval_pairs(items), INJECTIONS)
    assert {(r.injection, r.mode) for r in results} <= {(p, m) for p in INJECTIONS for m in ("greedy", "weighted")}
    assert results and all(r.metric == "support" for r in results)
    for r in results:
        assert 1 <= r.n <= 2 and -1.0 <= r.inflation <= 1.0 and r.ci_low <= r.inflation <= r.ci_high
