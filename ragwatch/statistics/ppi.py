"""Prediction-powered estimates: a few human labels plus a judge score on every item.

The estimator is PPI++ for a mean (Angelopoulos, Duchi, Zrnic 2023, "PPI++: Efficient
Prediction-Powered Inference", arXiv:2311.01453) with its power-tuning parameter lambda, written
for the case ragwatch has: the labelled items are a sample drawn from the judged items themselves
(possibly stratified, with known inclusion probabilities), not a separate data set. In that form
it is the difference estimator of survey sampling (Sarndal, Swensson, Wretman 1992, section 6.3):

    theta = mean over all N judged items of (lambda * f)  +  weighted mean over the n labelled
            items of (y - lambda * f)

where f is the judge's score and y the human label. Whatever the judge's bias, the second term
corrects it, so theta is unbiased for every fixed lambda; lambda = 0 gives the labelled-only
estimate, lambda = 1 classic PPI, and PPI++ picks the lambda that minimizes the variance
(clipped to [0, 1] as PPI++ does), so the estimate is never much worse than the labels alone and
much better when the judge tracks the labels.

The estimand is the mean human label on items like the evaluated ones (the population the items
were drawn from, which is what the judge-only bootstrap interval targets too). Its variance is

    (1 - n/N) * Var_w(y - lambda f) / n   +   Var_w(y) / N

(the sampling of labels among the N items, with the finite-population correction, plus the
sampling of the N items). Weights are 1 / inclusion probability, normalized to mean 1, so a
stratified or active label sample (`ragwatch.statistics.active`) is weighted back to the population
(Hajek form). With unequal weights the finite-population correction is per item, `1 - pi_i`
(the Poisson approximation of the design variance): `pi_i` is the item's inclusion probability
rescaled so that the labels given estimate N (`n / (N w_i)` with the normalized weight w_i), which
is exactly n/N for equal weights and stays right when only the first n of a larger drawn sample
were labelled. The interval uses the t quantile with n - 1 degrees of freedom, then is clipped to
the metric's scale.

We do not depend on the `ppi_python` package: it pulls numba/llvmlite, statsmodels and gdown (a
Google Drive downloader) for a mean that takes 30 lines of numpy; `tests/unit/test_ppi.py` checks
this module against hand-worked cases and by simulation.

Example:
    >>> import numpy as np
    >>> f_all = np.array([0.9, 0.8, 0.7, 0.9, 0.2, 0.8, 0.9, 0.1])   # judge on 8 items
    >>> labelled = np.array([0, 1, 4, 6])                            # people labelled 4 of them
    >>> est = ppi_mean(np.array([1.0, 1.0, 0.0, 1.0]), f_all[labelled], f_all, bounds=(0, 1))
    >>> round(est.estimate, 3), round(est.ci_low, 2), round(est.ci_high, 2), est.n_labels, est.n_items
    (0.713, 0.12, 1.0, 4, 8)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from pydantic import BaseModel
from scipy import stats


class PPIEstimate(BaseModel):
    """A prediction-powered mean, its interval, and the labelled-only interval for contrast."""

    estimate: float
    ci_low: float
    ci_high: float
    lam: float
    n_labels: int
    n_items: int
    labelled_only: float
    labelled_only_ci: tuple[float, float]
    confidence: float = 0.95


@lru_cache(maxsize=256)
def _t_quantile(confidence: float, df: int) -> float:
    """The two-sided t quantile (cached: simulations call this thousands of times with the same few df)."""
    return float(stats.t.ppf(0.5 + confidence / 2, df=df))


def _weights(weights: Sequence[float] | np.ndarray | None, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.isfinite(w).all() or (w <= 0).any():
        raise ValueError("weights must be one positive finite number per labelled item "
                         "(1 / inclusion probability)")
    return w / w.mean()


def _weighted_mean_var(x: np.ndarray, w: np.ndarray, fpc: np.ndarray | float = 1.0) -> tuple[float, float]:
    """Weighted mean and the linearized variance of that (Hajek) mean: sum fpc w^2 (x - m)^2 / (sum w)^2,
    scaled by n/(n-1); with equal weights and fpc 1 this is the usual s^2 / n."""
    n = x.size
    m = float((w * x).sum() / w.sum())
    v = float((fpc * w**2 * (x - m) ** 2).sum() / w.sum() ** 2) * n / (n - 1)
    return m, v


def power_tuned_lambda(y: np.ndarray, f_labelled: np.ndarray, f_all: np.ndarray, w: np.ndarray) -> float:
    """The lambda that minimizes Var(y - lambda f): Cov_w(y, f) / Var(f), clipped to [0, 1].

    Var(f) comes from all judged items (more precise than the labelled ones alone), as in PPI++.
    """
    var_f = float(np.var(f_all, ddof=1)) if f_all.size > 1 else 0.0
    if var_f <= 0.0:
        return 0.0  # a constant judge carries no information about differences between items
    my = (w * y).sum() / w.sum()
    mf = (w * f_labelled).sum() / w.sum()
    cov = float((w * (y - my) * (f_labelled - mf)).sum() / w.sum()) * y.size / (y.size - 1)
    return float(np.clip(cov / var_f, 0.0, 1.0))


def ppi_mean(
    y: Sequence[float] | np.ndarray,
    f_labelled: Sequence[float] | np.ndarray,
    f_all: Sequence[float] | np.ndarray,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    confidence: float = 0.95,
    lam: float | None = None,
    bounds: tuple[float, float] | None = None,
    noise: Sequence[float] | np.ndarray | None = None,
) -> PPIEstimate:
    """PPI++ mean of the human labels `y` given judge scores on the labelled items and on all items.

    `f_all` holds the judge score of every judged item (the labelled ones included); `weights` are
    1 / inclusion probability of each labelled item (None: a simple random sample). `lam=None`
    tunes lambda; pass a number to fix it (0: labels only, 1: classic PPI). `bounds` clips the
    interval to the metric's scale. `noise`: the standard deviation each labelled item's label has
    given the judge's calibrated probabilities (`ragwatch.review.spread.label_noise`); the labels'
    variance is then never taken below what that noise implies (a floor: a few labels of items the
    judge is sure of rarely show the rare disagreement that their weight makes count).
    """
    y_arr = np.asarray(y, dtype=float)
    f_lab = np.asarray(f_labelled, dtype=float)
    f = np.asarray(f_all, dtype=float)
    n, big_n = y_arr.size, f.size
    if f_lab.shape != y_arr.shape:
        raise ValueError(f"{y_arr.size} labels but {f_lab.size} judge scores on labelled items; align them")
    if n < 2:
        raise ValueError(f"{n} labelled item(s): at least 2 are needed for an interval; label more items")
    if big_n < n:
        raise ValueError(f"f_all has {big_n} items, fewer than the {n} labelled: pass the judge score of "
                         "every judged item, labelled ones included")
    if not (np.isfinite(y_arr).all() and np.isfinite(f).all() and np.isfinite(f_lab).all()):
        raise ValueError("labels and judge scores must be finite numbers")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    w = _weights(weights, n)
    tuned = power_tuned_lambda(y_arr, f_lab, f, w) if lam is None else float(lam)
    q = _t_quantile(confidence, n - 1)
    fpc = np.clip(1.0 - n / (big_n * w), 0.0, 1.0)  # 1 - pi_i; 1 - n/N for equal weights
    _, y_var = _weighted_mean_var(y_arr, w)
    y_pop_var = y_var * n  # Var_w(y) itself, for the item-sampling term

    floor_var = 0.0
    if noise is not None:
        sd = np.asarray(noise, dtype=float)
        if sd.shape != (n,) or not np.isfinite(sd).all() or (sd < 0).any():
            raise ValueError("noise must be one finite standard deviation >= 0 per labelled item")
        floor_var = float((fpc * w**2 * sd**2).sum() / w.sum() ** 2) * n / (n - 1)

    def interval(lam_: float) -> tuple[float, float, float]:
        rect_mean, rect_var = _weighted_mean_var(y_arr - lam_ * f_lab, w, fpc)
        rect_var = max(rect_var, floor_var)
        point = lam_ * float(f.mean()) + rect_mean
        half = q * math.sqrt(max(rect_var + y_pop_var / big_n, 0.0))
        low, high = point - half, point + half
        if bounds is not None:
            low, high = max(low, bounds[0]), min(high, bounds[1])
            point = min(max(point, bounds[0]), bounds[1])
        return point, low, high

    point, low, high = interval(tuned)
    only, only_low, only_high = interval(0.0)
    return PPIEstimate(estimate=point, ci_low=low, ci_high=high, lam=tuned, n_labels=n, n_items=big_n,
                       labelled_only=only, labelled_only_ci=(only_low, only_high), confidence=confidence)
