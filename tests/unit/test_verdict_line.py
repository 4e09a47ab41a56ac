"""The verdict line agrees with the comparison table by construction: it is written only from the rows'
verdicts (`decide_verdict`), and its gate wording is `gate_label`'s. Every combination is fed."""

from __future__ import annotations

import itertools
import re
from typing import get_args

import pytest

from ragwatch.decision.compare import (
    Comparison,
    Evidence,
    MetricComparison,
    Verdict,
    compare_runs,
    decide_verdict,
)
from ragwatch.decision.gate import GateDecision, GateStatus, gate_decision
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.summary import gate_label, scale_text, summary_markdown, summary_text, verdict_line
from ragwatch.report.verdicts import flag_lines, reason_lines
from ragwatch.results import ItemScore, JudgeAgreement, MetricInfo, MetricResult

VERDICTS: tuple[str, ...] = get_args(Verdict)
STATUSES: tuple[str, ...] = get_args(GateStatus)
CAUSE = "the system did not answer: connection failed: ConnectError: [Errno 111] Connection refused"


def _gate(status: str, unmeasured: tuple[str, ...] = ()) -> GateDecision:
    promote = status in ("promote", "no_baseline")
    reasons = [CAUSE] if status == "not_evaluated" else [f"reason for {status}"]
    flags = [f"gated metric {u!r} is not measured by this config: judges off" for u in unmeasured]
    return GateDecision(promote=promote, status=status, reasons=reasons, flags=flags, unmeasured=list(unmeasured))


def _comparison(verdicts: tuple[str, ...]) -> Comparison:
    """Two rows per verdict, one gated and one not; names say nothing about the verdict."""
    rows = []
    for j, (verdict, gated) in enumerate(itertools.product(verdicts, (True, False))):
        note = "judged differently (judge model a -> b): not gated" if verdict == "not_comparable" else ""
        rows.append(MetricComparison(metric=f"m{j}", verdict=verdict, gated=gated, note=note, diff=-0.5,
                                     diff_low=-0.9, diff_high=-0.1))
    return Comparison(new_label="this run", old_label="production", rows=rows)


def _named(line: str) -> dict[str, set[str]]:
    """Metric names per word the line uses for them."""
    def names(pattern: str) -> set[str]:
        return {n for m in re.finditer(pattern, line) for n in m.group(1).split(", ")}
    return {
        "regressed": names(r"Worse than [^:]+: ([m0-9, ]+) regressed") | names(r"Not gated: ([m0-9, ]+) regressed"),
        "improved": (names(r"Better than [^:]+: ([m0-9, ]+) improved") | names(r"\(improved: ([m0-9, ]+)\)")
                     | names(r"Not gated: ([m0-9, ]+) improved")),
        "needs_labels": names(r"Undecided vs [^:]+: ([m0-9, ]+) need labels") | names(r"Needs labels: ([m0-9, ]+)\."),
        "inconclusive": names(r"No clear change vs [^(]+\(([m0-9, ]+) undecided"),
        "not_comparable": names(r"Not comparable: ([m0-9, ]+)[ .]"),
        "removed": names(r"Missing from this run: ([m0-9, ]+)[ .]"),
        "unmeasured": names(r"Not measured by this config, not gated: ([a-z0-9_/, ]+) \(see warnings\)"),
    }


