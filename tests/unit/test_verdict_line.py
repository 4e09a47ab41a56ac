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
from ragwatch.results import ItemScore, JudgeAgreement, MetricInfo, MetricResult

VERDICTS: tuple[str, ...] = get_args(Verdict)
STATUSES: tuple[str, ...] = get_args(GateStatus)
CAUSE = "the system did not answer: connection failed: ConnectError: [Errno 111] Connection refused"


def _gate(status: str) -> GateDecision:
    promote = status in ("promote", "no_baseline")
    reasons = [CAUSE] if status == "not_evaluated" else [f"reason for {status}"]
    return GateDecision(promote=promote, status=status, reasons=reasons)


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
        "regressed": names(r"Worse than [^:]+: ([m0-9, ]+) regressed"),
        "improved": names(r"Better than [^:]+: ([m0-9, ]+) improved") | names(r"\(improved: ([m0-9, ]+)\)"),
        "not_comparable": names(r"Not comparable: ([m0-9, ]+)[ .]"),
        "removed": names(r"Missing from this run: ([m0-9, ]+)[ .]"),
    }


@pytest.mark.parametrize("status", STATUSES)
def test_every_combination_of_row_verdicts_and_gate_statuses(status: str) -> None:
    gate = _gate(status)
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
                assert all(by_row[n].verdict == word for n in names), (word, names, line)
            # ... every metric the line names is in one of those clauses ...
            assert mentioned == set().union(*named.values()), line
            # ... and every gated regression / improvement, every non-comparable metric is named
            assert named["regressed"] == {r.metric for r in cmp.rows if r.gated and r.verdict == "regressed"}
            assert named["improved"] == {r.metric for r in cmp.rows if r.gated and r.verdict == "improved"}
            assert named["not_comparable"] == {r.metric for r in cmp.rows if r.verdict == "not_comparable"}
            assert named["removed"] == {r.metric for r in cmp.rows if r.gated and r.verdict == "removed"}
            assert ("Worse than production" in line) == bool(named["regressed"])
            assert ("Better than production" in line) == (bool(named["improved"]) and not named["regressed"])
            expected = ("bad" if status == "regressed" or named["regressed"]
                        else "hold" if status in ("hold", "needs_labels") else "ok")
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
