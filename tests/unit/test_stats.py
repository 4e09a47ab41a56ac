"""The interval of a metric's mean: coverage by simulation at small and large n, and its edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.stats import mean_interval

SIZES = (5, 10, 30, 100, 1000)
DRAWS = 1000
LIKERT = np.arange(1, 6, dtype=float)


def _coverage(samples: np.ndarray, truth: float, scale: tuple[float, float] | None) -> float:
    hits = 0
    for row in samples:
        _, low, high, _ = mean_interval(row, scale=scale)
        hits += low is not None and high is not None and low <= truth <= high
    return hits / len(samples)


@pytest.mark.parametrize("p", [0.05, 0.1, 0.3, 0.5, 0.9, 0.95])
def test_proportion_interval_covers_at_every_n(p: float) -> None:
    rng = np.random.default_rng(int(p * 1000))
    for n in SIZES:
        samples = (rng.random((DRAWS, n)) < p).astype(float)
        assert _coverage(samples, p, (0.0, 1.0)) >= 0.92, f"n={n}, p={p}"


@pytest.mark.parametrize(
    "probs",
    [
        (0.02, 0.03, 0.05, 0.15, 0.75),  # most mass on 5, a thin tail down to 1
        (0.0, 0.0, 0.0, 0.05, 0.95),  # nearly always 5
        (0.05, 0.0, 0.0, 0.0, 0.95),  # two points far apart
        (0.0, 0.0, 0.0, 0.5, 0.5),
        (0.2, 0.2, 0.2, 0.2, 0.2),
        (0.7, 0.2, 0.05, 0.03, 0.02),  # most mass on 1
    ],
)
def test_likert_interval_covers_at_every_n(probs: tuple[float, ...]) -> None:
    rng = np.random.default_rng(sum(int(q * 100) for q in probs))
    truth = float(np.dot(probs, LIKERT))
    for n in SIZES:
        samples = rng.choice(LIKERT, size=(DRAWS, n), p=probs)
        assert _coverage(samples, truth, (1.0, 5.0)) >= 0.92, f"n={n}, probs={probs}"


def test_continuous_bounded_interval_covers() -> None:
    # probability-weighted scores: continuous in [0, 1], piled up near 1
    rng = np.random.default_rng(7)
    a, b = 2.0, 0.3
    for n in SIZES:
        assert _coverage(rng.beta(a, b, size=(DRAWS, n)), a / (a + b), (0.0, 1.0)) >= 0.92, f"n={n}"


def test_unbounded_t_interval_covers_normal_scores() -> None:
    rng = np.random.default_rng(3)
    for n in SIZES:
        assert _coverage(rng.normal(12.0, 4.0, size=(DRAWS, n)), 12.0, None) >= 0.92, f"n={n}"


def test_identical_scores_do_not_claim_certainty() -> None:
    for scale, value in (((0.0, 1.0), 0.0), ((0.0, 1.0), 1.0), ((1.0, 5.0), 5.0), ((1.0, 5.0), 3.0)):
        mean, low, high, _ = mean_interval([value] * 4, scale=scale)
        assert mean == value
        assert low is not None and high is not None and low <= mean <= high
        assert high - low > 0.25 * (scale[1] - scale[0]), (scale, value, low, high)


def test_interval_narrows_with_n_and_stays_inside_the_scale() -> None:
    rng = np.random.default_rng(0)
    widths = []
    for n in (5, 50, 500):
        values = rng.choice(LIKERT, size=n)
        mean, low, high, method = mean_interval(values, scale=(1.0, 5.0))
        assert 1.0 <= low <= mean <= high <= 5.0
        assert method == "augmented-mean"
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]


def test_method_names() -> None:
    assert mean_interval([0, 1, 1], scale=(0, 1)).method == "agresti-coull"
    assert mean_interval([0.2, 1, 1], scale=(0, 1)).method == "augmented-mean"
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