@pytest.mark.parametrize("unmeasured", [(), ("faithfulness", "e2e_failure_rate")])
@pytest.mark.parametrize("status", STATUSES)
def test_every_combination_of_row_verdicts_and_gate_statuses(status: str, unmeasured: tuple[str, ...]) -> None:
    """Every set of row verdicts (each gated and not) under every gate status, with and without gated
    metrics this config does not measure: the line names a metric with a word exactly when its row has
    that verdict, names every row the table marks regressed or improved (gated or not), every gated
    metric the gate decided without, and its class agrees with the gate."""
    gate = _gate(status, unmeasured)
    checked = 0
    for size in range(len(VERDICTS) + 1):
        for verdicts in itertools.combinations(VERDICTS, size):
            cmp = _comparison(verdicts)
            cls, line = verdict_line({"production": cmp}, gate)
            assert line.endswith(f"Gate: {gate_label(gate)}."), line
            mentioned = set(re.findall(r"\bm\d+\b", line))
            if status == "not_evaluated":
                # a run that could not be evaluated is compared with nothing: no metric named, no regression
                assert not mentioned and "regress" not in line.lower() and cls == "hold", line
                assert f"NOT EVALUATED ({CAUSE})" in line
                checked += 1
                continue
            if status == "not_applied":  # a quick look decides nothing: no metric named, no promotion
                assert not mentioned and "promot" not in line.lower() and cls == "none", line
                checked += 1
                continue
            named = _named(line)
            by_row = {r.metric: r for r in cmp.rows}
            # a metric is named with a word only when its row has that verdict ...
            for word, names in named.items():
                if word != "unmeasured":
                    assert all(by_row[n].verdict == word for n in names), (word, names, line)
            # ... every metric the line names is in one of those clauses ...
            assert mentioned == set().union(*(v for k, v in named.items() if k != "unmeasured")), line
            # ... every row the table marks regressed or improved is named, gated or not ...
            assert named["regressed"] == {r.metric for r in cmp.rows if r.verdict == "regressed"}
            assert named["improved"] == {r.metric for r in cmp.rows if r.verdict == "improved"}
            # ... and every gated call for labels, undecided, non-comparable and missing metric
            assert named["needs_labels"] == {r.metric for r in cmp.rows if r.gated and r.verdict == "needs_labels"}
            undecided = {r.metric for r in cmp.rows if r.gated and r.verdict == "inconclusive"}
            louder = any(r.gated and r.verdict in ("regressed", "improved", "needs_labels") for r in cmp.rows)
            assert named["inconclusive"] == (set() if louder else undecided)
            assert named["not_comparable"] == {r.metric for r in cmp.rows if r.verdict == "not_comparable"}
            assert named["removed"] == {r.metric for r in cmp.rows if r.gated and r.verdict == "removed"}
            assert named["unmeasured"] == set(unmeasured)
            gated_regressed = any(r.gated and r.verdict == "regressed" for r in cmp.rows)
            gated_improved = any(r.gated and r.verdict == "improved" for r in cmp.rows)
            needs = bool(named["needs_labels"])
            assert ("Worse than production" in line) == gated_regressed
            assert ("Better than production" in line) == (gated_improved and not gated_regressed and not needs)
            expected = ("bad" if status == "regressed" or gated_regressed
                        else "hold" if status in ("hold", "needs_labels") or needs else "ok")
            assert cls == expected, (status, line)
            checked += 1
    assert checked == 2 ** len(VERDICTS)


def test_no_baseline_and_no_comparison_with_each_status() -> None:
    for status in STATUSES:
        gate = _gate(status)
        _, none = verdict_line({"production": Comparison(has_baseline=False)}, gate)
        _, empty = verdict_line({}, gate)
        for line in (none, empty):
            assert line.endswith(f"Gate: {gate_label(gate)}.") and "regressed" not in line


def test_gate_label_wording() -> None:
    assert gate_label(_gate("promote")) == "PROMOTED"
    assert gate_label(_gate("regressed")) == "NOT PROMOTED (regression)"
    assert gate_label(_gate("not_evaluated")) == f"NOT EVALUATED ({CAUSE})"
    assert gate_label(GateDecision(promote=False, status="not_evaluated")) == "NOT EVALUATED"
    assert gate_label(_gate("not_applied")) == "NOT APPLIED (reason for not_applied)"
    with pytest.raises(ValueError, match="contradicts"):
        GateDecision(promote=True, status="not_evaluated")


