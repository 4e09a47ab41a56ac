"""Intervals: the mean of a metric's item scores (`mean_interval`), differences between runs, bootstrap.

`mean_interval` picks an interval per kind of score (see its docstring); its coverage and width are
measured by `benchmarks/interval_width.py` and tested in `tests/unit/test_stats.py`. Differences between
two runs (`paired_diff_interval`, `unpaired_diff_interval`, the gate's intervals) use the same
machinery. `bootstrap_statistic_ci` is a seeded percentile bootstrap for statistics without a closed
form (kappa, AUC).

Example:
    >>> mean_interval([1, 1, 1, 1], scale=(0, 1)).method  # four identical scores do not mean certainty
    'agresti-coull'
    >>> round(mean_interval([1, 1, 1, 1], scale=(0, 1)).low, 2)
    0.43
    >>> mean_interval([0.7, 0.8, 0.65, 0.75, 0.9, 0.7], scale=(-1, 1)).method
    'bounded-t'
    >>> diff, low, high = paired_diff_interval([1, 0, 1, 1], [1, 0, 1, 1], scale=(0, 1))
    >>> diff == 0 and low < 0 < high  # identical runs: no change seen, and no claim of certainty either
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

DEFAULT_RESAMPLES = 2000
# Small samples can miss a whole mode of the scores (the tenth of answers that fail outright). Below
# ~20 items the bounded interval adds Agresti-Coull's pseudo-scores at the ends of the scale, weighted
# exp(-(n/SMALL_N)^2) (37% at n=10, 10% at n=15, 2% at n=20) and by how spread the scores are:
# min(1, SPREAD * s^2 / (m(1-m))), full from a tenth of the most a score with mean m can vary. Tight
# clusters (similarity) get little, spread-out judge probabilities the whole guard. Chosen by
# simulation (benchmarks/interval_width.py): without the spread factor, no fade leaves both weighted
# faithfulness (85% near 1, 15% near 0) at n=15 and tight similarity at n=20 (within 1.3x t) in
# bounds: exp(-(n/8)^2) covers 0.916 at n=15, and a fade slow enough to cover costs 1.6x t at n=20.
SMALL_N = 10.0
SPREAD = 10.0


class Interval(NamedTuple):
    """A mean with its interval; `low`/`high` are None where no interval exists (one unbounded value)."""

    mean: float
    low: float | None
    high: float | None
    method: str


def mean_interval(
    values: Sequence[float], *, scale: tuple[float, float] | None, confidence: float = 0.95
) -> Interval:
    """Mean of item scores with an interval chosen for the kind of score.

    - 0/1 scores (every score at an end of `scale`): Agresti-Coull ("agresti-coull") with an n/(n-1)
      variance factor: coverage >= 0.92 for every p at n >= 3, where Wilson dips to 0.91 (n=10, p=0.05)
      and Jeffreys to 0.89 (n=50, p=0.05).
    - Other bounded scores (similarity, probability-weighted judges, 1-5 Likert): "bounded-t",
      Student's t corrected for skew two ways, spanning both: Hall's (1992) transformation with the
      sample skewness (shrunk towards 0 by its jackknife variance, as noisy skewness misplaces the
      interval), and the Wilson score form with the effective sample size n*m*(1-m)/s^2 (the skew a
      bounded scale imposes near its ends). Below ~20 items, Agresti-Coull's pseudo-scores at the
      ends of the scale, fading with n and scaled by the scores' spread (`SMALL_N`, `SPREAD`), guard
      against a mode the sample missed.
      Within 1.25x t's median width from n = 20 on where t covers (the old augmented mean was 4-10x
      wider on similarity-like scores), coverage >= 0.92 from n = 5 where t falls to 0.7.
    - Identical bounded scores (n=1 included): the augmented mean ("augmented-mean", z^2/2
      pseudo-scores at each end of the scale): four identical scores do not claim certainty.
    - Unbounded scores (`scale=None`, e.g. perplexity): Student's t ("t"); one value has none.
    Every bounded interval lies inside the scale. The point estimate is always the plain mean.
    `benchmarks/interval_width.py` measures coverage and width per kind; what no interval near t's
    width can cover (a tenth of the items far off, unseen in a sample of 20) is listed there.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("mean_interval needs at least one value")
    if not np.all(np.isfinite(data)):
        raise ValueError("mean_interval got a non-finite score; record that item as a failure instead")
    mean = float(data.mean())
    if scale is None:
        return _t_interval(data, mean, confidence)
    lo, hi = _check_scale(scale)
    if data.min() < lo or data.max() > hi:
        raise ValueError(
            f"scores between {data.min():g} and {data.max():g} fall outside the scale ({lo:g}, {hi:g}); "
            "declare the metric's scale (MetricInfo.scale, None when unbounded)"
        )
    low, high, method = bounded_intervals(((data - lo) / (hi - lo))[None, :], confidence=confidence)
    return Interval(mean, lo + (hi - lo) * float(low[0]), lo + (hi - lo) * float(high[0]), str(method[0]))


