"""The level of a share from a classifier's readings, with an interval that knows the calibration.

A judge reads every unit of a run (statements of answers); a calibration set of units with reference
labels says how the judge's features map to the truth. The level is the mean over the run's items of
the item's expected positive share, estimated one of four ways (the quantification literature's names;
Forman 2008, Bella et al. 2010, Saerens et al. 2002):

- `pcc` (probabilistic classify and count): the mean of calibrated P(positive), from a logistic model
  fitted for calibration (maximum likelihood, lightly L2-regularized, no class weights). Right when
  P(y | features) is the same in the run as in the calibration set.
- `acc` (adjusted count, Rogan-Gladen): the verdict share corrected by the verdicts' sensitivity and
  false-positive rate on the calibration set: (share - fpr) / (tpr - fpr), clipped to [0, 1]. Right when
  the features of each class are distributed as in the calibration set (only the prevalence moves).
- `pacc`: the same correction applied to the mean calibrated probability.
- `em` (Saerens-Latinne-Decaestecker): the calibrated probabilities re-weighted to the run's own
  prevalence by expectation-maximization; right under the same assumption as `acc`, with less variance.

Every estimate is a weighted mean over units: a unit of an item with n units weighs 1 / (n * items), so
the level is the mean of item shares, not the share of units.

The interval carries both uncertainties: each bootstrap replicate resamples the calibration set by group
(all units of an answer together) and refits the model on it, and resamples the run's items; the
interval is the replicates' 2.5% and 97.5% percentiles. Coverage: `tests/unit/test_level.py` (a seeded
simulation whose run prevalence differs from the calibration set's).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(200) < 0.5
    >>> x = (rng.normal(size=200) + 1.5 * y)[:, None]
    >>> cal = CalibrationSet(x=x, y=y, groups=np.arange(200) // 2)
    >>> est = estimate_level(cal, x[:40], np.arange(40) // 2, method="pcc", resamples=200)
    >>> 0 <= est.ci_low <= est.estimate <= est.ci_high <= 1
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel

Method = Literal["pcc", "acc", "pacc", "em"]
METHODS: tuple[Method, ...] = ("pcc", "acc", "pacc", "em")
DEFAULT_L2 = 1.0  # as scikit-learn's C=1: a light pull that keeps a separating flag's weight finite
_NEWTON_STEPS = 50
_EM_STEPS = 200
_MIN_GAP = 0.05  # tpr - fpr (or m1 - m0) below this: the correction is undefined, the estimate is not made


@dataclass(frozen=True)
class CalibrationSet:
    """Labelled units: features `x` (n, p), labels `y` (n,), `groups` (n,) that resample together,
    and optionally the shipped `verdicts` (n,) the `acc` correction needs."""

    x: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    verdicts: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.y)
        if self.x.ndim != 2 or self.x.shape[0] != n or len(self.groups) != n:
            raise ValueError(f"calibration set: x {self.x.shape}, y {len(self.y)}, groups {len(self.groups)} "
                             "must describe the same n units (x as an n x p matrix)")
        if self.verdicts is not None and len(self.verdicts) != n:
            raise ValueError(f"calibration set: {len(self.verdicts)} verdicts for {n} units")
        if n == 0 or self.y.all() or not self.y.any():
            raise ValueError(f"calibration set: {int(self.y.sum())} positive of {n} units; a level needs "
                             "labelled units of both classes")


class LevelEstimate(BaseModel):
    """A level, its 95% interval (run items and calibration refits resampled together), and its n."""

    method: str
    estimate: float
    ci_low: float
    ci_high: float
    n_items: int
    n_units: int
    n_calibration: int
    n_calibration_groups: int
    resamples: int
    verdict_share: float | None = None  # the item-mean share of positive verdicts, for contrast


def _design(x: np.ndarray) -> np.ndarray:
    return np.hstack([np.ones((x.shape[0], 1)), x])


def fit_logistic(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                 l2: float = DEFAULT_L2) -> np.ndarray:
    """Penalized maximum-likelihood logistic regression by Newton's method, for many weightings at once.

    `weights` (B, n) (or (n,), or None: all 1) -> coefficients (B, 1 + p) (intercept first; the
    intercept is not penalized). A bootstrap replicate is a weighting: unit i counted w_i times.
    """
    design = _design(np.asarray(x, dtype=float))
    y = np.asarray(y, dtype=float)
    w = np.ones((1, len(y))) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    b, d = w.shape[0], design.shape[1]
    penalty = l2 * np.eye(d)
    penalty[0, 0] = 0.0
    coef = np.zeros((b, d))
    for _ in range(_NEWTON_STEPS):
        p = _sigmoid(coef @ design.T)
        grad = (w * (y - p)) @ design - coef @ penalty
        hess = np.einsum("bn,ni,nj->bij", w * p * (1 - p), design, design) + penalty + 1e-9 * np.eye(d)
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        coef += step
        if np.max(np.abs(step)) < 1e-9:
            break
    return coef


def predict_logistic(coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(positive) of the units `x` (m, p) under each fit: (B, m) for coef (B, 1 + p)."""
    return _sigmoid(np.atleast_2d(coef) @ _design(np.asarray(x, dtype=float)).T)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(z, -40, 40)))