def _judge(name: str, scores: list[float], model: str, scale=(1.0, 5.0), agreement=None) -> MetricResult:
    return MetricResult.from_items(name, [ItemScore(item_id=f"q{i}", score=s) for i, s in enumerate(scores)],
                                   info=MetricInfo(family="judge", judge_model=model, scale=scale,
                                                   agreement=agreement))


def test_a_changed_judge_model_is_not_comparable_in_the_line_too() -> None:
    """The issue's printout: the table said not_comparable, the line said "regressed ... Gate: PROMOTED"."""
    names = ("answer_relevance", "correctness", "faithfulness")
    old = {n: _judge(n, [5.0, 4.0, 5.0, 4.0] * 5, "local/qwen2.5-1.5b") for n in names}
    new = {n: _judge(n, [2.0, 1.0, 2.0, 1.0] * 5, "local/qwen2.5-3b") for n in names}
    th = GateThresholds()
    cmp = compare_runs(new, old, thresholds=th, old_label="previous run")
    assert {r.verdict for r in cmp.rows} == {"not_comparable"} and not any(r.gated for r in cmp.rows)
    gate = gate_decision(cmp, th)
    cls, line = verdict_line({"previous run": cmp}, gate)
    assert "regressed" not in line and "Worse" not in line, line
    assert "Not comparable: answer_relevance, correctness, faithfulness (judged differently" in line
    assert line.endswith("Gate: PROMOTED.") and cls == "ok"


def test_a_judge_below_the_agreement_bar_blocks_a_clear_regression_in_its_row_and_the_line() -> None:
    """gate.weak_judge paired: the same judge scored both runs, so its clear paired drop gates; the row,
    the gate and the line all say so. With weak_judge labels the row is shown, not gated."""
    weak = JudgeAgreement(kappa=0.2, kappa_ci=(0.0, 0.4), balanced_accuracy=0.6, balanced_accuracy_ci=(0.5, 0.7),
                          n=50, data="labelled statements", labels="reference labels")
    old = {"faithfulness": _judge("faithfulness", [1.0, 0.9] * 15, "m", scale=(0.0, 1.0), agreement=weak)}
    new = {"faithfulness": _judge("faithfulness", [0.1, 0.2] * 15, "m", scale=(0.0, 1.0), agreement=weak)}
    th = GateThresholds()
    cmp = compare_runs(new, old, thresholds=th, old_label="production")
    row = cmp.row("faithfulness")
    assert row.verdict == "regressed" and row.gated and "min_judge_kappa" in row.note
    gate = gate_decision(cmp, th)
    assert not gate.promote and gate.status == "regressed"
    _, line = verdict_line({"production": cmp}, gate)
    assert "Worse than production: faithfulness regressed" in line

    labels_only = GateThresholds(weak_judge="labels")
    row = compare_runs(new, old, thresholds=labels_only, old_label="production").row("faithfulness")
    assert row.verdict == "regressed" and not row.gated


def test_decide_verdict_applies_its_rules_in_order() -> None:
    assert decide_verdict(Evidence(in_old=False)).verdict == "added"
    assert decide_verdict(Evidence(in_new=False, unavailable="in new: no logprobs")).verdict == "not_available"
    assert decide_verdict(Evidence(n_new=0, n_old=3)).note == "no scored item in the new run"
    changed = decide_verdict(Evidence(n_new=5, n_old=5, judge_change="judge model a -> b", constant_value=3.0))
    assert changed.verdict == "not_comparable" and not changed.gates
    constant = decide_verdict(Evidence(n_new=5, n_old=5, constant_value=3.0, interval=(-1.0, -0.5)))
    assert constant.verdict == "constant" and not constant.gates
    assert decide_verdict(Evidence(n_new=5, n_old=5, identical_pairs=5, interval=(-1, 1))).verdict == "unchanged"
    assert decide_verdict(Evidence(n_new=1, n_old=1, enough=False, interval=(-1, -0.5))).verdict == "inconclusive"
    assert decide_verdict(Evidence(n_new=9, n_old=9, interval=(-0.3, -0.1))).verdict == "regressed"
    assert decide_verdict(Evidence(n_new=9, n_old=9, interval=(-0.3, -0.1), higher_is_better=False)).verdict \
        == "improved"
    within = decide_verdict(Evidence(n_new=9, n_old=9, interval=(-0.03, -0.01), allowed_drop=0.05))
    assert within == ("unchanged", "a drop, but within the allowed drop", True)
    assert decide_verdict(Evidence(n_new=9, n_old=9, interval=(-0.3, 0.1))).verdict == "inconclusive"
    assert decide_verdict(Evidence(n_new=4, n_old=4, cases=0)).verdict == "not_comparable"


