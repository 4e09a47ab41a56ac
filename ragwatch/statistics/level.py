"""The level of a share from a classifier's readings, with an interval that knows the calibration.

A judge reads every unit of a run (statements of answers); a calibration set of units with reference
labels says how the judge's features map to the truth. The level is the mean over the run's items of
the item's expected positive share, estimated one of five ways (the quantification literature's names;
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
- `blend`: the mean of `pcc` and `pacc`: half the prevalence correction. `pcc` is right when the
  features moved with the prevalence and shrinks a run toward the calibration level when only the
  prevalence moved; `pacc` is right in the second case and multiplies the noise by 1 / (m1 - m0).
  Which happened is unknown, so each bootstrap replicate takes a share of the correction drawn from
  Beta(1/2, 1/2) (most weight near either pure case): the interval reaches both (undefined where
  `pacc` is).

Every estimate is a weighted mean over units: a unit of an item with n units weighs 1 / (n * items), so
the level is the mean of item shares, not the share of units.

The interval is for the level careful readers would find on answers like the run's (the population
the run's items are drawn from; it covers the readers' mean item faithfulness of the run's own answers
too, a little conservatively). Each bootstrap replicate carries three sources of error:

- the calibration's: the model refitted on the calibration set resampled by group (all units of an
  answer together);
- the run's sampling: the run's items resampled;
- the readers' own: a calibrated P is the expected label, not the label. Each replicate draws the
  labels Y* ~ Bernoulli(P) of the run's units and adds the residual mean(Y*) - mean(P). Statements of
  one answer are correlated beyond their features (the answer's own quality); the correlation rho of
  the residuals Y - P within answers is estimated on the calibration set under each replicate's refit
  and weights (so its own uncertainty is resampled too), and a replicate's statements of one answer
  share their uniform draw with probability sqrt(rho) (pairwise label correlation ~rho). An answer
  whose statements are all alike counts as one: with no pair of statements in the calibration set the
  correlation cannot be estimated and the draw is comonotone (rho = 1, the bound).

For a run of a system the calibration set does not hold, a fourth: the between-system bias
(`system_transfer`), estimated from leave-one-system-out errors on the calibration set and drawn as a
scaled Student t with as many degrees of freedom as there are systems (with 2-3 systems the estimate
is rough and the t makes the interval wide, as it should be). The interval is the replicates' 2.5%
and 97.5% percentiles. Coverage: `tests/unit/test_level.py` (seeded simulations: a run whose prevalence
differs from the calibration set's, and an unseen system whose calibration is shifted).

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

Method = Literal["pcc", "acc", "pacc", "em", "blend"]
METHODS: tuple[Method, ...] = ("pcc", "acc", "pacc", "em", "blend")
DEFAULT_L2 = 1.0  # as scikit-learn's C=1: a light pull that keeps a separating flag's weight finite
_NEWTON_STEPS = 50
_EM_STEPS = 200
_MIN_GAP = 0.05  # tpr - fpr (or m1 - m0) below this: the correction is undefined, the estimate is not made


@dataclass(frozen=True)
class CalibrationSet:
    """Labelled units: features `x` (n, p), labels `y` (n,), `groups` (n,) that resample together,
    optionally the shipped `verdicts` (n,) the `acc` correction needs and the `systems` (n,) under test
    that wrote them (what `system_transfer` leaves out in turn)."""

    x: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    verdicts: np.ndarray | None = None
    systems: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.y)
        if self.x.ndim != 2 or self.x.shape[0] != n or len(self.groups) != n:
            raise ValueError(f"calibration set: x {self.x.shape}, y {len(self.y)}, groups {len(self.groups)} "
                             "must describe the same n units (x as an n x p matrix)")
        if self.verdicts is not None and len(self.verdicts) != n:
            raise ValueError(f"calibration set: {len(self.verdicts)} verdicts for {n} units")
        if self.systems is not None and len(self.systems) != n:
            raise ValueError(f"calibration set: {len(self.systems)} systems for {n} units")
        if n == 0 or self.y.all() or not self.y.any():
            raise ValueError(f"calibration set: {int(self.y.sum())} positive of {n} units; a level needs "
                             "labelled units of both classes")


    def subset(self, keep: np.ndarray) -> CalibrationSet:
        """The units where `keep` (n,) is true."""
        return CalibrationSet(x=self.x[keep], y=self.y[keep], groups=self.groups[keep],
                              verdicts=None if self.verdicts is None else self.verdicts[keep],
                              systems=None if self.systems is None else self.systems[keep])

    def system_names(self) -> list[str]:
        return [] if self.systems is None else sorted({str(s) for s in self.systems})

    def with_system_column(self, system: str) -> CalibrationSet:
        """One more feature: 1 for the units of `system`, 0 for the others. A fit then gives that system
        its own intercept shift, pulled toward the pooled fit by the L2 penalty (partial pooling); a
        run of that system appends a column of ones to its features."""
        if system not in self.system_names():
            raise ValueError(f"system {system!r} is not in the calibration set (systems {self.system_names()})")
        column = np.array([str(s) == system for s in self.systems], dtype=float)[:, None]
        return CalibrationSet(x=np.hstack([self.x, column]), y=self.y, groups=self.groups, verdicts=self.verdicts,
                              systems=self.systems)


class Transfer(BaseModel):
    """The between-system bias of a level for a system the calibration set does not hold.

    `sd` is the leave-one-system-out estimate: each system's level estimated from a fit on the others,
    its error against its own labels; sd^2 = max(0, mean(error^2) - mean(sampling variance)) (the
    method of moments, floored at zero). A new system's bias is drawn as sd * t(`df`), df = the
    number of systems: with few systems the sd itself is rough, and the t's heavy tails carry that.
    `sd` is +inf when fewer than two systems are labelled (the transfer cannot be measured: the
    interval is then [0, 1])."""

    sd: float
    df: int
    errors: dict[str, float] = {}
    sampling_variances: dict[str, float] = {}
    note: str = ""


class LevelEstimate(BaseModel):
    """A level, its 95% interval (calibration refits, run items and the readers' Bernoulli residual
    resampled together; the between-system bias when `transfer` is given), and its n."""

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
    calibration_systems: list[str] = []
    transfer: Transfer | None = None  # carried when the run's system is not one of calibration_systems


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
    outer = (design[:, :, None] * design[:, None, :]).reshape(len(y), d * d)  # one matrix product per step
    for _ in range(_NEWTON_STEPS):
        p = _sigmoid(coef @ design.T)
        grad = (w * (y - p)) @ design - coef @ penalty
        hess = ((w * p * (1 - p)) @ outer).reshape(b, d, d) + penalty + 1e-9 * np.eye(d)
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
    if method in ("pacc", "blend"):
        m1, m0 = (w_cal * p_cal * y).sum(1) / pos, (w_cal * p_cal * (1 - y)).sum(1) / neg
        mean = (p_run * w_run).sum(1)
        corrected = _corrected(mean, m1, m0)
        return corrected if method == "pacc" else (mean + corrected) / 2
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
                   l2: float = DEFAULT_L2, transfer: Transfer | None = None) -> LevelEstimate:
    """The run's level and its 95% interval.

    `x_run` (m, p): the run's units' features; `items` (m,): the item of each unit; `verdicts` (m,):
    the run's shipped verdicts (needed by `acc`; reported as `verdict_share` when given). Each of the
    `resamples` replicates refits the model on the calibration set resampled by group, resamples the
    run's items and draws the readers' labels around the calibrated P (see the module doc); with
    `transfer` (the run's system is not one the calibration set holds), a between-system bias is added.
    The interval is the replicates' percentile interval.
    """
    x_run = np.asarray(x_run, dtype=float)
    items = np.asarray(items)
    if x_run.ndim != 2 or x_run.shape[0] != len(items) or x_run.shape[0] == 0:
        raise ValueError(f"run: features {x_run.shape} and {len(items)} item ids must describe the same m >= 1 units")
    if x_run.shape[1] != cal.x.shape[1]:
        raise ValueError(f"run units have {x_run.shape[1]} features, the calibration set {cal.x.shape[1]}")
    rng = np.random.default_rng(seed)
    point, replicates = _replicates(cal, x_run, items, method=method, verdicts=verdicts, resamples=resamples,
                                    rng=rng, l2=l2, resample_items=True)
    if transfer is not None and np.isinf(transfer.sd):
        low, high = 0.0, 1.0  # the transfer to an unseen system is not measured: the interval says nothing
    else:
        if transfer is not None and transfer.sd > 0:
            replicates = replicates + transfer.sd * rng.standard_t(max(transfer.df, 1), size=len(replicates))
        low, high = np.quantile(np.clip(replicates, 0.0, 1.0), [0.025, 0.975])
    share = None if verdicts is None else float(item_weights(items)[0] @ np.asarray(verdicts, dtype=float))
    return LevelEstimate(method=method, estimate=point, ci_low=float(min(low, point)), ci_high=float(max(high, point)),
                         n_items=len(np.unique(items)), n_units=len(items), n_calibration=len(cal.y),
                         n_calibration_groups=len(np.unique(cal.groups)), resamples=resamples, verdict_share=share,
                         calibration_systems=cal.system_names(), transfer=transfer)


def _replicates(cal: CalibrationSet, x_run: np.ndarray, items: np.ndarray, *, method: Method,
                verdicts: np.ndarray | None, resamples: int, rng: np.random.Generator, l2: float,
                resample_items: bool) -> tuple[float, np.ndarray]:
    """The point level and its finite bootstrap replicates (a replicate whose refit cannot correct a
    share is dropped), each with the readers' residual added (not clipped: the caller clips)."""
    _, index = np.unique(items, return_inverse=True)
    n_items = int(index.max()) + 1
    cal_w = np.vstack([np.ones(len(cal.y)), group_counts(cal.groups, resamples, rng)])
    coef = fit_logistic(cal.x, cal.y, cal_w, l2=l2)
    draws = (rng.multinomial(n_items, np.full(n_items, 1 / n_items), size=resamples) if resample_items
             else np.ones((resamples, n_items)))
    run_w = np.vstack([item_weights(items), item_weights(items, draws)])
    p_run = predict_logistic(coef, x_run)
    p_cal = predict_logistic(coef, cal.x)
    values = levels(method, p_run, run_w, p_cal=p_cal, y_cal=cal.y, w_cal=cal_w, v_run=verdicts, v_cal=cal.verdicts)
    if method == "blend":  # which shift moved the run is unknown: each replicate takes a share of the correction
        pcc = levels("pcc", p_run, run_w, p_cal=p_cal, y_cal=cal.y, w_cal=cal_w)
        pacc = levels("pacc", p_run, run_w, p_cal=p_cal, y_cal=cal.y, w_cal=cal_w)
        share = np.r_[0.5, rng.beta(0.5, 0.5, size=resamples)]
        values = np.where(np.isfinite(pacc), pcc + share * (pacc - pcc), np.inf)
    point = float(values[0])
    if not np.isfinite(point):
        raise ValueError(f"method {method!r}: the calibration set does not separate the classes enough "
                         f"(true minus false positive rate below {_MIN_GAP}) to correct a share")
    rho = answer_correlation(predict_logistic(coef[1:], cal.x), cal.y, cal.groups, cal_w[1:])
    replicates = values[1:] + reader_residual(p_run[1:], index, run_w[1:], rho, rng)
    return point, replicates[np.isfinite(replicates)]


def answer_correlation(p: np.ndarray, y: np.ndarray, groups: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per replicate, the correlation of the residuals Y - P between two statements of one answer, by
    the method of moments over the calibration set's answers (p, w: (B, n); a group's units share a
    weight, its bootstrap count): sum over answers of the residuals' cross products over the same sum
    of sqrt(P (1 - P)) products, clipped to [0, 1]; 1 (the bound) where no answer has two statements."""
    _, g = np.unique(groups, return_inverse=True)
    one_hot = np.eye(int(g.max()) + 1)[g]  # (n, groups)
    r, s = np.asarray(y, dtype=float) - p, np.sqrt(p * (1 - p))

    def cross(v: np.ndarray) -> np.ndarray:  # per replicate and group: (sum v)^2 - sum v^2
        return (v @ one_hot) ** 2 - (v * v) @ one_hot

    gw = w @ one_hot / one_hot.sum(0)  # a group's units share its count
    num, den = (gw * cross(r)).sum(1), (gw * cross(s)).sum(1)
    return np.where(den > 1e-12, np.clip(num / np.where(den > 1e-12, den, 1.0), 0.0, 1.0), 1.0)


def reader_residual(p: np.ndarray, item_index: np.ndarray, w: np.ndarray, rho: np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    """Per replicate, the weighted mean of Y* - P over the run's units, Y* ~ Bernoulli(P) (p, w: (B, m));
    a unit uses its item's shared uniform draw with probability sqrt(rho) (rho: (B,)), its own otherwise.
    For `acc` and `pacc`, which have no per-unit probability, the calibrated P stands in."""
    shared = rng.random((p.shape[0], int(item_index.max()) + 1))[:, item_index]
    own = rng.random(p.shape)
    u = np.where(rng.random(p.shape) < np.sqrt(rho)[:, None], shared, own)
    return (w * ((u < p) - p)).sum(axis=1)


def system_transfer(cal: CalibrationSet, *, method: Method = "pcc", resamples: int = 200, seed: int = 0,
                    l2: float = DEFAULT_L2) -> Transfer:
    """The between-system bias of `method` on a system the calibration set does not hold, from
    leave-one-system-out errors (see `Transfer`); each left-out system's answers are its items.

    The sampling variance of a left-out system's error is its replicates' variance with its answers
    fixed (the calibration refits and the readers' residual only: its own labels are the target)."""
    systems = cal.system_names()
    if len(systems) < 2:
        return Transfer(sd=float("inf"), df=len(systems),
                        note=f"{len(systems)} labelled system(s): the transfer to another system cannot be measured")
    rng = np.random.default_rng(seed)
    errors, variances, skipped = {}, {}, []
    for system in systems:
        mine = np.array([str(s) == system for s in cal.systems])
        train, test = cal.subset(~mine), cal.subset(mine)
        if train.y.all() or not train.y.any():
            skipped.append(system)
            continue
        try:
            point, reps = _replicates(train, test.x, test.groups, method=method, verdicts=test.verdicts,
                                      resamples=resamples, rng=rng, l2=l2, resample_items=False)
        except ValueError:
            skipped.append(system)
            continue
        errors[system] = point - float(item_weights(test.groups)[0] @ test.y.astype(float))
        variances[system] = float(np.var(reps))
    if len(errors) < 2:
        return Transfer(sd=float("inf"), df=len(errors), errors=errors, sampling_variances=variances,
                        note=f"only {len(errors)} system(s) could be left out ({skipped} could not): "
                             "the transfer cannot be measured")
    excess = float(np.mean([e * e for e in errors.values()]) - np.mean(list(variances.values())))
    note = (f"leave-one-system-out over {len(errors)} systems: a rough estimate (as many degrees of freedom "
            "as systems)" + (", floored at zero" if excess <= 0 else ""))
    return Transfer(sd=float(np.sqrt(max(excess, 0.0))), df=len(errors), errors=errors,
                    sampling_variances=variances, note=note)
