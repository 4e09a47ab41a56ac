"""The gate decides in typed findings and `report.verdicts` words them: every kind has its words, a finding
carries the figures that decided, and decisions and rows stored by older runs (reasons as words, a row's
`gate_note`) still load, as JSON and as pickles, and read as they did (no ZenML)."""

from __future__ import annotations

import pickle
import typing

from ragwatch.artifacts import RunComparisons
from ragwatch.decision.compare import Comparison, MetricComparison, compare_runs
from ragwatch.decision.gate import GateDecision, gate_decision, other_eval_set, promotion_off
from ragwatch.decision.reasons import GateReason, ReasonKind
from ragwatch.decision.thresholds import GateThresholds, JudgeStanding, weak_judge_blocks
from ragwatch.report import verdicts
from ragwatch.report.summary import gate_label, summary_text
from ragwatch.report.verdicts import flag_lines, reason_lines, row_note
from ragwatch.results import ItemScore, MetricInfo, MetricResult

BELOW = JudgeStanding("below_bar", "judge agreement kappa 0.48 < gate.min_judge_kappa 0.60", "bar words")


def _hit(values: list[int]) -> MetricResult:
    return MetricResult.from_items("system/hit_rate", [ItemScore(item_id=f"q{i}", score=float(v))
                                                       for i, v in enumerate(values)], info=MetricInfo(binary=True))


def test_every_kind_has_its_words() -> None:
    assert set(typing.get_args(ReasonKind)) == set(verdicts._SAY)


def test_a_regression_is_a_typed_finding_with_the_figures_that_decided() -> None:
    old, new = _hit([1] * 36 + [0] * 4), _hit([1] * 20 + [0] * 20)
    th = GateThresholds(default_allowed_drop=0.02)
    cmp = compare_runs({"system/hit_rate": new}, {"system/hit_rate": old}, thresholds=th, old_label="production")
    decision = gate_decision(cmp, th)
    (found,) = decision.reasons
    row = cmp.row("system/hit_rate")
    assert (found.kind, found.metric, found.rule, found.n) == ("regressed", "system/hit_rate", None, 40)
    assert (found.diff, found.low, found.high) == row.decided_interval and found.allowed_drop == 0.02
    assert reason_lines(decision) == [verdicts.regressed(found)]
    assert reason_lines(decision)[0].startswith("system/hit_rate regressed: dropped by 0.400 (0.900 -> 0.500")
    # the decision read back from its JSON (the ZenML artifact) says the same
    back = GateDecision.model_validate_json(decision.model_dump_json())
    assert back == decision and reason_lines(back) == reason_lines(decision)


def test_the_weak_judge_rule_is_one_function_read_by_compare_and_gate() -> None:
    assert weak_judge_blocks(BELOW, "regressed", "paired")
    assert not weak_judge_blocks(BELOW, "regressed", "labels")
    assert not weak_judge_blocks(BELOW, "inconclusive", "paired")
    assert not weak_judge_blocks(BELOW._replace(kind="unknown"), "regressed", "paired")
    assert not weak_judge_blocks(None, "regressed", "paired")
    row = MetricComparison(metric="faithfulness", verdict="regressed", note=BELOW.reason, standing=BELOW,
                           gate_rule="weak_judge_paired")
    assert row_note(row) == (f"{BELOW.reason}, but its own paired difference (same judge and calibration in both "
                             "runs) blocks a clear regression (gate.weak_judge: paired)")


def test_decisions_that_only_add_a_note_keep_the_rest() -> None:
    passed = GateDecision(promote=True, reasons=[GateReason(kind="passed", baseline="production", counts={"x": 1})])
    off = promotion_off(passed)
    assert off.status == "promotion_off" and [r.kind for r in off.reasons] == ["passed", "promotion_off"]
    assert reason_lines(other_eval_set(off))[-1].startswith("production was evaluated on a different evaluation set")
    not_evaluated = GateDecision(promote=False, status="not_evaluated", reasons=["cause", "action"])
    assert other_eval_set(not_evaluated) == not_evaluated


OLD_GATE = {"promote": False, "status": "regressed", "unmeasured": [],
            "reasons": ["faithfulness regressed: dropped by 0.2 (as an older run wrote it)"],
            "flags": ["faithfulness: the judge gave every item 1.000 in this run"]}
OLD_ROW = {"metric": "faithfulness", "verdict": "needs_labels", "gated": True, "note": "stored; needs labels: words",
           "gate_role": "needs", "gate_note": "faithfulness needs labels: as stored"}


def test_an_older_runs_decision_and_rows_load_from_json_and_read_as_they_were_written() -> None:
    stored = {"production": {"new_label": "this run", "old_label": "production", "rows": [OLD_ROW]},
              "gate": OLD_GATE}
    back = RunComparisons.model_validate_json(RunComparisons.model_validate(stored).model_dump_json())
    assert back.gate is not None and [r.kind for r in back.gate.reasons] == ["said"]
    assert reason_lines(back.gate) == OLD_GATE["reasons"] and flag_lines(back.gate) == OLD_GATE["flags"]
    assert gate_label(back.gate) == "NOT PROMOTED (regression)"
    row = back.production.row("faithfulness") if back.production else None
    assert row is not None and row.gate_reason is not None and row.gate_reason.text == OLD_ROW["gate_note"]
    assert row_note(row) == OLD_ROW["note"]  # the stored note already says what the gate decided
    # the gate reads an old settled row as it did: its stored words are the reason
    again = gate_decision(Comparison(old_label="production", rows=[row]), GateThresholds())
    assert again.status == "needs_labels" and reason_lines(again) == [OLD_ROW["gate_note"]]
    text = summary_text({}, back.named(), back.gate, names=[])
    assert "  - faithfulness regressed: dropped by 0.2 (as an older run wrote it)" in text


def test_an_older_pickle_loads_with_typed_findings() -> None:
    # model_construct skips validation: the instance holds the older shape, as an older pickle does
    gate = GateDecision.model_construct(**OLD_GATE)
    row = MetricComparison.model_construct(**OLD_ROW)
    for name in ("gate_rule", "gate_reason"):  # fields an older row did not have
        row.__dict__.pop(name, None)
    row.__dict__["gate_note"] = OLD_ROW["gate_note"]  # and one it had
    gate_back, row_back = pickle.loads(pickle.dumps(gate)), pickle.loads(pickle.dumps(row))
    assert isinstance(gate_back.reasons[0], GateReason) and reason_lines(gate_back) == OLD_GATE["reasons"]
    assert row_back.gate_rule is None and row_back.gate_reason is not None
    assert row_note(row_back) == OLD_ROW["note"]