def test_scale_comes_from_metric_info_not_the_name() -> None:
    likert = _judge("faithfulness", [1.0, 5.0], "m")  # a Likert judge under a 0-1 judge's name
    rate = _judge("correctness", [0.0, 1.0], "m", scale=(0.0, 1.0))
    binary = MetricResult.from_items("vector/hit_rate@5", [ItemScore(item_id="a", score=1.0)],
                                     info=MetricInfo(binary=True))
    perplexity = MetricResult.from_items("perplexity", [ItemScore(item_id="a", score=12.0)],
                                         info=MetricInfo(direction="lower", scale=None))
    assert scale_text(likert) == "1-5" and scale_text(rate) == "0-1" and scale_text(binary) == "0/1"
    assert scale_text(perplexity) == "unbounded, lower is better" and scale_text(None) == "-"
    metrics = {"faithfulness": likert, "correctness": rate}
    text = summary_text(metrics, {}, None, ["faithfulness", "correctness"])
    assert any(line.split()[:2] == ["faithfulness", "1-5"] for line in text.splitlines())
    assert any(line.split()[:2] == ["correctness", "0-1"] for line in text.splitlines())
    md = summary_markdown(metrics, {}, None, ["faithfulness", "correctness"])
    assert "| faithfulness | 1-5 |" in md and "| correctness | 0-1 |" in md


def test_promotion_off_says_not_promoted_whatever_the_baseline() -> None:
    """`evaluate.promote: false`: a gate that passed promotes nothing, first run or not; a refusal stays one."""
    from ragwatch.decision.gate import promotion_off

    for passed in (_gate("no_baseline"), _gate("promote")):
        off = promotion_off(passed)
        assert off.status == "promotion_off" and not off.promote and off.passed and not off.refused
        assert gate_label(off) == "not promoted (promote: false)"
        cls, line = verdict_line({"production": Comparison(has_baseline=passed.status == "promote")}, off)
        assert line.endswith("Gate: not promoted (promote: false).") and "PROMOTED" not in line and cls != "bad"
    refused = _gate("regressed")
    assert promotion_off(refused) == refused


