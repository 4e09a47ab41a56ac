"""Intervals of a metric's mean and of differences between runs: coverage by simulation at small and
large n, width against Student's t, and the edge cases. The populations are
`ragwatch.simulation.intervals`, as in `benchmarks/interval_width.py` (which prints the full tables);
samples are seeded and vectorised."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.simulation import intervals as bench
from ragwatch.statistics.intervals import (
    bounded_intervals,
    mean_interval,
    paired_diff_interval,
    paired_diff_intervals,
    unpaired_diff_interval,
)

SIZES = (5, 10, 30, 100, 1000)
DRAWS = 1000
LIKERT = np.arange(1, 6, dtype=float)
FLOOR = 0.92
# the judge scores the benchmark resamples as kinds of their own
JUDGE_SCORES = bench.empirical_scores(
    Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "judge_choice_support.json")
KINDS = {k.name: k for k in bench.mean_kinds(JUDGE_SCORES)}
PAIRS = {k.name: k for k in bench.pair_kinds()}
# the fast subset; the other kinds run with the slow tests (and in the benchmark)
FAST = {"similarity 0.7 sd 0.1", "weighted faithfulness 85/15", "beta(2,0.3) piled near 1",
        "70% exactly 0, rest beta(1,3)", "mean of 3 Likert judges", "0/1: a change fixes 1 item in 10",
        "0/1: 5% fixed, 5% broken", "similarity +0.03, sd 0.1", "likert: 10% down, 10% up",
        "weighted faithfulness: 30% worse"}


def _params(names: list[str]) -> list[object]:
    return [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in names]


def _coverage(samples: np.ndarray, truth: float, scale: tuple[float, float]) -> float:
    lo, hi = scale
    low, high, _ = bounded_intervals((samples - lo) / (hi - lo))
    return float(np.mean((lo + (hi - lo) * low <= truth + 1e-12) & (truth - 1e-12 <= lo + (hi - lo) * high)))


def _t_width(samples: np.ndarray) -> np.ndarray:
    n = samples.shape[1]
    return 2 * scipy_stats.t.ppf(0.975, n - 1) * samples.std(axis=1, ddof=1) / np.sqrt(n)


def test_vectorised_intervals_are_mean_interval() -> None:
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 7, 40):
        rows = np.vstack([rng.beta(2, 0.5, (3, n)), np.ones((1, n)), np.full((1, n), 0.4),
                          (rng.random((1, n)) < 0.5).astype(float)])
        low, high, method = bounded_intervals(rows)
        for row, lo_, hi_, m in zip(rows, low, high, method, strict=True):
            assert mean_interval(row, scale=(0, 1))[1:] == pytest.approx((lo_, hi_, m))


@pytest.mark.parametrize("p", [0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 0.95, 0.99])
def test_proportion_interval_covers_at_every_n(p: float) -> None:
    rng = np.random.default_rng(int(p * 1000))
    for n in SIZES:
        samples = (rng.random((DRAWS, n)) < p).astype(float)
        assert _coverage(samples, p, (0.0, 1.0)) >= FLOOR, f"n={n}, p={p}"


@pytest.mark.parametrize(
    "probs",
    [
        (0.02, 0.03, 0.05, 0.15, 0.75),  # most mass on 5, a thin tail down to 1
        (0.0, 0.0, 0.0, 0.05, 0.95),  # nearly always 5
        (0.05, 0.0, 0.0, 0.0, 0.95),  # two points far apart
        (0.0, 0.0, 0.0, 0.5, 0.5),
        (0.2, 0.2, 0.2, 0.2, 0.2),
        (0.7, 0.2, 0.05, 0.03, 0.02),  # most mass on 1
        (0.0, 0.05, 0.1, 0.8, 0.05),  # piled on 4: often four or five identical 4s
        (0.0, 0.0, 0.9, 0.1, 0.0),  # a judge that nearly always says 3
    ],
)
def test_likert_interval_covers_at_every_n(probs: tuple[float, ...]) -> None:
    rng = np.random.default_rng(sum(int(q * 100) for q in probs))
    truth = float(np.dot(probs, LIKERT))
    for n in SIZES:
        samples = rng.choice(LIKERT, size=(DRAWS, n), p=probs)
        assert _coverage(samples, truth, (1.0, 5.0)) >= FLOOR, f"n={n}, probs={probs}"


@pytest.mark.parametrize("name", _params([k.name for k in bench.mean_kinds(JUDGE_SCORES) if k.group == "continuous"]))
def test_continuous_bounded_interval_covers(name: str) -> None:
    # similarity, probability-weighted judges, fractions, Likert means, scores piled at a bound,
    # mixtures, and judges' real P(yes) scores resampled
    kind = KINDS[name]
    rng = np.random.default_rng(7)
    for n in (5, 10, 15, 20, 30, 50, 100, 1000):
        assert _coverage(kind.sample(rng, (DRAWS, n)), kind.truth, kind.scale) >= FLOOR, f"n={n}"


@pytest.mark.parametrize("name", [k.name for k in bench.mean_kinds(JUDGE_SCORES) if k.width_checked])
def test_continuous_interval_is_about_as_tight_as_t(name: str) -> None:
    kind = KINDS[name]
    lo, hi = kind.scale
    rng = np.random.default_rng(8)
    for n in (20, 30, 50, 100):
        samples = kind.sample(rng, (DRAWS, n))
        low, high, _ = bounded_intervals((samples - lo) / (hi - lo))
        ratio = np.median((hi - lo) * (high - low)) / np.median(_t_width(samples))
        assert ratio <= 1.3, f"n={n}: {ratio:.2f}x t's median width"


def test_the_default_runs_similarity_interval_is_tight_now() -> None:
    # the default run printed `similarity 0.710 [0.407, 0.801]` at n=22 with the old augmented mean
    rng = np.random.default_rng(22)
    scores = np.clip(rng.normal(0.71, 0.1, 22), -1, 1)
    mean, low, high, method = mean_interval(scores, scale=(-1.0, 1.0))
    t_low, t_high = mean_interval(scores, scale=None)[1:3]
    assert method == "bounded-t" and low < mean < high
    assert high - low <= 1.3 * (t_high - t_low)
    assert high - low < 0.4 * (0.801 - 0.407)


def test_unbounded_t_interval_covers_normal_scores() -> None:
    rng = np.random.default_rng(3)
    for n in SIZES:
        hits = [low <= 12.0 <= high for low, high in
                (mean_interval(row, scale=None)[1:3] for row in rng.normal(12.0, 4.0, size=(DRAWS // 4, n)))]
        assert np.mean(hits) >= FLOOR, f"n={n}"


def test_identical_scores_do_not_claim_certainty() -> None:
    for scale, value in (((0.0, 1.0), 0.0), ((0.0, 1.0), 1.0), ((1.0, 5.0), 5.0), ((1.0, 5.0), 3.0),
                         ((-1.0, 1.0), 0.7)):
        mean, low, high, _ = mean_interval([value] * 4, scale=scale)
        assert mean == value
        assert low is not None and high is not None and low <= mean <= high
        assert high - low > 0.25 * (scale[1] - scale[0]), (scale, value, low, high)


def test_one_bounded_score_has_an_explicit_wide_interval() -> None:
    assert mean_interval([1.0], scale=(0, 1)).method == "agresti-coull"
    one = mean_interval([0.7], scale=(0, 1))
    assert one.method == "augmented-mean" and one.low is not None and one.high is not None
    assert one.high - one.low > 0.5


def test_interval_narrows_with_n_and_stays_inside_the_scale() -> None:
    rng = np.random.default_rng(0)
    widths = []
    for n in (5, 50, 500):
        values = rng.choice(LIKERT, size=n)
        mean, low, high, method = mean_interval(values, scale=(1.0, 5.0))
        assert 1.0 <= low <= mean <= high <= 5.0
        assert method == "bounded-t"
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]


def test_method_names() -> None:
    assert mean_interval([0, 1, 1], scale=(0, 1)).method == "agresti-coull"
    assert mean_interval([0.2, 1, 1], scale=(0, 1)).method == "bounded-t"
    assert mean_interval([0.2, 0.2], scale=(0, 1)).method == "augmented-mean"
    assert mean_interval([3.0, 4.0], scale=None).method == "t"
    one = mean_interval([3.0], scale=None)
    assert (one.mean, one.low, one.high) == (3.0, None, None)


def test_bad_input_says_what_to_do() -> None:
    with pytest.raises(ValueError, match="outside the scale"):
        mean_interval([0.5, 7.0], scale=(0, 1))
    with pytest.raises(ValueError, match="at least one value"):
        mean_interval([], scale=(0, 1))
    with pytest.raises(ValueError, match="failure"):
        mean_interval([float("nan")], scale=None)
    with pytest.raises(ValueError, match="high > low"):
        mean_interval([1.0], scale=(1, 1))
    with pytest.raises(ValueError, match="differ in length"):
        paired_diff_interval([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="failure"):
        paired_diff_interval([float("nan")], [1.0])


def test_metric_result_uses_the_declared_scale() -> None:
    items = [ItemScore(item_id=f"q{i}", score=5.0) for i in range(4)] + [ItemScore(item_id="x", error="no reply")]
    result = MetricResult.from_items("rubric", items, info=MetricInfo(scale=(1.0, 5.0)))
    assert (result.score, result.n_scored, result.n_failed) == (5.0, 4, 1)
    assert result.ci_method == "agresti-coull"
    assert result.ci_low is not None and result.ci_low < 4.0 and result.ci_high == 5.0

    ppl = MetricResult.from_items("perplexity", items, info=MetricInfo(direction="lower", scale=None))
    assert ppl.ci_method == "t" and ppl.ci_low == ppl.ci_high == 5.0  # unbounded identical values: no spread seen


def test_metric_result_with_an_undeclared_scale_says_so() -> None:
    items = [ItemScore(item_id=f"q{i}", score=s) for i, s in enumerate([2.0, 3.0, 4.0])]
    result = MetricResult.from_items("likert", items)  # default scale (0, 1) does not fit 1-5 scores
    assert result.ci_method is not None and result.ci_method.startswith("t (scores outside the declared scale")
    assert result.ci_low is not None and result.ci_low < 3.0 < result.ci_high


def test_no_scored_item_gives_no_interval() -> None:
    result = MetricResult.from_items("f", [ItemScore(item_id="q", error="timeout")])
    assert (result.score, result.ci_low, result.ci_high, result.ci_method) == (None, None, None, None)


# ------------------------------------------------------------------ differences between runs

def _paired_coverage(kind: bench.PairKind, n: int, scale: tuple[float, float] | None, seed: int) -> float:
    old, new = kind.sample(np.random.default_rng(seed), (DRAWS, n))
    if scale is None:
        low, high = bench.chosen_paired(old, new, bench.inferred_scale(old, new))
    else:
        _, low, high = paired_diff_intervals(new, old, scale)
    return float(np.mean((low <= kind.truth + 1e-12) & (kind.truth - 1e-12 <= high)))


# Sparse large changes (a tenth of the items moved a lot) at n = 20-50 are the known miss: 0.87-0.90,
# where t and the old percentile bootstrap cover 0.70-0.89 (benchmarks/interval_width.py --part paired).
HARD_PAIRS = {"similarity: 10% of items +0.1", "weighted faithfulness: 30% worse"}


@pytest.mark.parametrize("name", _params(list(PAIRS)))
def test_paired_difference_covers_at_every_n(name: str) -> None:
    kind = PAIRS[name]
    for n in (5, 10, 15, 20, 30, 50, 100, 1000):
        coverage = _paired_coverage(kind, n, kind.scale, seed=n)
        if name in HARD_PAIRS:
            d = np.subtract(*reversed(kind.sample(np.random.default_rng(n), (DRAWS, n))))
            half = scipy_stats.t.ppf(0.975, n - 1) * d.std(axis=1, ddof=1) / np.sqrt(n)
            t_coverage = np.mean(np.abs(d.mean(axis=1) - kind.truth) <= half)
            assert coverage >= min(FLOOR, t_coverage), f"n={n}: {coverage:.3f} (t {t_coverage:.3f})"
        else:
            assert coverage >= FLOOR, f"n={n}: {coverage:.3f}"


@pytest.mark.parametrize("name", ["0/1: a change fixes 1 item in 10", "0/1: 5% fixed, 5% broken",
                                  "likert: 1 in 10 up", "similarity +0.03, sd 0.1"])
def test_paired_difference_without_a_scale_still_covers(name: str) -> None:
    # what compare.py passes today: no scale; (0, 1) is inferred when the scores fit it
    for n in (10, 20, 50, 100):
        assert _paired_coverage(PAIRS[name], n, None, seed=100 + n) >= FLOOR, f"n={n}"


def test_paired_difference_is_as_tight_as_t_on_continuous_changes() -> None:
    kind = PAIRS["similarity +0.03, sd 0.1"]
    for n in (20, 50, 100):
        old, new = kind.sample(np.random.default_rng(n), (DRAWS, n))
        _, low, high = paired_diff_intervals(new, old, kind.scale)
        assert np.median(high - low) <= 1.2 * np.median(_t_width(new - old)), f"n={n}"


def test_identical_runs_give_zero_with_an_interval_that_claims_nothing() -> None:
    scores = np.random.default_rng(0).uniform(0.4, 1.0, 80)
    likert = [4, 5, 3, 4, 4, 5, 3, 4, 2, 5]
    for new, old, scale in ((scores, scores, None), (scores, scores, (0.0, 1.0)),
                            ([1, 0, 1, 1, 0], [1, 0, 1, 1, 0], None), (likert, likert, (1.0, 5.0))):
        diff, low, high = paired_diff_interval(new, old, scale=scale)
        assert diff == 0.0 and low < 0.0 < high
        assert high < 0.5 * (1 if scale is None else scale[1] - scale[0])
    # every score the same number, outside (0, 1) and no scale declared: no spread to go on
    assert paired_diff_interval([3.0] * 5, [3.0] * 5) == (0.0, 0.0, 0.0)
    assert paired_diff_interval([0.7] * 5, [0.7] * 5)[1] < 0  # within (0, 1): that scale is inferred


def test_paired_and_unpaired_handle_one_item() -> None:
    diff, low, high = paired_diff_interval([0.3], [0.5])
    assert diff == pytest.approx(-0.2) and low < diff < high
    diff, low, high = unpaired_diff_interval([0.3], [0.5, 0.6])
    assert diff == pytest.approx(-0.25) and low < diff < high


def test_paired_difference_stays_inside_the_possible_range() -> None:
    diff, low, high = paired_diff_interval([1] * 10, [0] * 10, scale=(0, 1))
    assert diff == 1.0 and 0 < low < 1 and high == 1.0
    diff, low, high = paired_diff_interval([5, 5], [1, 1], scale=(1, 5))
    assert diff == 4.0 and high == 4.0 and low < 4.0


@pytest.mark.parametrize("name", ["0/1: 0.95 vs 0.9", "similarity 0.7 vs 0.5", "likert mostly 5 vs 4-or-5",
                                  "weighted faithfulness vs bimodal"])
def test_unpaired_difference_covers(name: str) -> None:
    _, first, second = next(u for u in bench.unpaired_kinds() if u[0] == name)
    scale = (min(first.scale[0], second.scale[0]), max(first.scale[1], second.scale[1]))
    rng = np.random.default_rng(5)
    truth = first.truth - second.truth
    for n in (5, 10, 30, 100):
        a, b = first.sample(rng, (DRAWS // 2, n)), second.sample(rng, (DRAWS // 2, n))
        low, high = bench.chosen_unpaired(a, b, (np.full(len(a), scale[0]), np.full(len(a), scale[1])))
        assert np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high)) >= FLOOR, f"n={n}"
    # the public function is the vectorised one, row by row
    a, b = first.sample(rng, (3, 12)), second.sample(rng, (3, 9))
    for x, y in zip(a, b, strict=True):
        _, low, high = unpaired_diff_interval(x, y, scale=scale)
        m1, l1, u1, _ = mean_interval(x, scale=scale)
        m2, l2, u2, _ = mean_interval(y, scale=scale)
        assert low == pytest.approx(m1 - m2 - np.hypot(m1 - l1, u2 - m2))
        assert high == pytest.approx(m1 - m2 + np.hypot(u1 - m1, m2 - l2))
