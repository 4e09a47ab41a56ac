"""Active labelling: which items to label, with what probability, and how many labels a decision needs.

Active statistical inference (Zrnic and Candes 2024, "Active Statistical Inference", arXiv:2403.03208):
when the label of an item is drawn with probability `pi_i` and the estimate weights it by `1 / pi_i`
(`ragwatch.statistics.ppi.ppi_mean`), the estimate stays unbiased whatever the `pi_i`, and its variance,
about `sum_i (1 - pi_i) r_i^2 / pi_i / N^2` for the residuals `r_i = y_i - f_i`, is smallest when `pi_i`
is proportional to the expected size of the residual. We take that size from the judge itself: an item's
`spread` is the standard deviation its label is expected to have given the judge's calibrated
P(supported) (`sqrt(sum_j p_j (1 - p_j)) / m` over its m statements, `sqrt(p (1 - p))` for one score).
A uniform floor (`floor`, the share of the budget spread evenly) keeps every probability above zero, so
a judge that is confidently wrong on an item still has that item drawn now and then, and the estimate
stays unbiased when the spreads are wrong (they only cost width then, never correctness).

The draw (`draw_pps`) is the randomized systematic design of Hartley and Rao (1962): a random order,
then a systematic pass over the cumulated probabilities. Its sample has exactly `n` items and item `i`
is in it with exactly `pi_i`; shown in random order, any first `k` of them are a random subsample, so
the ratios of the inclusion probabilities (all a Hajek-weighted estimate uses) hold for every prefix.

`labels_needed` is the power computation: the fewest labels for which the interval of a difference of
the observed size would, with the asked power, lie wholly beyond the allowed drop; with power 1/2 and
the interval's own t quantile it is the fewest labels for an interval of a wanted width (the budget
planner, `ragwatch.review.plan`).

Example:
    >>> import numpy as np
    >>> probs = active_probabilities(np.array([0.5, 0.5, 0.1, 0.0]), n=2, floor=0.2)
    >>> [round(float(p), 3) for p in probs], round(float(probs.sum()), 6)
    ([0.827, 0.827, 0.245, 0.1], 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

DEFAULT_FLOOR = 0.2  # a fifth of the labelling budget is spread evenly over every item


def active_probabilities(spread: Sequence[float] | np.ndarray, n: int, *, floor: float = DEFAULT_FLOOR
                         ) -> np.ndarray:
    """Inclusion probabilities of `n` draws among `len(spread)` items, proportional to
    `(1 - floor) * spread_i / sum(spread) + floor / N`, capped at 1 (an item at 1 is taken for sure and
    the rest of the budget is shared the same way among the others); they sum to `min(n, N)`.
    """
    s = np.asarray(spread, dtype=float)
    big_n = s.size
    if big_n == 0:
        raise ValueError("no item to draw from")
    if not np.isfinite(s).all() or (s < 0).any():
        raise ValueError("spreads must be finite and >= 0 (the expected size of each item's label residual)")
    if not 0 < floor <= 1:
        raise ValueError(f"floor must be in (0, 1] so every item can be drawn, got {floor}")
    if n >= big_n:
        return np.ones(big_n)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    share = np.full(big_n, 1.0 / big_n) if s.sum() <= 0 else s / s.sum()
    size = (1 - floor) * share + floor / big_n
    probs = np.zeros(big_n)
    certain = np.zeros(big_n, dtype=bool)
    for _ in range(big_n):  # each pass fixes at least one more item at 1, or ends
        left = n - certain.sum()
        free = ~certain
        probs[free] = left * size[free] / size[free].sum()
        over = free & (probs >= 1.0)
        if not over.any():
            break
        certain |= over
        probs[certain] = 1.0
    return np.clip(probs, 0.0, 1.0)


def draw_pps(probs: Sequence[float] | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of a fixed-size sample in which item `i` is with probability `probs[i]` (randomized
    systematic sampling, Hartley-Rao), in random order. `sum(probs)` must be a whole number."""
    p = np.asarray(probs, dtype=float)
    total = float(p.sum())
    n = round(total)
    if abs(total - n) > 1e-6 or (p < 0).any() or (p > 1 + 1e-12).any():
        raise ValueError(f"inclusion probabilities must lie in [0, 1] and sum to a whole number, got {total:.6f}")
    order = rng.permutation(p.size)
    edges = np.concatenate([[0.0], np.cumsum(p[order])])
    points = rng.uniform() + np.arange(n)
    # item j (in the random order) is hit when a point falls in [edges[j], edges[j+1]); p <= 1 hits once
    hit = np.searchsorted(edges, points, side="right") - 1
    chosen = order[np.clip(hit, 0, p.size - 1)]
    return rng.permutation(chosen)