def bounded_intervals(
    rows: np.ndarray, *, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`mean_interval` for every row of `rows` (scores already rescaled to [0, 1]), vectorised.

    Returns (low, high, method) arrays; the benchmark and the coverage tests call this on thousands
    of simulated samples at once.
    """
    y = np.atleast_2d(np.asarray(rows, dtype=float))
    mean = y.mean(axis=1)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    binary = np.all((y == 0) | (y == 1), axis=1)
    identical = np.all(y == y[:, :1], axis=1) & ~binary
    low, high = _augmented(y, z)  # Agresti-Coull for 0/1 rows, the augmented mean for identical ones
    method = np.where(binary, "agresti-coull", "augmented-mean").astype(object)
    rest = ~(binary | identical)
    if rest.any():
        low[rest], high[rest] = _bounded_t(y[rest], confidence)
        method[rest] = "bounded-t"
    low = np.minimum(np.clip(low, 0.0, 1.0), mean)
    high = np.maximum(np.clip(high, 0.0, 1.0), mean)
    return low, high, method


def _augmented(y: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """z^2/2 pseudo-scores at each end of [0, 1], a normal interval from the augmented mean.

    The n/(n-1) variance factor matters: textbook Agresti-Coull dips to 0.90 coverage at n=5.
    """
    pseudo = z * z / 2
    n_aug = y.shape[1] + 2 * pseudo
    centre = (y.sum(axis=1) + pseudo) / n_aug
    variance = np.maximum(((y * y).sum(axis=1) + pseudo) / n_aug - centre**2, 0.0) * n_aug / (n_aug - 1)
    half = z * np.sqrt(variance / n_aug)
    return centre - half, centre + half


def small_sample_weight(n: int) -> float:
    """How much of the small-sample guard is left at n items (see SMALL_N)."""
    return math.exp(-((n / SMALL_N) ** 2))


def _bounded_t(
    y: np.ndarray,
    confidence: float,
    *,
    fade: Callable[[int], float] = small_sample_weight,
    spread: float | None = SPREAD,
    hall: bool = True,
    wilson: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """The "bounded-t" interval of each row of y in [0, 1] (rows neither 0/1 nor identical, n >= 2).

    `fade`, `spread` (None: the guard ignores the spread), `hall` and `wilson` exist for the
    benchmark's ablations; without either correction the interval is the augmented t interval.
    """
    from scipy import stats as scipy_stats  # ~1 s to import; config validation needs none of it

    n = y.shape[1]
    q = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1))
    m = y.mean(axis=1)
    relative_spread = y.var(axis=1, ddof=1) / (m * (1 - m))  # m is inside (0, 1): neither 0/1 nor identical
    pseudo = q * q / 2 * fade(n) * (1.0 if spread is None else np.minimum(1.0, spread * relative_spread))
    n_aug = n + 2 * pseudo
    centre = (y.sum(axis=1) + pseudo) / n_aug
    variance = (((y - centre[:, None]) ** 2).sum(axis=1) + pseudo * (centre**2 + (1 - centre) ** 2)) / (n_aug - 1)
    se = np.sqrt(variance / n_aug)

    # Hall's transformation of the t statistic, with the data's own (shrunk) skewness
    a = _shrunk_skewness(y) / (3 * math.sqrt(n)) if hall else np.zeros(y.shape[0])
    b = a / 2

    def inverse(x: float) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.abs(a) < 1e-9, x - b, (np.cbrt(1 + 3 * a * (x - b)) - 1) / a)

    hall_low, hall_high = centre - se * inverse(q), centre - se * inverse(-q)

    # Wilson's score interval at the effective sample size: the skew of a mean near a bound
    n_eff = n_aug * centre * (1 - centre) / variance
    k = q * q / n_eff
    mid = (centre + k / 2) / (1 + k)
    half = q / (1 + k) * np.sqrt(variance / n_aug + q * q / (4 * n_eff * n_eff))
    if not wilson:
        return hall_low, hall_high
    if not hall:
        return mid - half, mid + half
    return np.minimum(hall_low, mid - half), np.maximum(hall_high, mid + half)


def _shrunk_skewness(y: np.ndarray) -> np.ndarray:
    """Sample skewness of each row, shrunk by positive-part James-Stein with its jackknife variance.

    Sparse symmetric scores (mostly 3s, a few 1s and 5s) have a skewness estimate that swings with
    the very counts that move the mean; unshrunk, Hall's correction then leans the wrong way.
    """
    n = y.shape[1]
    if n < 3:
        return np.zeros(y.shape[0])

    def skewness(s1: np.ndarray, s2: np.ndarray, s3: np.ndarray, k: int) -> np.ndarray:
        m = s1 / k
        m2 = s2 / k - m * m
        m3 = s3 / k - 3 * m * s2 / k + 2 * m**3
        var = m2 * k / (k - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(var > 1e-14, m3 / np.maximum(var, 1e-300) ** 1.5, 0.0)

    s1, s2, s3 = (np.sum(y**p, axis=1, keepdims=True) for p in (1, 2, 3))
    g = skewness(s1, s2, s3, n)[:, 0]
    loo = skewness(s1 - y, s2 - y**2, s3 - y**3, n - 1)  # leave-one-out, all at once
    jack_var = (n - 1) / n * ((loo - loo.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = np.where(g * g > 0, np.clip(1 - jack_var / (g * g), 0.0, 1.0), 0.0)
    return g * keep


def _t_interval(data: np.ndarray, mean: float, confidence: float) -> Interval:
    if data.size < 2:
        return Interval(mean, None, None, "t (one value: no interval)")
    from scipy import stats as scipy_stats  # ~1 s to import; config validation needs none of it

    t_quantile = float(scipy_stats.t.ppf(0.5 + confidence / 2, data.size - 1))
    half = t_quantile * float(data.std(ddof=1)) / math.sqrt(data.size)
    return Interval(mean, mean - half, mean + half, "t")


def _check_scale(scale: tuple[float, float]) -> tuple[float, float]:
    lo, hi = float(scale[0]), float(scale[1])
    if not hi > lo:
        raise ValueError(f"scale {scale} is empty: it must be (low, high) with high > low")
    return lo, hi


def _diff_scale(scale: tuple[float, float] | None, *samples: np.ndarray) -> tuple[float, float]:
    """The scale of two runs' scores: the metric's, widened to the scores where they fall outside it
    (a gate must not crash on an undeclared scale); without one, (0, 1) when every score fits it
    (the default of `MetricInfo.scale`), else the range the scores span."""
    if not all(np.all(np.isfinite(s)) for s in samples):
        raise ValueError("a difference got a non-finite score; record that item as a failure instead")
    lo = min(float(s.min()) for s in samples)
    hi = max(float(s.max()) for s in samples)
    if scale is not None:
        declared = _check_scale(scale)
        return min(declared[0], lo), max(declared[1], hi)
    return (0.0, 1.0) if lo >= 0.0 and hi <= 1.0 else (lo, hi)


def paired_diff_intervals(
    new: np.ndarray, old: np.ndarray, scale: tuple[float | np.ndarray, float | np.ndarray], *,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean of `new - old` over paired items with its interval, for every row, vectorised.

    `scale` is (low, high), numbers or one per row, with high > low and every score inside.
    0/1 scores: Bonett and Price's (2012) adjusted Wald interval for paired proportions (one
    pseudo-pair discordant each way). Other scores: the "bounded-t" interval of the differences on
    their scale (-(hi-lo), hi-lo); all-zero differences get the augmented mean's width, not zero.
    """
    a, b = np.atleast_2d(np.asarray(new, dtype=float)), np.atleast_2d(np.asarray(old, dtype=float))
    rows = a.shape[0]
    lo = np.broadcast_to(np.asarray(scale[0], dtype=float), (rows,))[:, None]
    hi = np.broadcast_to(np.asarray(scale[1], dtype=float), (rows,))[:, None]
    width = hi - lo
    d = (a - b) / width  # in [-1, 1]
    mean = d.mean(axis=1)
    low, high, _ = bounded_intervals((d + 1) / 2, confidence=confidence)
    low, high = 2 * low - 1, 2 * high - 1
    ends = ((a == lo) | (a == hi)) & ((b == lo) | (b == hi))
    binary = np.all(ends, axis=1)
    if binary.any():
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        n = d.shape[1]
        up = (d[binary] > 0).sum(axis=1)
        down = (d[binary] < 0).sum(axis=1)
        p_up, p_down = (up + 1) / (n + 2), (down + 1) / (n + 2)
        centre = p_up - p_down
        half = z * np.sqrt(np.maximum(p_up + p_down - centre**2, 0.0) / (n + 2))
        low[binary], high[binary] = centre - half, centre + half
    low = np.minimum(np.clip(low, -1.0, 1.0), mean)
    high = np.maximum(np.clip(high, -1.0, 1.0), mean)
    width = width[:, 0]
    return width * mean, width * low, width * high


def paired_diff_interval(
    new: Sequence[float],
    old: Sequence[float],
    *,
    confidence: float = 0.95,
    scale: tuple[float, float] | None = None,
) -> tuple[float, float, float]:
    """Mean of `new - old` over paired items, with its interval (`paired_diff_intervals`).

    `scale` is the metric's (`MetricInfo.scale`); without it, (0, 1) when every score fits, else the
    range the scores span; when every score is the same number there is no spread to go on and
    the interval is the point. Nothing is resampled (the percentile bootstrap this replaced covered
    0.09-0.85 at n=5 and 0.17-0.91 at n=10 in benchmarks/interval_width.py: zero width whenever no
    item changed).
    """
    a, b = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} vs {b.size}")
    if a.size == 0:
        raise ValueError("paired differences need at least one pair")
    lo, hi = _diff_scale(scale, a, b)
    if not hi > lo:
        return 0.0, 0.0, 0.0
    diff, low, high = paired_diff_intervals(a[None, :], b[None, :], (lo, hi), confidence=confidence)
    return float(diff[0]), float(low[0]), float(high[0])


