"""The gate with a judge below the agreement bar: needs labels (how many, the command), and the decision
on the prediction-powered paired difference once this run has labels (no LLM, no ZenML)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import GateDecision, gate_decision
from ragwatch.decision.labels_plan import labels_plans
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.summary import gate_label
from ragwatch.report.verdicts import reason_lines
from ragwatch.results import ItemScore, JudgeAgreement, MetricInfo, MetricResult
from ragwatch.review.labelled import attach_labelled
from ragwatch.review.labels import HumanLabel, HumanLabels
from ragwatch.review.spread import expected_label

N = 65
RUN = "evaluate-2026_11_26-03_00_00"
AGREEMENT = JudgeAgreement(kappa=0.48, kappa_ci=(0.3, 0.66), balanced_accuracy=0.73, balanced_accuracy_ci=(0.6, 0.8),
                           n=72, data="statements of RAG answers", labels="reference labels")
INFO = MetricInfo(family="judge", judge_model="local/j", prompt_version="v5", binary=False, scale=(0.0, 1.0),
                  agreement=AGREEMENT)
TH = GateThresholds(default_allowed_drop=0.05, min_judge_kappa=0.6, gated_metrics=["faithfulness"])


def faith(probs: list[list[float]], keys: list[str]) -> MetricResult:
    """Faithfulness items: the verdict share of statements with P(supported), as the verifier writes them."""
    items = []
    for i, (ps, key) in enumerate(zip(probs, keys, strict=True)):
        verdicts = [{"statement": f"s{j}", "verdict": p >= 0.5, "p_supported": p} for j, p in enumerate(ps)]
        items.append(ItemScore(item_id=f"q{i}", score=float(np.mean([p >= 0.5 for p in ps])),
                               details={"verdicts": verdicts, "judged_key": key}))
    return MetricResult.from_items("faithfulness", items, info=INFO)


def production() -> tuple[list[list[float]], MetricResult]:
    rng = np.random.default_rng(0)
    probs = [list(rng.uniform(0.3, 0.97, 3)) for _ in range(N)]
    return probs, faith(probs, [f"old{i}" for i in range(N)])


def decide(new: MetricResult, old: MetricResult, th: GateThresholds = TH) -> GateDecision:
    comparison = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=th, old_label="production")
    plans = labels_plans(comparison, {"faithfulness": new}, {"faithfulness": old}, run=RUN, thresholds=th)
    return gate_decision(comparison, th, plans=plans)


def planted(probs: list[list[float]], changed: int, p_planted: float) -> MetricResult:
    """The first `changed` answers get a planted statement in place of their first, scored `p_planted`."""
    new = [[p_planted, *ps[1:]] if i < changed else ps for i, ps in enumerate(probs)]
    return faith(new, [f"new{i}" if i < changed else f"old{i}" for i in range(N)])


def test_identical_replay_is_promoted():
    probs, old = production()
    decision = decide(faith(probs, [f"old{i}" for i in range(N)]), old)
    assert decision.promote and decision.status == "promote"


def test_a_drop_the_weak_judge_sees_but_cannot_size_needs_labels_with_how_many_and_the_command():
    probs, old = production()
    # 48 answers changed; the judge catches the planted statement in a third of them: a drop of about
    # 15 * 1/3 / 65 = 0.077 whose interval lies below 0 but reaches inside the allowed drop of 0.05
    new = planted(probs, 48, 0.45)
    new.items[:] = [it if i % 3 == 0 and i < 45 else it.model_copy(update={"score": old.items[i].score})
                    for i, it in enumerate(new.items)]
    new = MetricResult.from_items("faithfulness", new.items, info=INFO)
    decision = decide(new, old)
    assert decision.status == "needs_labels" and decision.promote is False
    (reason,) = reason_lines(decision)[:1]
    assert reason.startswith("faithfulness needs labels: its judge sees a drop")
    assert "kappa 0.48 on 72 statements of RAG answers" in reason and "min_judge_kappa 0.60" in reason
    k = int(re.search(r"label (\d+) of this run's answers \(", reason).group(1))
    assert 2 <= k <= N
    assert f"python run.py review serve --run {RUN} --metric faithfulness --n {k}" in reason
    assert "48 of 65 answers changed" in reason
    assert gate_label(decision) == "NOT PROMOTED (needs labels: the judge sees a drop it cannot decide)"
    with pytest.raises(ValueError, match="contradicts"):
        GateDecision(promote=True, status="needs_labels")


def test_a_clear_regression_blocks_on_the_judges_own_paired_difference_unless_the_rule_asks_for_labels():
    probs, old = production()
    fabricated = planted(probs, 53, 0.1)  # every planted statement below the cut: about -0.27
    decision = decide(fabricated, old)
    assert decision.status == "regressed" and not decision.promote
    assert "gate.weak_judge: paired" in reason_lines(decision)[0] and "kappa 0.48" in reason_lines(decision)[0]
    strict = decide(fabricated, old, TH.model_copy(update={"weak_judge": "labels"}))
    assert strict.status == "needs_labels" and not strict.promote


def label(item_id: str, value: float, prob: float, key: str) -> HumanLabel:
    return HumanLabel(item_id=item_id, metric="faithfulness", value=value, inclusion_prob=prob, judged_key=key)


def with_labels(new: MetricResult, labels: list[HumanLabel]) -> MetricResult:
    labelled, _ = attach_labelled({"faithfulness": new}, HumanLabels().merge(labels, source="serve"))
    return labelled["faithfulness"]


def test_once_this_run_has_labels_the_paired_prediction_powered_difference_decides():
    probs, old = production()
    # the weak judge misses the planted errors: it scores the changed answers as before (keys differ)
    missed = faith(probs, [f"new{i}" if i < 48 else f"old{i}" for i in range(N)])
    assert decide(missed, old).status == "promote"  # nothing the judge can see
    # readers find a third of each changed answer unsupported; 30 labels on changed answers
    expected = [expected_label(it) for it in old.items]  # the calibrated mean P(supported) of each answer
    readers = [label(f"q{i}", expected[i] - 1 / 3, 30 / 48, f"new{i}") for i in range(30)]
    decision = decide(with_labels(missed, readers), old)
    assert decision.status == "regressed" and not decision.promote
    assert reason_lines(decision)[0].startswith("faithfulness regressed on human labels")
    assert "from 30 human labels on the 48 of 65 answers that changed" in reason_lines(decision)[0]
    # readers find what the judge's calibrated probabilities expect: the labels clear it
    agree = [label(f"q{i}", expected[i], 30 / 48, f"new{i}") for i in range(30)]
    cleared = decide(with_labels(missed, agree), old)
    assert cleared.promote and any(r.startswith("faithfulness cleared by human labels") for r in reason_lines(cleared))


def test_labels_of_unchanged_answers_do_not_count_toward_the_paired_difference():
    probs, old = production()
    new = planted(probs, 20, 0.45)
    unchanged_only = [label(f"q{i}", 1.0, 0.5, f"old{i}") for i in range(30, 40)]
    decision = decide(with_labels(new, unchanged_only), old)
    assert decision.status == "needs_labels"
    assert "fewer than 2 of this run's labels are on the 20 answers that changed" in reason_lines(decision)[0]


def test_the_paired_difference_is_unbiased_under_active_labelling():
    """Over active draws of 20 labels, the estimate's mean is the readers' new labels against production's
    calibrated expectation on the changed answers (scaled to all), and its interval covers that."""
    from ragwatch.decision.labels_plan import paired_difference
    from ragwatch.results import LabelledEstimate
    from ragwatch.review.spread import spreads_of
    from ragwatch.statistics.active import active_probabilities, draw_pps

    rng = np.random.default_rng(11)
    probs, old = production()
    new = planted(probs, 40, 0.5)  # the judge is unsure of the planted statement ...
    truth_p = [expected_label(it) - (0.25 if i < 40 else 0.0) for i, it in enumerate(new.items)]
    h_new = (rng.uniform(size=N) < np.clip(truth_p, 0, 1)).astype(float)  # ... readers find more wrong
    e_old = np.array([expected_label(it) for it in old.items])
    changed = [f"q{i}" for i in range(40)]
    truth = float((h_new[:40] - e_old[:40]).sum() / N)
    spread = np.array([s for s, _ in spreads_of(new).values()])
    pi = active_probabilities(spread, 20)
    f_new = {it.item_id: float(it.score) for it in new.items}
    f_old = {it.item_id: float(it.score) for it in old.items}
    row = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=TH).row("faithfulness")
    estimates, covered = [], 0
    for _ in range(400):
        chosen = draw_pps(pi, rng)
        labels = {f"q{i}": [float(h_new[i]), float(pi[i])] for i in chosen}
        est = LabelledEstimate(method="ppi++", score=0.5, ci_low=0.4, ci_high=0.6, n_labels=20, n_items=N,
                               details={"labels": labels})
        result = paired_difference(row, new.model_copy(update={"labelled": est}), old, f_new, f_old, changed, N)
        if result is None:
            continue
        estimates.append(result.diff)
        covered += result.low <= truth <= result.high
    assert len(estimates) > 390
    assert abs(np.mean(estimates) - truth) < 4 * np.std(estimates) / np.sqrt(len(estimates)) + 0.005
    assert covered / len(estimates) >= 0.93