def test_a_label_decided_row_reads_the_same_in_the_table_the_line_and_the_gate() -> None:
    """The issue's printout: labels decided "faithfulness regressed on human labels", and the line still read
    "No clear change ... undecided" while the table showed the judge's inconclusive interval."""
    from ragwatch.decision.gate import settle
    from ragwatch.decision.labels_plan import labels_plans
    from tests.unit.test_gate_labels import RUN, TH, expected_label, faith, label, production, with_labels

    probs, old = production()
    missed = faith(probs, [f"new{i}" if i < 48 else f"old{i}" for i in range(len(probs))])
    expected = [expected_label(it) for it in old.items]
    new = with_labels(missed, [label(f"q{i}", expected[i] - 1 / 3, 30 / 48, f"new{i}") for i in range(30)])
    raw = compare_runs({"faithfulness": new}, {"faithfulness": old}, thresholds=TH, old_label="production")
    assert raw.row("faithfulness").verdict != "regressed"  # the judge alone sees no clear drop
    plans = labels_plans(raw, {"faithfulness": new}, {"faithfulness": old}, run=RUN, thresholds=TH)
    settled = settle(raw, TH, plans)
    decision = gate_decision(raw, TH, plans=plans)
    assert gate_decision(settled, TH, plans=plans) == decision  # settling twice changes nothing
    row = settled.row("faithfulness")
    assert (row.verdict, row.basis, row.gated) == ("regressed", "labelled", True)
    assert decision.status == "regressed"
    assert reason_lines(decision)[0].startswith("faithfulness regressed on human labels")
    assert row.labelled_diff is not None and row.labelled_high is not None and row.labelled_high < 0
    cls, line = verdict_line({"production": settled}, decision)
    assert line.startswith("Worse than production: faithfulness regressed.") and cls == "bad", line
    text = summary_text({"faithfulness": new}, {"production": settled}, decision, ["faithfulness"])
    (table_row,) = [x for x in text.splitlines() if x.startswith("faithfulness ")]
    assert f"{row.labelled_diff:+.3f}" in table_row and "(human labels) regressed" in table_row
    assert "inconclusive" not in table_row and "undecided" not in line

    # a drop the judge sees but cannot size: the row says "needs_labels", so do the line and the gate
    seen = faith([[0.3, *ps[1:]] if i < 48 else ps for i, ps in enumerate(probs)],
                 [f"new{i}" if i < 48 else f"old{i}" for i in range(len(probs))])
    raw = compare_runs({"faithfulness": seen}, {"faithfulness": old},
                       thresholds=TH.model_copy(update={"weak_judge": "labels"}), old_label="production")
    th = TH.model_copy(update={"weak_judge": "labels"})
    plans = labels_plans(raw, {"faithfulness": seen}, {"faithfulness": old}, run=RUN, thresholds=th)
    settled, decision = settle(raw, th, plans), gate_decision(raw, th, plans=plans)
    assert settled.row("faithfulness").verdict == "needs_labels" and decision.status == "needs_labels"
    cls, line = verdict_line({"production": settled}, decision)
    assert "Undecided vs production: faithfulness need labels" in line and cls == "hold", line


def test_a_gated_metric_this_config_does_not_measure_is_warned_once_and_the_gate_decides_on_the_rest() -> None:
    """Judges off, an unchanged system: the gate promotes, the line says so, and one warning names the setting."""
    from ragwatch.config import FullConfig
    from ragwatch.measured import unmeasured_gated

    config = FullConfig.model_validate({"evaluate": {"judges": {"enabled": []}, "gate": {
        "gated_metrics": ["system/hit_rate", "faithfulness", "e2e_failure_rate"]}}}).evaluate
    why = unmeasured_gated(config)
    assert set(why) == {"faithfulness", "e2e_failure_rate"}
    assert "evaluate.judges.enabled" in why["faithfulness"] and "evaluate.e2e.tables" in why["e2e_failure_rate"]
    hit = MetricResult.from_items("system/hit_rate", [ItemScore(item_id=f"q{i}", score=float(i % 2))
                                                      for i in range(40)], info=MetricInfo(binary=True))
    cmp = compare_runs({"system/hit_rate": hit}, {"system/hit_rate": hit}, thresholds=config.gate,
                       old_label="production")
    decision = gate_decision(cmp, config.gate, unmeasured=why)
    assert decision.promote and decision.status == "promote" and sorted(decision.unmeasured) == sorted(why)
    assert sum("'faithfulness'" in f for f in flag_lines(decision)) == 1
    assert not any("faith" in r for r in reason_lines(decision))
    text = summary_text({"system/hit_rate": hit}, {"production": cmp}, decision, ["system/hit_rate"])
    assert text.splitlines()[0].startswith("Same as production") and text.splitlines()[0].endswith("Gate: PROMOTED.")
    assert text.count("evaluate.judges.enabled") == 1  # said once, in the warnings