def unpaired_diff_interval(
    new: Sequence[float],
    old: Sequence[float],
    *,
    confidence: float = 0.95,
    scale: tuple[float, float] | None = None,
) -> tuple[float, float, float]:
    """Difference of means `mean(new) - mean(old)` of two independent samples, with its interval.

    MOVER (Zou and Donner 2008; Newcombe's method 10 for proportions): each side of the interval
    combines the two `mean_interval`s' distances to their means, so the difference inherits their
    coverage at small n and near the ends of the scale. `scale`: as for `paired_diff_interval`.
    """
    a, b = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("both samples need at least one value")
    lo, hi = _diff_scale(scale, a, b)
    diff = float(a.mean() - b.mean())
    if not hi > lo:
        return diff, diff, diff
    m1, l1, u1, _ = mean_interval(a, scale=(lo, hi), confidence=confidence)
    m2, l2, u2, _ = mean_interval(b, scale=(lo, hi), confidence=confidence)
    assert l1 is not None and u1 is not None and l2 is not None and u2 is not None  # bounded: always set
    low = diff - math.hypot(m1 - l1, u2 - m2)
    high = diff + math.hypot(u1 - m1, m2 - l2)
    return diff, low, high


def bootstrap_statistic_ci(
    statistic: Callable[[np.ndarray], float | None],
    n_items: int,
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    point: float | None = None,
) -> tuple[float, float, float]:
    """Interval of any statistic of item indices, e.g. kappa over (judge, human) pairs.

    `statistic(indices)` computes the statistic on the items at `indices`, or returns None where it
    is undefined (e.g. kappa of a single class); those resamples are skipped. `point` overrides the
    point value (the statistic on all items), which is required when that is undefined.
    """
    if n_items == 0:
        raise ValueError("bootstrap_statistic_ci needs at least one item")
    if point is None:
        point = statistic(np.arange(n_items))
        if point is None:
            raise ValueError("the statistic is undefined on the full data: pass the point value as `point`")
    rng = np.random.default_rng(seed)
    values = [statistic(rng.integers(0, n_items, size=n_items)) for _ in range(resamples)]
    defined = np.asarray([v for v in values if v is not None], dtype=float)
    if defined.size == 0:
        return float(point), float(point), float(point)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(defined, [alpha, 1 - alpha])
    return float(point), float(low), float(high)
