"""The drift decision rule: unpaired intervals, Holm's step-down for "drift" over a window's metrics,
two one-sided tests per metric for "no drift", and the window size an undecided metric would need.
The error rates are checked by simulation."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ragwatch.monitoring.drift import DriftComparison, DriftRow, Pair, compare_windows, decide
from ragwatch.monitoring.drift_size import Seen, answers_to_decide, decide_probability, round_up
from ragwatch.monitoring.settings import DriftSettings
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.statistics.intervals import unpaired_diff_interval

UNIT = (0.0, 1.0)


def _metric(name: str, values: list[float], binary: bool = False) -> MetricResult:
    items = [ItemScore(item_id=str(i), score=v) for i, v in enumerate(values)]
    return MetricResult.from_items(name, items, info=MetricInfo(binary=binary))


def _binary(rng: np.random.Generator, p: float, n: int) -> np.ndarray:
    return (rng.random(n) < p).astype(float)


def test_drift_verdicts_are_unpaired_and_say_so():
    rng = random.Random(0)
    same_a = [rng.random() * 0.2 + 0.7 for _ in range(400)]
    same_b = [rng.random() * 0.2 + 0.7 for _ in range(400)]
    worse = [rng.random() * 0.2 + 0.4 for _ in range(400)]
    few = [0.5, 0.9, 0.1]
    cmp = compare_windows({"a": _metric("a", same_a), "b": _metric("b", worse), "c": _metric("c", few)},
                          {"a": _metric("a", same_b), "b": _metric("b", same_b), "c": _metric("c", [0.2, 0.8, 0.4])},
                          DriftSettings(tolerance=0.05), new_window="2026-11-20", old_window="2026-11-19")
    rows = {r.metric: r for r in cmp.rows}
    assert {m: (r.verdict, r.direction) for m, r in rows.items()} == {
        "a": ("no drift", ""), "b": ("drift", "worse"), "c": ("undecided", "")}
    # Holm: b is shown at the first step (3 metrics); a and c print the 90% interval their verdict reads
    assert rows["b"].level == pytest.approx(1 - 0.05 / 3) and rows["a"].level == pytest.approx(0.9)
    assert rows["a"].diff_low >= -0.05 and rows["a"].diff_high <= 0.05
    assert rows["c"].diff_high - rows["c"].diff_low > 0.1
    assert all("unpaired" in r.method for r in cmp.rows) and cmp.drifted == ["b"]
    assert rows["c"].answers_to_decide and "answers would decide" in rows["c"].note
    assert "unpaired" in cmp.text()
    assert f"a window of ~{rows['c'].answers_to_decide:,} answers would decide" in cmp.text()


def test_holm_shows_what_bonferroni_would_miss():
    """A second metric whose interval excludes 0 at 1 - alpha/2 but not at 1 - alpha/3 reads "drift" once
    the first metric's large change is shown (Holm); Bonferroni (always 1 - alpha/3) would miss it."""
    n = 400
    old = np.array([1.0] * 240 + [0.0] * 160)  # 0.6
    bonferroni, holm = 1 - 0.05 / 3, 1 - 0.05 / 2
    for ones in range(240, 400):
        new = np.array([1.0] * ones + [0.0] * (n - ones))
        _, low_b, _ = unpaired_diff_interval(new, old, confidence=bonferroni, scale=UNIT)
        _, low_h, _ = unpaired_diff_interval(new, old, confidence=holm, scale=UNIT)
        if low_h > 0 >= low_b:
            break
    else:
        pytest.fail("no count lies between the two levels")
    pairs = {"big": Pair(np.array([0.0] * 300 + [1.0] * 100), np.array([1.0] * 300 + [0.0] * 100), UNIT),
             "edge": Pair(new, old, UNIT), "flat": Pair(old.copy(), old.copy(), UNIT)}
    rows = {r.metric: r for r in decide(pairs, DriftSettings())}
    assert rows["big"].verdict == "drift" and rows["big"].direction == "worse"
    assert rows["edge"].verdict == "drift" and rows["edge"].direction == "better"
    assert rows["edge"].diff_low is not None and rows["edge"].diff_low > 0  # the printed interval shows it
    assert rows["edge"].level == pytest.approx(holm)
    assert rows["flat"].verdict == "no drift" and rows["flat"].level == pytest.approx(0.9)