def item_weights(items: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """Unit weights that make a weighted unit mean the mean of item means: 1 / (n_item * items),
    times the item's bootstrap count when `counts` (B, items) is given -> (B, m), rows summing to 1."""
    items = np.asarray(items)
    _, index, sizes = np.unique(items, return_inverse=True, return_counts=True)
    counts = np.ones((1, len(sizes))) if counts is None else np.atleast_2d(counts)
    w = counts[:, index] / sizes[index]
    return w / w.sum(axis=1, keepdims=True)


def group_counts(groups: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap counts per unit (resamples, n): each replicate draws the groups with replacement."""
    _, index = np.unique(groups, return_inverse=True)
    n_groups = int(index.max()) + 1
    drawn = rng.multinomial(n_groups, np.full(n_groups, 1 / n_groups), size=resamples)
    return drawn[:, index].astype(float)


def levels(method: Method, p_run: np.ndarray, w_run: np.ndarray, *, p_cal: np.ndarray, y_cal: np.ndarray,
           w_cal: np.ndarray, v_run: np.ndarray | None = None, v_cal: np.ndarray | None = None) -> np.ndarray:
    """The level under each of B fits: p_run (B, m) or (m,), w_run (B, m) rows summing to 1;
    p_cal / w_cal (B, n) the calibration units' probabilities and weights under the same fits."""
    with np.errstate(divide="ignore", invalid="ignore"):  # a replicate without one class gives NaN, dropped later
        return _levels(method, np.atleast_2d(p_run), np.atleast_2d(w_run), np.atleast_2d(p_cal), y_cal,
                       np.atleast_2d(w_cal), v_run, v_cal)


def _levels(method: Method, p_run: np.ndarray, w_run: np.ndarray, p_cal: np.ndarray, y_cal: np.ndarray,
            w_cal: np.ndarray, v_run: np.ndarray | None, v_cal: np.ndarray | None) -> np.ndarray:
    y = np.asarray(y_cal, dtype=float)
    pos, neg = (w_cal * y).sum(1), (w_cal * (1 - y)).sum(1)
    if method == "pcc":
        return (p_run * w_run).sum(1)
    if method == "acc":
        if v_run is None or v_cal is None:
            raise ValueError("method 'acc' corrects verdicts: pass the verdicts of the run and of the calibration set")
        v = np.asarray(v_cal, dtype=float)
        tpr, fpr = (w_cal * v * y).sum(1) / pos, (w_cal * v * (1 - y)).sum(1) / neg
        share = (np.atleast_2d(np.asarray(v_run, dtype=float)) * w_run).sum(1)
        return _corrected(share, tpr, fpr)
    if method == "pacc":
        m1, m0 = (w_cal * p_cal * y).sum(1) / pos, (w_cal * p_cal * (1 - y)).sum(1) / neg
        return _corrected((p_run * w_run).sum(1), m1, m0)
    if method == "em":
        prior = pos / (pos + neg)
        pi = prior.copy()
        for _ in range(_EM_STEPS):
            a, b = (pi / prior)[:, None] * p_run, ((1 - pi) / (1 - prior))[:, None] * (1 - p_run)
            new = (w_run * a / (a + b)).sum(1)
            if np.max(np.abs(new - pi)) < 1e-8:
                pi = new
                break
            pi = np.clip(new, 1e-6, 1 - 1e-6)
        a, b = (pi / prior)[:, None] * p_run, ((1 - pi) / (1 - prior))[:, None] * (1 - p_run)
        return (w_run * a / (a + b)).sum(1)
    raise ValueError(f"unknown level method {method!r}; choose one of {list(METHODS)}")


def _corrected(share: np.ndarray, hit: np.ndarray, false_hit: np.ndarray) -> np.ndarray:
    """The corrected share where hit - false_hit >= _MIN_GAP; +inf (not finite) where the correction is
    undefined: `estimate_level` refuses such a point estimate and drops such replicates, so it never
    leaves this module."""
    gap = hit - false_hit
    defined = gap >= _MIN_GAP
    corrected = np.divide(share - false_hit, gap, out=np.full(np.shape(gap), np.inf), where=defined)
    return np.where(defined, np.clip(corrected, 0.0, 1.0), np.inf)


def estimate_level(cal: CalibrationSet, x_run: np.ndarray, items: np.ndarray, *, method: Method = "pcc",
                   verdicts: np.ndarray | None = None, resamples: int = 1000, seed: int = 0,
                   l2: float = DEFAULT_L2) -> LevelEstimate:
    """The run's level and its 95% interval.

    `x_run` (m, p): the run's units' features; `items` (m,): the item of each unit; `verdicts` (m,):
    the run's shipped verdicts (needed by `acc`; reported as `verdict_share` when given). Each of the
    `resamples` replicates refits the model on the calibration set resampled by group and resamples
    the run's items; the interval is their percentile interval.
    """
    x_run = np.asarray(x_run, dtype=float)
    items = np.asarray(items)
    if x_run.ndim != 2 or x_run.shape[0] != len(items) or x_run.shape[0] == 0:
        raise ValueError(f"run: features {x_run.shape} and {len(items)} item ids must describe the same m >= 1 units")
    if x_run.shape[1] != cal.x.shape[1]:
        raise ValueError(f"run units have {x_run.shape[1]} features, the calibration set {cal.x.shape[1]}")
    rng = np.random.default_rng(seed)
    n_items = len(np.unique(items))
    cal_w = np.vstack([np.ones(len(cal.y)), group_counts(cal.groups, resamples, rng)])
    coef = fit_logistic(cal.x, cal.y, cal_w, l2=l2)
    item_draws = rng.multinomial(n_items, np.full(n_items, 1 / n_items), size=resamples)
    run_w = np.vstack([item_weights(items), item_weights(items, item_draws)])
    values = levels(method, predict_logistic(coef, x_run), run_w, p_cal=predict_logistic(coef, cal.x),
                    y_cal=cal.y, w_cal=cal_w, v_run=verdicts, v_cal=cal.verdicts)
    point, replicates = float(values[0]), values[1:]
    if not np.isfinite(point):
        raise ValueError(f"method {method!r}: the calibration set does not separate the classes enough "
                         f"(true minus false positive rate below {_MIN_GAP}) to correct a share")
    replicates = replicates[np.isfinite(replicates)]  # a replicate whose refit cannot correct is dropped
    low, high = np.quantile(replicates, [0.025, 0.975])
    share = None if verdicts is None else float(item_weights(items)[0] @ np.asarray(verdicts, dtype=float))
    return LevelEstimate(method=method, estimate=point, ci_low=float(min(low, point)), ci_high=float(max(high, point)),
                         n_items=n_items, n_units=len(items), n_calibration=len(cal.y),
                         n_calibration_groups=len(np.unique(cal.groups)), resamples=resamples, verdict_share=share)
