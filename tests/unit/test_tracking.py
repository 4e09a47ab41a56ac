"""`ragwatch.tracking`: one evaluation merged, compared with the previous run and production, gated and said
as metadata, without ZenML (the step only reads the baselines and writes what this returns)."""

from __future__ import annotations

import numpy as np

from ragwatch.artifacts import AnswerSet, EvalSet, MetricGroup
from ragwatch.checks.system_metrics import NOTHING_ANSWERED, SYSTEM_METRICS
from ragwatch.config import EvaluateConfig
from ragwatch.results import ItemScore, MetricResult
from ragwatch.tracking import Baseline, track, tracking_metadata

BASE = np.random.default_rng(0).uniform(0.4, 1.0, 80)
NOISE = np.random.default_rng(1).normal(0, 0.02, 80)
EMPTY = MetricGroup(group="e", metrics={})
EVAL_SET = EvalSet(samples=[])


def judged(scores) -> MetricGroup:
    items = [ItemScore(item_id=f"q{i}", score=float(s)) for i, s in enumerate(scores)]
    return MetricGroup(group="judges", metrics={"faithfulness": MetricResult.from_items("faithfulness", items)})


def config(**evaluate) -> EvaluateConfig:
    return EvaluateConfig.model_validate({"gate": {"default_allowed_drop": 0.05, "gated_metrics": ["faithfulness"]},
                                         **evaluate})


def run(new, *, previous=None, production=None, cfg=None):
    return track(EMPTY, EMPTY, judged(new), EVAL_SET, AnswerSet(answers=[]), cfg or config(), run="run-3",
                 previous=previous, production=production)


def test_a_clear_regression_against_production_blocks_and_is_compared_twice() -> None:
    production = Baseline("run-1", judged(BASE), version="7", eval_set_fingerprint=EVAL_SET.fingerprint)
    tracked = run(BASE - 0.2 + NOISE, previous=Baseline("run-2", judged(BASE + NOISE)), production=production)
    c = tracked.comparisons
    assert (c.previous_run, c.production_run, c.production_version) == ("run-2", "run-1", "7")
    assert c.same_eval_set_as_production is True and c.gate is tracked.decision
    assert c.production.row("faithfulness").verdict == "regressed"
    assert tracked.decision.status == "regressed" and not tracked.decision.promote and not tracked.promote
    # nothing answered: the system metrics are unavailable with the reason, not empty rows
    assert tracked.system == {} and all(tracked.metrics.unavailable[m] == NOTHING_ANSWERED for m in SYSTEM_METRICS)
    meta = tracking_metadata(tracked, {"retrieval": EMPTY, "e2e": EMPTY, "judges": judged(BASE)}, EVAL_SET,
                             AnswerSet(answers=[]), config(), system_fingerprint="fp", promoted=False)
    assert meta["gate"]["status"] == "regressed" and meta["gate"]["production_version"] == "7"
    gated = meta["gated_metrics"]["faithfulness"]
    assert gated["vs_production"]["verdict"] == "regressed" and "vs_previous" in gated
    assert meta["system"] == {"fingerprint": "fp", "model_name": config().system.model_name,
                              "target": config().system.rag.target}


def test_first_run_is_promoted_unless_promotion_is_off() -> None:
    first = run(BASE)
    assert first.comparisons.previous is None and first.comparisons.production is None
    assert first.decision.status == "no_baseline" and first.promote
    off = run(BASE, cfg=config(promote=False))
    assert not off.promote and not off.decision.promote


def test_a_quick_run_decides_nothing_and_another_eval_set_is_said() -> None:
    production = Baseline("run-1", judged(BASE), version="7", eval_set_fingerprint=EVAL_SET.fingerprint)
    quick = run(BASE + 0.1, production=production, cfg=config(quick=True))
    assert quick.decision.status == "not_applied" and not quick.promote
    other = run(BASE, production=Baseline("run-1", judged(BASE), version="7", eval_set_fingerprint="another"))
    assert other.comparisons.same_eval_set_as_production is False
    assert [r.kind for r in other.decision.reasons][-1] == "other_eval_set"  # compared on the shared questions