def test_false_alarms_of_drift_stay_within_alpha_for_the_window():
    """Six metrics, no change: any "drift" in a window comparison at most 5% of the time (Holm; the
    allowance is the simulation's own error: 300 repetitions); each metric tested alone at 95% would
    alarm far more often (1 - 0.95^6 = 26%), so the check tells the two apart."""
    rng = np.random.default_rng(7)
    reps, alarms, uncorrected = 300, 0, 0
    for _ in range(reps):
        pairs = {f"m{i}": Pair(_binary(rng, p, 150), _binary(rng, p, 150), UNIT)
                 for i, p in enumerate((0.5, 0.6, 0.7, 0.8, 0.9, 0.65))}
        alarms += any(r.verdict == "drift" for r in decide(pairs, DriftSettings()))
        uncorrected += any(decide({m: pair}, DriftSettings())[0].verdict == "drift" for m, pair in pairs.items())
    assert alarms / reps <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / reps)
    assert uncorrected / reps > 0.15


def test_no_drift_is_wrong_at_most_alpha_when_the_change_equals_the_tolerance():
    """A true change exactly at the tolerance is the hardest case for "no drift": TOST at 5% claims it
    about 5% of the time (its size at the boundary; the allowance is the simulation's own error), and
    "no drift on every metric" (the intersection) no more often."""
    rng = np.random.default_rng(11)
    reps, claims, all_claims = 600, 0, 0
    for _ in range(reps):
        pairs = {"edge": Pair(_binary(rng, 0.6, 300), _binary(rng, 0.7, 300), UNIT)}
        pairs |= {f"same{i}": Pair(_binary(rng, 0.7, 300), _binary(rng, 0.7, 300), UNIT) for i in range(2)}
        rows = decide(pairs, DriftSettings(tolerance=0.1))
        claims += rows[0].verdict == "no drift"
        all_claims += all(r.verdict == "no drift" for r in rows)
    allowance = 2 * math.sqrt(0.05 * 0.95 / reps)
    assert claims / reps <= 0.05 + allowance
    assert all_claims <= claims


