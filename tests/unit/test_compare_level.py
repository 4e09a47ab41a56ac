"""A score that is a level (faithfulness: mean calibrated P(supported)) is compared as one: the paired
difference `compare` prints is of the items' values of the level, the headline's own quantity, not of
verdict shares; the labels' estimate and the gate's expectation read the same values."""

from __future__ import annotations

import pytest

from ragwatch.decision.compare import compare_runs
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.judges.faithfulness import PROMPT_VERSION as FAITHFULNESS_PROMPT
from ragwatch.judges.faithfulness.calibrations import faithfulness_calibration
from ragwatch.judges.faithfulness.level import with_level
from ragwatch.report.summary import comparison_text
from ragwatch.results import LEVEL_ITEM_KEY, ItemScore, MetricInfo, MetricResult
from ragwatch.review.labelled import labelled_estimate
from ragwatch.review.labels import HumanLabel
from ragwatch.review.spread import expected_label
from ragwatch.statements import StatementVerdict

TH = GateThresholds(default_allowed_drop=0.05, gated_metrics=["faithfulness"])
N = 30


def _faithfulness(lexicals: list[list[float]], *, level: bool = True) -> MetricResult:
    """Items whose statements are all called supported (verdict share 1.0), with these lexical supports;
    with `level`, scored as the shipped judge scores them: the calibrated level."""
    calibration = faithfulness_calibration("local/qwen2.5-coder-1.5b-instruct", FAITHFULNESS_PROMPT)
    assert calibration is not None and calibration.level_data
    items = []
    for i, lexical in enumerate(lexicals):
        verdicts = [StatementVerdict(statement=f"s{i}.{k}", verdict=True, p_supported=0.6, p_judge=0.9,
                                     threshold=0.44, lexical_support=x, evidence=[1]) for k, x in enumerate(lexical)]
        items.append(ItemScore(item_id=f"q{i}", score=1.0, details={
            "verdicts": [v.model_dump() for v in verdicts], "judged_key": f"k{i}-{lexical}"}))
    info = MetricInfo(family="judge", judge_model="local/qwen2.5-coder-1.5b-instruct",
                      prompt_version=FAITHFULNESS_PROMPT, scale=(0.0, 1.0), agreement=calibration.agreement)
    result = MetricResult.from_items("faithfulness", items, info=info)
    return with_level(result, calibration, resamples=100) if level else result


@pytest.fixture(scope="module")
def runs() -> tuple[MetricResult, MetricResult]:
    old = _faithfulness([[0.95, 0.9, 0.85]] * N)
    # the candidate's statements share fewer word pairs with the contexts in a third of the answers;
    # the verifier still calls every one supported, so the verdict shares do not move
    new = _faithfulness([[0.95, 0.3, 0.2] if i % 3 == 0 else [0.95, 0.9, 0.85] for i in range(N)])
    return new, old


def test_the_paired_difference_is_of_the_headline_level_not_of_verdict_shares(runs) -> None:
    new, old = runs
    assert new.details["verdict_share"] == old.details["verdict_share"] == 1.0
    assert new.score < old.score  # the level sees the weaker support
    row = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=TH).row("faithfulness")
    assert row.method == "paired" and row.n_paired == N
    # every item paired: the paired difference is exactly the difference of the two headline figures
    assert row.diff == pytest.approx(new.score - old.score, abs=1e-12)
    assert row.diff_low <= row.diff < row.diff_high < 0 and row.constant_value is None
    values = new.level_values()
    assert values is not None and sum(values.values()) / N == pytest.approx(new.score, abs=1e-12)
    # on verdict shares the same runs were identical ("unchanged") and a constant judge
    shares = compare_runs({"faithfulness": _faithfulness([[0.95, 0.3, 0.2]] * N, level=False)},
                          {"faithfulness": _faithfulness([[0.95, 0.9, 0.85]] * N, level=False)}, thresholds=TH)
    assert shares.row("faithfulness").verdict == "constant" and shares.row("faithfulness").diff == 0.0
    text = comparison_text(compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=TH))
    assert f"{row.diff:+.3f}" in text


def test_with_a_level_in_one_run_only_the_row_says_which_quantity_the_difference_is(runs) -> None:
    new, _ = runs
    old = _faithfulness([[0.95, 0.9, 0.85]] * N, level=False)  # production scored before the level existed
    row = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=TH).row("faithfulness")
    assert row.diff == 0.0  # item scores: verdict shares, 1.0 in both
    assert "only the new run's score is a calibrated level: the difference is of item scores" in row.note


def test_level_values_need_every_scored_item(runs) -> None:
    new, _ = runs
    assert all(LEVEL_ITEM_KEY in it.details for it in new.items)
    partial = new.model_copy(update={"items": [new.items[0].model_copy(update={"details": {}}), *new.items[1:]]})
    assert partial.level_values() is None


def test_labels_and_the_gate_read_the_items_values_of_the_level(runs) -> None:
    new, _ = runs
    item = new.items[0]
    assert expected_label(item) == item.details[LEVEL_ITEM_KEY]  # not the mean P(supported) 0.6
    labels = {it.item_id: HumanLabel(item_id=it.item_id, metric="faithfulness", value=1.0,
                                     judged_key=it.details["judged_key"]) for it in new.items[:10]}
    estimate, why = labelled_estimate(new, labels)
    assert why is None and estimate is not None
    assert estimate.details["judge_mean_on_labelled"] == pytest.approx(
        sum(it.details[LEVEL_ITEM_KEY] for it in new.items[:10]) / 10)


def test_the_same_answers_levelled_by_another_calibration_are_not_compared_as_a_change(runs) -> None:
    new, old = runs
    assert new.info.calibration and new.info.calibration == old.info.calibration  # one calibration: comparable
    row = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=TH).row("faithfulness")
    assert row.verdict != "not_comparable"
    # a baseline levelled by an earlier calibration (stored before calibrations were recorded, or refitted since):
    # the level of the same answers moves with the calibration, so its difference must not gate
    for earlier in (None, "local/qwen2.5-coder-1.5b-instruct/p/features-v2/000000000000"):
        baseline = old.model_copy(update={"info": old.info.model_copy(update={"calibration": earlier})})
        row = compare_runs({"faithfulness": old}, {"faithfulness": baseline}, thresholds=TH).row("faithfulness")
        assert row.verdict == "not_comparable" and "level calibrated by" in row.note
