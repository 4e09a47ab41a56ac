"""benchmarks/level_estimators.py and level_under_planted.py: the decision rule refuses an estimator for each
clause it fails and picks the lowest unseen-system error among those that pass; the planted drops group the
fabrications and read the shipped calibration and the recorded features only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the scripts import their sibling scripts as a script does (their own folder first on sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from benchmarks import level_estimators as le
from benchmarks import level_under_planted as lup

DATA = Path(__file__).resolve().parents[2] / "data" / "judge_dev" / "rag_statements"


def _scenario(errors: dict[str, list[float]], misses: dict[str, int]) -> le.Scenario:
    """Systems with readers' level 0.5; each candidate's errors; its first `misses` intervals miss."""
    sc = le.Scenario("synthetic")
    n = len(next(iter(errors.values())))
    for k in range(n):
        s = f"s{k}"
        sc.truth[s], sc.size[s] = 0.5, (10, 5)
        sc.rows[s] = {}
        for m in le.CANDIDATES:
            e = errors.get(m, errors["pcc"])[k]
            miss = k < misses.get(m, 0)
            sc.rows[s][m] = le.Row(0.5 + e, 0.9 if miss else 0.0, 1.0)
    return sc


def _drops(ratios: dict[str, float]) -> list[lup.Drop]:
    """Every fabrication kind with a readers' drop of 0.5 and each candidate's drop at its ratio."""
    return [lup.Drop(kind=k, answers=10, before=0.8, after=0.3,
                     estimators={m: 0.5 * ratios.get(m, 0.3) for m in le.CANDIDATES})
            for k in (*lup.FABRICATIONS, "fabrications")]


def test_the_rule_refuses_each_failing_clause_and_picks_the_lowest_unseen_error() -> None:
    base = [0.1, -0.1, 0.1, -0.1, 0.1]
    unseen = _scenario({"pcc": base, "acc": [0.2] * 5, "pacc": [0.11] * 5, "em": [0.105] * 5, "blend": [0.1] * 5},
                       {"em": 2})
    left_out = _scenario({"pcc": base, "pacc": [0.3] * 5}, {})
    drops = _drops({"acc": 1.0, "pacc": 1.0, "em": 1.0, "blend": 0.8, "verdict share": 0.4})
    winner, lines = le.decide(unseen, left_out, drops)
    text = "\n".join(lines)
    assert "| acc |" in text and "no: clause 2" in text  # RMSE 0.2 > 0.1 + 0.02
    assert "| pacc | 1.00, 1.00, 1.00 | 0.110 (0.120) | 0.300 (0.120) | 0 / 0 | no: clause 3 |" in text
    assert "| em | 1.00, 1.00, 1.00 | 0.105 (0.120) | 0.100 (0.120) | 2 / 0 | no: clause 4 |" in text
    assert "| verdict share | 0.40, 0.40, 0.40 |" in text and "no: clause 1" in text
    assert winner == "blend" and "blend replaces pcc" in lines[-1]
    winner, lines = le.decide(unseen, left_out, _drops({"blend": 0.49}))
    assert winner == "pcc" and lines[-1] == "Decision: no estimator passes; pcc stays."


def test_the_planted_drops_group_the_fabrications_and_need_no_labels_of_the_run() -> None:
    drops, n = lup.planted_drops(
        lup.shipped_level_calibration(), DATA / "more_statements.jsonl",
        [DATA / "features_P.jsonl", DATA / "features_P2.jsonl"], DATA / "planted_key.jsonl",
        [DATA / f for f in ("features.jsonl", "features_new.jsonl", "features_S4.jsonl", "features_S5.jsonl")])
    by_kind = {d.kind: d for d in drops}
    assert n == by_kind["all kinds"].answers > 0
    assert by_kind["fabrications"].answers == sum(by_kind[k].answers for k in lup.FABRICATIONS)
    assert [d.kind for d in drops][-2:] == ["fabrications", "all kinds"]
    for d in drops:  # careful readers find every kind of planted error a drop
        assert d.readers > 0 and set(d.estimators) == {*lup.METHODS, "verdict share"}
        assert d.ratio("pcc") == pytest.approx(d.estimators["pcc"] / d.readers)