def test_answers_to_decide_is_the_size_that_decides_four_times_in_five():
    """At the size it names for an undecided metric (no true change), the verdict is reached about 80%
    of the time; below it, much less often."""
    var = 0.6 * 0.4
    n = answers_to_decide(var_new=var, var_old=var, diff=0.0, tolerance=0.1, alpha=0.05, alpha_drift=0.05)
    assert n is not None and 350 < n < 450  # 2 * 0.24 * (z.95 + z.90)^2 / 0.1^2 = 411
    assert decide_probability(n, 2 * var, 0.0, 0.1, 0.05, 0.05) == pytest.approx(0.8, abs=0.01)
    rng = np.random.default_rng(3)

    def decided(size: int) -> float:
        hits = sum(decide({"m": Pair(_binary(rng, 0.6, size), _binary(rng, 0.6, size), UNIT)},
                          DriftSettings())[0].verdict != "undecided" for _ in range(200))
        return hits / 200

    assert 0.7 <= decided(n) <= 0.92
    assert decided(n // 4) < 0.4
    # a change shown needs fewer answers the larger it is; no spread, no extrapolation
    assert answers_to_decide(var_new=var, var_old=var, diff=0.3, tolerance=0.1, alpha=0.05, alpha_drift=0.01) < n
    assert answers_to_decide(var_new=0.0, var_old=0.0, diff=0.0, tolerance=0.1, alpha=0.05, alpha_drift=0.05) is None
    assert (round_up(1283), round_up(95), round_up(7)) == (1300, 95, 7)


def test_a_judged_metric_asks_for_a_larger_budget_not_a_longer_window():
    rng = np.random.default_rng(5)
    info = MetricInfo(family="judge", scale=(1.0, 5.0))
    new = MetricResult.from_items("answer_relevance", [ItemScore(item_id=str(i), score=float(v))
                                                       for i, v in enumerate(rng.integers(1, 6, 30))], info=info)
    old = MetricResult.from_items("answer_relevance", [ItemScore(item_id=str(i), score=float(v))
                                                       for i, v in enumerate(rng.integers(1, 6, 30))], info=info)
    row = compare_windows({"answer_relevance": new}, {"answer_relevance": old}).rows[0]
    assert row.verdict == "undecided" and row.judged and row.tolerance == pytest.approx(0.4)
    assert "judged answers per window (window.budget) would decide" in row.note


def test_the_size_that_would_decide_is_never_below_the_windows_size():
    """A window of 5 answers that read undecided never hears "~4 answers would decide": the normal
    approximation is widened to the intervals the windows gave, and the size named exceeds them. Swept
    over small windows of binary, Likert and continuous scores."""
    pairs = {"all_ones": Pair(np.ones(5), np.array([1.0, 0.0, 0.0, 0.0, 0.0]), UNIT),
             "x": Pair(np.array([0.1, 0.5, 0.9, 0.3, 0.7]), np.array([0.2, 0.6, 0.4, 0.8, 0.5]), UNIT),
             "y": Pair(np.array([0.3, 0.5, 0.6, 0.2, 0.9]), np.array([0.4, 0.1, 0.7, 0.5, 0.6]), UNIT)}
    row = decide(pairs, DriftSettings())[0]
    assert row.verdict == "undecided" and row.diff_low is not None and row.diff_low > 0  # shown at 90%, not by Holm
    assert row.answers_to_decide is not None and row.answers_to_decide > 5
    rng = np.random.default_rng(0)
    undecided = 0
    for rep in range(300):
        n = int(rng.integers(3, 40))
        kind = rep % 3
        if kind == 0:
            new, old, scale = _binary(rng, rng.random(), n), _binary(rng, rng.random(), n), UNIT
        elif kind == 1:
            new, old, scale = rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float), (1.0, 5.0)
        else:
            new, old, scale = rng.random(n), np.clip(rng.random(n) + rng.normal(0, 0.2), 0, 1), UNIT
        for r in decide({"m": Pair(new, old, scale), "z": Pair(rng.random(n), rng.random(n), UNIT)}, DriftSettings()):
            if r.verdict == "undecided":
                undecided += 1
                assert r.answers_to_decide is not None and r.answers_to_decide > max(r.n_new, r.n_old), r
    assert undecided > 300  # the sweep reached the rule it checks


def test_windows_without_spread_are_extrapolated_from_their_intervals():
    """Five identical scores a window are undecided (four identical scores do not claim certainty); the
    size named is larger, and two windows of that size read "no drift"."""
    row = decide({"m": Pair(np.ones(5), np.ones(5), UNIT)}, DriftSettings())[0]
    assert row.verdict == "undecided" and row.answers_to_decide is not None and row.answers_to_decide > 5
    n = row.answers_to_decide
    assert decide({"m": Pair(np.ones(n), np.ones(n), UNIT)}, DriftSettings())[0].verdict == "no drift"


def test_when_more_answers_would_not_decide_it_says_so():
    """No size decides a difference of exactly 0 against a tolerance of 0: None, and the verdict says
    more answers would not decide instead of naming a size."""
    assert answers_to_decide(var_new=0.2, var_old=0.2, diff=0.0, tolerance=0.0, alpha=0.05, alpha_drift=0.05,
                             seen=Seen(n_new=10, n_old=10, half_drift=0.3, half_same=0.25)) is None
    row = DriftRow(metric="m", new_score=0.5, old_score=0.5, diff=0.0, diff_low=-0.2, diff_high=0.2, n_new=10,
                   n_old=10)
    text = DriftComparison(label="vs previous window", new_window="a", old_window="b", confidence=0.95,
                           rows=[row]).text()
    assert "undecided: more answers would not decide (within the noise)" in text and "would decide" not in text
