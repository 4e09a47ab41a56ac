"""Bootstrap intervals (percentile method, seeded so that the same inputs give the same interval).

Example:
    >>> mean, low, high = bootstrap_mean_ci([1, 0, 1, 1], seed=0)
    >>> low <= mean <= high
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

DEFAULT_RESAMPLES = 2000


def bootstrap_mean_ci(
    values: Sequence[float], *, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of `values` and the percentile bootstrap interval of the mean."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("bootstrap_mean_ci needs at least one value")
    mean = float(data.mean())
    if data.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return mean, float(low), float(high)


def bootstrap_paired_diff_ci(
    new: Sequence[float],
    old: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of `new - old` over paired items, with its bootstrap interval."""
    a, b = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} vs {b.size}")
    return bootstrap_mean_ci(a - b, confidence=confidence, resamples=resamples, seed=seed)


def bootstrap_unpaired_diff_ci(
    new: Sequence[float],
    old: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Difference of means `mean(new) - mean(old)` of two independent samples, with its interval."""
    a, b = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("both samples need at least one value")
    diff = float(a.mean() - b.mean())
    rng = np.random.default_rng(seed)
    da = a[rng.integers(0, a.size, size=(resamples, a.size))].mean(axis=1)
    db = b[rng.integers(0, b.size, size=(resamples, b.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(da - db, [alpha, 1 - alpha])
    return diff, float(low), float(high)


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