def ht_variance(spread: np.ndarray, probs: np.ndarray) -> float:
    """Expected variance of the labels' correction to a mean over N items: sum (1 - pi) v / pi / N^2,
    with `v = spread^2` the expected squared residual of each item (Poisson approximation)."""
    v = np.asarray(spread, dtype=float) ** 2
    p = np.asarray(probs, dtype=float)
    taken = p > 0
    return float(((1 - p[taken]) * v[taken] / p[taken]).sum() / p.size**2)


def labels_needed(spread: Sequence[float] | np.ndarray, gap: float, *,
                  residual: Sequence[float] | np.ndarray | None = None, scale: float = 1.0,
                  extra_variance: float = 0.0, floor: float = DEFAULT_FLOOR, confidence: float = 0.95,
                  power: float = 0.8, student: bool = False) -> int | None:
    """The fewest labels, drawn actively by `spread` among its N items, for which an estimate whose
    interval must clear `gap` does so with `power`: (q_conf + z_power) * SE <= gap.

    `residual`: the expected size of each item's label residual in the estimate (default: `spread`;
    zero where a label changes nothing, e.g. an answer both runs share); `scale` multiplies the
    estimate (a mean over part of the items, scaled to all); `extra_variance` is variance the
    labels do not reduce (the sampling of items). `student`: q_conf is Student's t with k - 1 degrees
    of freedom, as the prediction-powered interval's (`ragwatch.statistics.ppi.ppi_mean`); else the
    normal quantile. With `power=0.5` the condition is the interval's half-width <= gap, which
    sizes an interval of a wanted width (`ragwatch.review.plan`). None when even labels on every item
    would not do it.
    """
    if gap <= 0:
        return None
    draw = np.asarray(spread, dtype=float)

    def enough(k: int) -> bool:
        return interval_reach(draw, k, residual=residual, scale=scale, extra_variance=extra_variance,
                              floor=floor, confidence=confidence, power=power, student=student) <= gap

    most = draw.size
    if most < 2 or not enough(most):
        return None
    low, high = 2, most  # enough(high) holds; the variance falls as k grows
    if enough(low):
        return low
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high


def interval_reach(spread: Sequence[float] | np.ndarray, k: int, *,
                   residual: Sequence[float] | np.ndarray | None = None, scale: float = 1.0,
                   extra_variance: float = 0.0, floor: float = DEFAULT_FLOOR, confidence: float = 0.95,
                   power: float = 0.5, student: bool = False) -> float:
    """(q_conf + z_power) * SE of the estimate with `k` labels drawn actively by `spread` (the
    quantity `labels_needed` holds against its gap; with `power=0.5`, the interval's half-width)."""
    from scipy import stats  # ~0.3 s; config validation imports none of it

    draw = np.asarray(spread, dtype=float)
    res = draw if residual is None else np.asarray(residual, dtype=float)
    quantile = (stats.t.ppf(0.5 + confidence / 2, df=max(k - 1, 1)) if student
                else stats.norm.ppf(0.5 + confidence / 2))
    z = float(quantile + stats.norm.ppf(power))
    var = extra_variance + scale**2 * ht_variance(res, active_probabilities(draw, k, floor=floor))
    return z * math.sqrt(max(var, 0.0))
