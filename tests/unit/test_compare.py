"""Run comparison verdicts and the promotion gate, on hand-built MetricResults."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from ragwatch.decision.compare import Comparison, compare_runs
from ragwatch.decision.gate import gate_decision
from ragwatch.decision.thresholds import GateThresholds, matches
from ragwatch.report.markdown import build_markdown_summary
from ragwatch.report.summary import comparison_html, comparison_markdown, comparison_text
from ragwatch.report.verdicts import flag_lines, reason_lines
from ragwatch.results import ItemScore, LabelledEstimate, MetricInfo, MetricResult

LOWER = MetricInfo(direction="lower", scale=None)
JUDGE = MetricInfo(scale=(1.0, 5.0), prompt_version="v1", family="judge")


def result(name: str, scores, ids=None, errors: dict[str, str] | None = None, info: MetricInfo | None = None,
           **details) -> MetricResult:
    ids = ids or [f"q{i}" for i in range(len(scores))]
    errors = errors or {}
    items = [ItemScore(item_id=i, error=errors[i]) if i in errors else ItemScore(item_id=i, score=float(s))
             for i, s in zip(ids, scores, strict=True)]
    return MetricResult.from_items(name, items, details=details, info=info)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


BASE = rng(0).uniform(0.4, 1.0, 80)


def test_clear_regression_is_regressed_and_blocks_the_gate():
    old = {"faithfulness": result("faithfulness", BASE)}
    new = {"faithfulness": result("faithfulness", BASE - 0.2 + rng(1).normal(0, 0.02, 80))}
    th = GateThresholds(default_allowed_drop=0.05)
    cmp = compare_runs(new, old, thresholds=th, old_label="production")
    row = cmp.row("faithfulness")
    assert row.verdict == "regressed"
    assert row.method == "paired" and row.n_paired == 80
    assert row.diff_high < -0.05 and row.diff == pytest.approx(row.new_score - row.old_score, abs=1e-9)
    decision = gate_decision(cmp, th)
    assert decision.promote is False
    (reason,) = reason_lines(decision)
    assert "faithfulness" in reason and "0.050" in reason and "95% CI" in reason
    assert f"{row.diff:+.3f}" in reason


def test_clear_improvement_is_improved_and_promotes():
    old = {"faithfulness": result("faithfulness", BASE)}
    new = {"faithfulness": result("faithfulness", np.minimum(BASE + 0.1, 1.0))}
    cmp = compare_runs(new, old, thresholds=GateThresholds())
    assert cmp.row("faithfulness").verdict == "improved"
    decision = gate_decision(cmp, GateThresholds())
    assert decision.promote and "no gated metric regressed" in reason_lines(decision)[0]


def test_noise_is_not_a_regression():
    old = {"m": result("m", BASE)}
    new = {"m": result("m", BASE + rng(2).normal(0, 0.05, 80))}
    # with a tolerance the noise interval lies within it: unchanged; without one it is inconclusive
    assert compare_runs(new, old, thresholds=GateThresholds(default_allowed_drop=0.05)).row("m").verdict \
        == "unchanged"
    strict = compare_runs(new, old, thresholds=GateThresholds())
    assert strict.row("m").verdict == "inconclusive"
    assert gate_decision(strict, GateThresholds()).promote


def test_a_possible_gain_beyond_the_allowance_is_inconclusive_not_unchanged():
    z = rng(6).normal(size=80)
    diffs = 0.01 + 0.08 * (z - z.mean()) / z.std()  # mean 0.01, interval about [-0.008, +0.028]
    old, new = {"m": result("m", BASE)}, {"m": result("m", BASE + diffs)}
    row = compare_runs(new, old, thresholds=GateThresholds(default_allowed_drop=0.02)).row("m")
    assert row.diff_low < 0 < 0.02 < row.diff_high and row.diff_low > -0.02
    assert row.verdict == "inconclusive"


def test_identical_runs_are_unchanged_and_their_interval_is_not_a_point():
    run = {"m": result("m", BASE), "hit_rate@5": result("hit_rate@5", [1, 0, 1, 1, 0])}
    cmp = compare_runs(run, run)
    assert {r.verdict for r in cmp.rows} == {"unchanged"}
    # no change seen on 80 (or 5) items is not certainty that nothing changed: the interval holds 0
    # and keeps a width (ragwatch.statistics.intervals.paired_diff_interval)
    assert all(r.diff == 0 and r.diff_low < 0 < r.diff_high for r in cmp.rows)


def test_drop_within_the_allowance_is_not_a_regression_but_beyond_it_is():
    old = {"m": result("m", BASE)}
    # a drop of 0.03 with a little item-to-item noise (a constant shift on every item is a degenerate
    # sample: ragwatch.statistics.intervals gives it the augmented mean's width, as for identical scores)
    new = {"m": result("m", BASE - 0.03 + rng(7).normal(0, 0.005, 80))}
    loose = GateThresholds(per_metric={"m": 0.05})
    row = compare_runs(new, old, thresholds=loose).row("m")
    assert row.verdict == "unchanged" and "within the allowed drop" in row.note
    assert gate_decision(compare_runs(new, old, thresholds=loose), loose).promote
    tight = GateThresholds(default_allowed_drop=0.5, per_metric={"m*": 0.01})  # glob beats the default
    assert compare_runs(new, old, thresholds=tight).row("m").verdict == "regressed"


@pytest.mark.parametrize("name", ["perplexity", "e2e_failure_rate/smoke"])
def test_lower_is_better_metrics_are_mirrored(name):
    old_values = rng(3).uniform(5, 10, 60)
    old = {name: result(name, old_values, info=LOWER)}
    worse = {name: result(name, old_values + 2, info=LOWER)}
    better = {name: result(name, old_values - 2, info=LOWER)}
    assert compare_runs(worse, old).row(name).verdict == "regressed"
    assert compare_runs(better, old).row(name).verdict == "improved"
    assert compare_runs(worse, old).row(name).higher_is_better is False


def test_direction_only_from_metric_info_never_from_names_details_or_the_gate():
    values = rng(4).uniform(0, 1, 50)
    old = {"toxicity": result("toxicity", values, info=LOWER)}
    new = {"toxicity": result("toxicity", values + 0.3, info=LOWER)}
    assert compare_runs(new, old).row("toxicity").verdict == "regressed"
    # the gate's rule has no say in a direction: a former override list is refused, saying what to do
    with pytest.raises(ValidationError, match=r"lower_is_better .*no longer read.*MetricInfo\.direction"):
        GateThresholds(lower_is_better=["toxicity"])
    # an empty one (a dump of the old default) says nothing and is accepted
    assert GateThresholds.model_validate({"lower_is_better": []}) == GateThresholds()
    # string keys in details are not read: MetricInfo is the contract
    assert result("x", [1], lower_is_better=True).info.higher_is_better is True
    assert result("failure_rate", [1]).info.higher_is_better is True
    assert result("x", [1], info=LOWER).info.higher_is_better is False


def test_missing_metrics_are_added_or_removed_and_only_block_when_explicitly_gated():
    old = {"a": result("a", BASE), "gone": result("gone", BASE)}
    new = {"a": result("a", BASE), "fresh": result("fresh", BASE)}
    cmp = compare_runs(new, old)
    assert cmp.row("gone").verdict == "removed" and cmp.row("fresh").verdict == "added"
    assert cmp.row("gone").old_score == pytest.approx(float(BASE.mean()))
    assert gate_decision(cmp, GateThresholds()).promote
    gated = GateThresholds(gated_metrics=["a", "gone"])
    decision = gate_decision(cmp, gated)
    assert not decision.promote and any("gone" in r and "missing" in r for r in reason_lines(decision))


def test_items_that_do_not_pair_are_compared_unpaired():
    old = {"m": result("m", BASE, ids=[f"old{i}" for i in range(80)])}
    new = {"m": result("m", BASE - 0.3, ids=[f"new{i}" for i in range(80)])}
    row = compare_runs(new, old, thresholds=GateThresholds(default_allowed_drop=0.05)).row("m")
    assert row.method == "unpaired" and row.n_paired == 0 and "no item ids in common" in row.note
    assert row.verdict == "regressed"


def test_few_shared_ids_fall_back_to_unpaired():
    ids_old = [f"q{i}" for i in range(40)]
    ids_new = [f"q{i}" for i in range(35, 75)]  # 5 of 40 in common
    new, old = {"m": result("m", BASE[:40], ids=ids_new)}, {"m": result("m", BASE[:40], ids=ids_old)}
    row = compare_runs(new, old).row("m")
    assert row.method == "unpaired" and "only 5 item ids in common" in row.note


def test_pairing_sees_a_small_consistent_gain_that_unpaired_cannot():
    # large spread between items, a small gain on every item: only the paired interval excludes 0
    old_values = rng(5).uniform(0, 1, 60)
    new_values = old_values + 0.02 + rng(8).normal(0, 0.005, 60)
    paired = compare_runs({"m": result("m", new_values)}, {"m": result("m", old_values)}).row("m")
    unpaired = compare_runs({"m": result("m", new_values, ids=[f"n{i}" for i in range(60)])},
                            {"m": result("m", old_values)}).row("m")
    assert paired.verdict == "improved"
    assert unpaired.verdict == "inconclusive"


def test_failed_items_are_left_out_of_the_pairs():
    errors = {"q0": "judge timeout", "q1": "judge timeout"}
    old = {"m": result("m", BASE)}
    new = {"m": result("m", BASE, errors=errors)}
    # identical on the 78 pairs: no change seen, within an interval that still has a width
    # (+-0.047 at n=78), so "unchanged" needs a tolerance
    row = compare_runs(new, old, thresholds=GateThresholds(default_allowed_drop=0.1)).row("m")
    assert row.n_paired == 78 and row.n_new == 78 and row.n_old == 80
    assert row.verdict == "unchanged"


def test_a_metric_with_no_scored_item_is_not_comparable_and_blocks():
    ids = [f"q{i}" for i in range(5)]
    old = {"m": result("m", [1, 1, 0, 1, 1])}
    new = {"m": result("m", [0] * 5, errors={i: "judge unreachable" for i in ids})}
    cmp = compare_runs(new, old)
    assert cmp.row("m").verdict == "not_comparable"
    decision = gate_decision(cmp, GateThresholds())
    assert not decision.promote and "no item could be scored" in reason_lines(decision)[0]
    # a broken baseline does not block the new run
    assert gate_decision(compare_runs(old, new), GateThresholds()).promote


def test_fewer_than_two_items_is_inconclusive():
    row = compare_runs({"m": result("m", [0.0])}, {"m": result("m", [1.0])}).row("m")
    assert row.verdict == "inconclusive" and "fewer than 2" in row.note


def test_duplicate_item_ids_are_compared_unpaired():
    row = compare_runs({"m": result("m", [1, 1, 1], ids=["a", "a", "b"])},
                       {"m": result("m", [1, 0, 1], ids=["a", "b", "c"])}).row("m")
    assert row.method == "unpaired" and "duplicate" in row.note


def test_no_baseline_promotes():
    new = {"m": result("m", BASE)}
    cmp = compare_runs(new, None, old_label="production")
    assert not cmp.has_baseline and cmp.rows[0].verdict == "added"
    assert reason_lines(gate_decision(cmp, GateThresholds())) == ["no production baseline"]
    assert gate_decision(None, GateThresholds()).promote
    assert gate_decision(compare_runs(new, {}), GateThresholds()).promote
    assert "no production baseline" in comparison_text(cmp)


def test_ungated_regressions_do_not_block_and_a_gated_name_that_matches_nothing_is_warned_once():
    old = {"hit_rate@5": result("hit_rate@5", BASE), "style": result("style", BASE)}
    new = {"hit_rate@5": result("hit_rate@5", BASE), "style": result("style", BASE - 0.3)}
    th = GateThresholds(gated_metrics=["hit_rate@*"])
    cmp = compare_runs(new, old, thresholds=th)
    assert cmp.row("style").verdict == "regressed" and not cmp.row("style").gated
    assert gate_decision(cmp, th).promote
    # a name no metric of either run has (a typo, or a metric this config does not measure): the gate warns
    # once and decides on what was measured; listed by the user's own config file it is refused before the
    # run (ragwatch.preflight)
    typo = GateThresholds(gated_metrics=["hitrate@5", "hit_rate@*"])
    decision = gate_decision(compare_runs(new, old, thresholds=typo), typo)
    assert decision.promote and decision.unmeasured == ["hitrate@5"]
    (flag,) = [f for f in flag_lines(decision) if "hitrate@5" in f]
    assert "matches no metric" in flag and "evaluate.gate.gated_metrics" in flag
    assert not any("hitrate@5" in r for r in reason_lines(decision))
    why = {"hitrate@5": "the faithfulness judge is not enabled (evaluate.judges.enabled: [])"}
    decision = gate_decision(compare_runs(new, old, thresholds=typo), typo, unmeasured=why)
    assert decision.promote and any(why["hitrate@5"] in f for f in flag_lines(decision))


def test_thresholds_validate():
    with pytest.raises(ValidationError, match="allowed_drops"):
        GateThresholds(allowed_drops={"m": 0.1})
    with pytest.raises(ValidationError, match="allowed drops must be"):
        GateThresholds(per_metric={"m": -0.1})
    with pytest.raises(ValidationError):
        GateThresholds(default_allowed_drop=-1)
    assert matches("hit_rate@5", "hit_rate") and matches("bm25/hit_rate@5", "*hit_rate@*")
    assert not matches("mrr", "map")


def test_non_metric_values_are_rejected():
    with pytest.raises(TypeError, match="MetricResult"):
        compare_runs({"m": 0.5}, {"m": result("m", [1])})  # type: ignore[dict-item]


def _mixed() -> Comparison:
    old = {"b_metric": result("b_metric", BASE), "a<b>": result("a<b>", BASE),
           "perplexity": result("p", BASE, info=LOWER)}
    new = {"b_metric": result("b_metric", BASE - 0.3), "a<b>": result("a<b>", BASE),
           "new_one": result("n", BASE), "perplexity": result("p", BASE - 0.3, info=LOWER)}
    return compare_runs(new, old, new_label="run 7", old_label="production")


def test_rows_put_what_needs_attention_first():
    assert [r.verdict for r in _mixed().rows] == ["regressed", "improved", "added", "unchanged"]


def test_to_frame():
    frame = _mixed().to_frame()
    assert list(frame["metric"]) == ["b_metric", "perplexity", "new_one", "a<b>"]
    expected = {"old_score", "new_score", "diff", "diff_low", "diff_high", "n_paired", "verdict"}
    assert expected <= set(frame.columns)


def test_to_markdown_and_text():
    cmp = _mixed()
    md = comparison_markdown(cmp)
    assert "| metric | old | new | diff |" in md and "**regressed**" in md and "a&lt;b&gt;" in md
    text = comparison_text(cmp)
    lines = text.splitlines()
    assert lines[0] == "run 7 vs production"
    assert lines[2].startswith("-----") and "b_metric" in lines[3] and "regressed" in lines[3]
    assert lines[-1] == "(1 added, 1 improved, 1 regressed, 1 unchanged)"


def test_to_html_escapes_and_colours():
    from ragwatch.report.comparison import build_comparison_page

    fragment = comparison_html(_mixed())
    assert "<table" in fragment and "a&lt;b&gt;" in fragment and "a<b>" not in fragment
    assert "#c62828" in fragment  # regressed colour
    page = build_comparison_page({"production": _mixed()})  # the one standalone page
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "<script" not in page
    assert "a&lt;b&gt;" in page and "a<b>" not in page and "#c62828" in page


def test_a_constant_judge_is_flagged_and_never_gates():
    old = {"faithfulness": result("faithfulness", [1.0] * 40, info=JUDGE)}
    new = {"faithfulness": result("faithfulness", [1.0] * 40, info=JUDGE)}
    th = GateThresholds(gated_metrics=["faithfulness"], inconclusive="hold")
    cmp = compare_runs(new, old, thresholds=th)
    row = cmp.row("faithfulness")
    assert row.verdict == "constant" and not row.gated and row.constant_value == 1.0
    decision = gate_decision(cmp, th)
    assert decision.promote and any("every item 1.000" in f and "does not gate" in f for f in flag_lines(decision))
    assert "as before" in row.note
    # a non-judge metric that is perfect everywhere is a measurement, not a constant judge
    perfect = {"system/hit_rate": result("system/hit_rate", [1.0] * 40)}
    assert compare_runs(perfect, perfect).row("system/hit_rate").verdict == "unchanged"


def test_a_judge_that_becomes_constant_is_flagged_and_does_not_gate():
    old = {"faithfulness": result("faithfulness", rng(7).integers(3, 6, 60), info=JUDGE)}
    new = {"faithfulness": result("faithfulness", [1.0] * 60, info=JUDGE)}
    th = GateThresholds(gated_metrics=["faithfulness"])
    cmp = compare_runs(new, old, thresholds=th)
    row = cmp.row("faithfulness")
    assert row.verdict == "constant" and not row.gated and row.diff < -1  # the difference is still shown
    decision = gate_decision(cmp, th)
    assert decision.promote
    assert any("every item 1.000 in this run" in f and "varied in the old run" in f for f in flag_lines(decision))


@pytest.mark.parametrize(("rule", "n", "promote", "status"), [
    ("promote", 10, True, "promote"),
    ("hold", 80, False, "hold"),
    ("min_n", 10, False, "hold"),
    ("min_n", 80, True, "promote"),
])
def test_the_teams_inconclusive_rule(rule, n, promote, status):
    z = rng(8).normal(size=n)
    old = {"m": result("m", BASE[:n])}
    new = {"m": result("m", BASE[:n] + 0.1 * (z - z.mean()) / z.std())}  # mean 0, wide interval
    th = GateThresholds(inconclusive=rule, min_n=30)
    cmp = compare_runs(new, old, thresholds=th)
    assert cmp.row("m").verdict == "inconclusive"
    decision = gate_decision(cmp, th)
    assert (decision.promote, decision.status) == (promote, status)
    if not promote:
        assert reason_lines(decision)[0].startswith("m inconclusive") and "add questions" in reason_lines(decision)[-1]


def test_human_labels_decide_when_both_runs_have_them():
    def labelled(score: float) -> LabelledEstimate:
        return LabelledEstimate(method="ppi++", score=score, ci_low=score - 0.03, ci_high=score + 0.03,
                                n_labels=200, n_items=400)

    # the judge sees no change, the prediction-powered estimate a clear drop
    old = result("correctness", BASE, info=JUDGE).model_copy(update={"labelled": labelled(0.80)})
    new = result("correctness", BASE, info=JUDGE).model_copy(update={"labelled": labelled(0.70)})
    th = GateThresholds(default_allowed_drop=0.02)
    cmp = compare_runs({"correctness": new}, {"correctness": old}, thresholds=th)
    row = cmp.row("correctness")
    assert row.basis == "labelled" and row.verdict == "regressed" and row.diff == 0
    assert row.labelled_diff == pytest.approx(-0.1)
    assert row.labelled_high == pytest.approx(-0.1 + 0.03 * 2 ** 0.5)
    (reason,) = reason_lines(gate_decision(cmp, th))
    assert "human labels" in reason and "-0.100" in reason
    assert "labelled -0.100" in comparison_text(cmp)
    # labels in one run only: the judge's interval decides, and the row says why
    one = compare_runs({"correctness": new}, {"correctness": result("correctness", BASE, info=JUDGE)})
    assert one.row("correctness").basis == "judge" and "one run only" in one.row("correctness").note


def test_identical_scores_on_every_paired_item_are_unchanged_at_any_n():
    # one item, the same score in both runs: nothing changed, so the min_n rule has nothing to hold
    th = GateThresholds(default_allowed_drop=0.0, gated_metrics=["e2e_failure_rate"], inconclusive="min_n", min_n=30)
    same = result("e2e_failure_rate", [1.0], info=MetricInfo(direction="lower", binary=True))
    cmp = compare_runs({"e2e_failure_rate": same}, {"e2e_failure_rate": same}, thresholds=th)
    assert cmp.row("e2e_failure_rate").verdict == "unchanged"
    assert gate_decision(cmp, th).promote
    # one item that did change stays undecided and holds below min_n
    worse = result("e2e_failure_rate", [0.0], info=MetricInfo(direction="lower", binary=True))
    held = gate_decision(compare_runs({"e2e_failure_rate": same}, {"e2e_failure_rate": worse}, thresholds=th), th)
    assert not held.promote and held.status == "hold"


def test_an_unlabelled_judge_warning_cites_its_models_measured_agreement():
    from ragwatch.judges.faithfulness import FaithfulnessJudge
    from ragwatch.report.summary import judge_warnings

    model = "local/qwen2.5-coder-1.5b-instruct"
    # the default judge and prompt: the calibrated cut-off and the agreement measured on RAG statements
    judge = FaithfulnessJudge(None, model=model, use_logprobs=True)
    details = judge.details("faithfulness")
    info = judge.metrics["faithfulness"]
    shipped = judge.calibration
    assert shipped is not None and details["support_threshold"] == pytest.approx(shipped.support_model.cutoff)
    assert details["support_model"]["weights"] == shipped.support_model.weights
    assert info.agreement == shipped.agreement and "RAG answers" in info.agreement.data
    faith = result("faithfulness", [1.0, 0.5, 1.0], info=info.model_copy(update={"family": "judge"}), **details)
    (warning,) = judge_warnings({"faithfulness": faith})
    assert f"Cohen's kappa {shipped.agreement.kappa:.2f}" in warning and "reference labels" in warning
    # another prompt version of the same model has no calibration: its agreement is unknown
    windows = FaithfulnessJudge(None, model=model, use_logprobs=True, verify="batched")
    assert windows.metrics["faithfulness"].agreement is None and windows.support_threshold == 0.90
    plain = result("faithfulness", [1.0, 0.5, 1.0], info=MetricInfo(family="judge", prompt_version="v4"),
                   **windows.details("faithfulness"))
    (unknown,) = judge_warnings({"faithfulness": plain})
    assert "unknown" in unknown and "measured on QAGS-XSum claims (n=60" in unknown

def test_a_change_of_judge_model_or_prompt_is_not_comparable_and_does_not_gate():
    scores_old = [1.0, 1.0, 1.0, 0.5] * 10
    scores_new = [0.5, 0.5, 0.0, 0.5] * 10  # a big drop, but measured by another judge
    info = MetricInfo(scale=(0.0, 1.0), prompt_version="faithfulness-v4", family="judge")
    old = result("faithfulness", scores_old,
                 info=info.model_copy(update={"judge_model": "local/qwen2.5-0.5b-instruct"}))
    new = result("faithfulness", scores_new,
                 info=info.model_copy(update={"judge_model": "local/qwen2.5-coder-1.5b-instruct"}))
    thresholds = GateThresholds(gated_metrics=["faithfulness"])
    row = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=thresholds).row("faithfulness")
    assert row.verdict == "not_comparable" and not row.gated and row.diff < 0
    assert "judge model local/qwen2.5-0.5b-instruct -> local/qwen2.5-coder-1.5b-instruct" in row.note
    decision = gate_decision(compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=thresholds),
                             thresholds)
    assert decision.promote and any("judged differently" in f for f in flag_lines(decision))
    # the same judge: the drop is a regression again
    same = result("faithfulness", scores_new, info=old.info)
    assert compare_runs({"faithfulness": same}, {"faithfulness": old}, thresholds=thresholds).row(
        "faithfulness").verdict == "regressed"
    # a new prompt version counts too
    v5 = result("faithfulness", scores_new, info=old.info.model_copy(update={"prompt_version": "faithfulness-v5"}))
    assert "prompt faithfulness-v4 -> faithfulness-v5" in compare_runs(
        {"faithfulness": v5}, {"faithfulness": old}, thresholds=thresholds).row("faithfulness").note


def test_handcrafted_tests_compare_exactly_case_by_case_at_any_n():
    # keyword tests are the whole population: a flipped case is a measured change, not a small sample
    e2e = MetricInfo(direction="lower", binary=True, family="e2e", measure="failure_rate")
    th = GateThresholds(default_allowed_drop=0.05, gated_metrics=["e2e_failure_rate"], inconclusive="min_n", min_n=30)
    ids = ["bad/0", "bad/1", "good/0", "good/1", "good/2", "good/3"]
    old = result("e2e_failure_rate", [0, 0, 1, 0, 0, 0], ids=ids, info=e2e)
    worse = result("e2e_failure_rate", [1, 0, 1, 0, 0, 0], ids=ids, info=e2e)
    row = compare_runs({"e2e_failure_rate": worse}, {"e2e_failure_rate": old}, thresholds=th).row("e2e_failure_rate")
    assert (row.verdict, row.method, row.n_compared) == ("regressed", "exact", 6)
    assert row.diff == row.diff_low == row.diff_high == pytest.approx(1 / 6)
    assert "worse: bad/0" in row.note
    better = result("e2e_failure_rate", [0, 0, 0, 0, 0, 0], ids=ids, info=e2e)
    cmp = compare_runs({"e2e_failure_rate": better}, {"e2e_failure_rate": old}, thresholds=th)
    assert cmp.row("e2e_failure_rate").verdict == "improved" and "better: good/0" in cmp.row("e2e_failure_rate").note
    assert gate_decision(cmp, th).status == "promote"  # decided at n = 6: nothing to hold
    swapped = result("e2e_failure_rate", [1, 0, 0, 0, 0, 0], ids=ids, info=e2e)  # one fixed, one broken
    row = compare_runs({"e2e_failure_rate": swapped}, {"e2e_failure_rate": old}, thresholds=th).row("e2e_failure_rate")
    assert row.verdict == "unchanged" and "worse: bad/0" in row.note and "better: good/0" in row.note


def test_a_judge_below_the_agreement_bar_does_not_decide_alone_and_the_reasons_say_why():
    from ragwatch.results import JudgeAgreement

    def judged(kappa: float | None) -> MetricInfo:
        agreement = None if kappa is None else JudgeAgreement(
            kappa=kappa, kappa_ci=(kappa - 0.2, kappa + 0.2), balanced_accuracy=0.7, balanced_accuracy_ci=(0.6, 0.8),
            n=72, data="statements of RAG answers", labels="reference labels")
        return MetricInfo(family="judge", judge_model="local/j", prompt_version="v5", agreement=agreement)

    th = GateThresholds(default_allowed_drop=0.05, min_judge_kappa=0.6, weak_judge="labels")
    trusted = th.model_copy(update={"trust_unknown_agreement": ["faith*"]})
    for kappa, status, rule in ((0.42, "needs_labels", th), (0.75, "regressed", th), (None, "promote", th),
                                (None, "regressed", trusted)):
        old = {"faithfulness": result("faithfulness", BASE, info=judged(kappa))}
        new = {"faithfulness": result("faithfulness", BASE - 0.2, info=judged(kappa))}
        cmp = compare_runs(new, old, thresholds=rule)
        decision = gate_decision(cmp, rule)
        assert decision.status == status and decision.promote == (status == "promote"), (kappa, reason_lines(decision))
        if kappa is None and rule is th:  # agreement unknown: shown, marked, not gated unless trusted
            row = cmp.row("faithfulness")
            assert row.verdict == "regressed" and not row.gated and "agreement unknown" in row.note
            assert "(not gated: agreement unknown)" in comparison_text(cmp)
        if kappa == 0.42:  # a drop the judge sees but, below the bar, cannot size: labels decide
            (note,) = [r for r in reason_lines(decision) if "needs labels" in r]
            assert "kappa 0.42" in note and "72 statements of RAG answers" in note and "min_judge_kappa 0.60" in note
            assert "-0.200" in note  # the change is still shown
    # no drop the judge can see: shown, not gated, promoted
    old = {"faithfulness": result("faithfulness", BASE, info=judged(0.42))}
    new = {"faithfulness": result("faithfulness", BASE + 0.01, info=judged(0.42))}
    decision = gate_decision(compare_runs(new, old, thresholds=th), th)
    assert decision.promote and any("not gated" in r for r in reason_lines(decision))
    # human labels on both runs: the prediction-powered interval decides, whatever the judge's agreement
    labelled = LabelledEstimate(method="ppi++", score=0.8, ci_low=0.75, ci_high=0.85, n_labels=40, n_items=80)
    worse = LabelledEstimate(method="ppi++", score=0.5, ci_low=0.45, ci_high=0.55, n_labels=40, n_items=80)
    old = {"faithfulness": result("faithfulness", BASE, info=judged(0.42)).model_copy(update={"labelled": labelled})}
    new = {"faithfulness": result("faithfulness", BASE - 0.2, info=judged(0.42)).model_copy(update={"labelled": worse})}
    assert gate_decision(compare_runs(new, old, thresholds=th), th).promote is False


NO_LOGPROBS = "not available for this system (it returns no token logprobs)"


def test_a_metric_the_new_system_cannot_have_is_not_available_with_the_reason_not_removed():
    """A system with logprobs replaced by one without: perplexity and answer confidence are in the old
    run only, and the comparison says why, in the table, the terminal, HTML and Markdown."""
    confidence = MetricInfo(family="judge", prompt_version="v1")
    with_logprobs = {"a": result("a", BASE), "perplexity": result("perplexity", BASE * 10, info=LOWER),
                     "answer_confidence": result("answer_confidence", BASE, info=confidence)}
    without = {"a": result("a", BASE)}
    unavailable = {"perplexity": NO_LOGPROBS, "answer_confidence": NO_LOGPROBS}

    bare = compare_runs(without, with_logprobs)  # what the comparison said before: a removed metric
    assert bare.row("perplexity").verdict == "removed" and bare.row("perplexity").note == ""

    cmp = compare_runs(without, with_logprobs, new_label="this run", old_label="production",
                       new_unavailable=unavailable, old_unavailable={})
    row = cmp.row("perplexity")
    assert row.verdict == "not_available" and row.new_score is None
    assert row.old_score == pytest.approx(float((BASE * 10).mean()))
    assert row.note == f"in this run: {NO_LOGPROBS}"
    assert cmp.counts() == {"unchanged": 1, "not_available": 2}
    text = comparison_text(cmp)
    assert f"answer_confidence, perplexity in this run: {NO_LOGPROBS}" in text
    assert "removed" not in text
    assert "not_available" in comparison_html(cmp) and NO_LOGPROBS in comparison_html(cmp)
    markdown = build_markdown_summary("run", without, comparisons={"production": cmp}, unavailable=unavailable)
    assert f"**not available** perplexity: in this run: {NO_LOGPROBS}" in markdown

    # not a regression; named in gated_metrics, the gate cannot check it: it warns once, saying why, and
    # decides on what was measured
    assert gate_decision(cmp, GateThresholds()).promote
    decision = gate_decision(cmp, GateThresholds(gated_metrics=["a", "perplexity"]))
    assert decision.promote and "perplexity" in decision.unmeasured
    assert [f for f in flag_lines(decision) if f.startswith("perplexity is gated but not measured in this run")
            and NO_LOGPROBS in f] and not any("perplexity" in r for r in reason_lines(decision))

    # the other way round: the new system gained logprobs; shown as not available in production, never blocks
    back = compare_runs(with_logprobs, without, new_label="this run", old_label="production",
                        new_unavailable={}, old_unavailable=unavailable)
    assert back.row("perplexity").verdict == "not_available"
    assert back.row("perplexity").note == f"in production: {NO_LOGPROBS}"
    assert gate_decision(back, GateThresholds(gated_metrics=["a", "perplexity"])).promote
