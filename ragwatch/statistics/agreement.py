"""Agreement between two raters (judge vs judge, judge vs human), with bootstrap intervals.

scikit-learn computes kappa, F1, ROC AUC and balanced accuracy and SciPy computes Spearman's rho; this
module checks the input, names the undefined cases and bootstraps. Every measure returns a plain float
and never NaN. Where a measure is mathematically undefined on
the given input, it returns the value of its `undefined` argument instead (like scikit-learn's
`replace_undefined_by` / `zero_division`), and the docstring says when that happens:

- `cohen_kappa`: undefined when chance agreement is 1, i.e. both raters give one and the same label
  to every item (sklearn returns NaN there). Default 0.0: no agreement beyond chance can be shown.
- `spearman`: undefined when either side is constant (scipy returns NaN). Default 0.0.
- `f1`: undefined when the positive label is neither true nor predicted anywhere (sklearn's
  `zero_division`, default 0.0).
- `accuracy`, `hamming_distance`, `balanced_accuracy` are defined for any non-empty input;
  `balanced_accuracy` averages recall over the classes present in `y_true` (as sklearn does).

`with_interval` bootstraps any of them over items; resamples where the measure is undefined are
skipped rather than counted as the placeholder value.

Example:
    >>> cohen_kappa(["pass", "fail", "pass", "pass"], ["pass", "fail", "fail", "pass"])
    0.5
    >>> est = with_interval(f1, [1, 0, 1, 1], [1, 0, 0, 1], positive=1, seed=0)
    >>> round(est.value, 3), est.n
    (0.8, 4)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from ragwatch.statistics.intervals import DEFAULT_RESAMPLES, bootstrap_statistic_ci

KappaWeights = Literal["linear", "quadratic"] | None


class Estimate(BaseModel):
    """A measure's value on all items and its percentile bootstrap interval."""

    value: float
    ci_low: float
    ci_high: float
    n: int


def _pair(a: Sequence[Any], b: Sequence[Any], what: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = _labels(a, what), _labels(b, what)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(
            f"{what}: the two raters must label the same items: got {len(x)} and {len(y)} labels; "
            "pass one label per item, aligned by position"
        )
    if x.size == 0:
        raise ValueError(f"{what}: no items to compare; pass at least one label per rater")
    return x, y


def _labels(values: Sequence[Any], what: str) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values
    x = np.asarray(list(values))
    # numpy turns [1, "a"] into strings ("1", "a"), which would then equal a rater's "1"
    if x.dtype.kind == "U" and not all(isinstance(v, str) for v in values):
        raise ValueError(f"{what}: labels of mixed types (strings and numbers) cannot be compared; use one label type")
    return x


def _codes(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Both raters' labels as positions in their sorted union (what weighted kappa's distance is taken on)."""
    if (x.dtype.kind == "U") != (y.dtype.kind == "U"):
        raise ValueError("labels of mixed types cannot be compared (one rater's are strings, the other's are "
                         "not); use one label type")
    try:
        labels = np.unique(np.concatenate([x, y]))
    except TypeError as exc:
        raise ValueError(f"labels of mixed types cannot be compared ({exc}); use one label type") from exc
    return np.searchsorted(labels, x), np.searchsorted(labels, y), labels.size


def _library(score: Callable[..., Any], *args: Any, **kwargs: Any) -> float | None:
    """A library measure as a float, None where it is NaN. Its warnings are dropped: each undefined
    case it would warn about is caught before the call and documented above."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(score(*args, **kwargs))
    return None if np.isnan(value) else value


def cohen_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], *, weights: KappaWeights = None, undefined: float = 0.0
) -> float:
    """Cohen's kappa of two raters' labels (sklearn's `cohen_kappa_score`).

    `weights="linear"|"quadratic"` gives weighted kappa for ordinal labels (e.g. 1-5 scores); the
    distance between two labels is the distance of their positions in the sorted label set.
    Returns `undefined` when both raters give one identical label to every item.
    """
    value = _cohen_kappa(a, b, weights=weights)
    return undefined if value is None else value


def _cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable], *, weights: KappaWeights = None) -> float | None:
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")
    from sklearn.metrics import cohen_kappa_score  # ~1 s to import; config validation needs none of it

    x, y = _pair(a, b, "cohen_kappa")
    ix, iy, k = _codes(x, y)
    if k == 1:  # one label on every item from both raters: chance agreement is 1
        return None
    return _library(cohen_kappa_score, ix, iy, weights=weights)


def weighted_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: Literal["linear", "quadratic"] = "quadratic",
    undefined: float = 0.0,
) -> float:
    """Weighted Cohen's kappa for ordinal labels such as 1-5 judge scores (quadratic by default)."""
    return cohen_kappa(a, b, weights=weights, undefined=undefined)


def _weighted_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], *, weights: Literal["linear", "quadratic"] = "quadratic"
) -> float | None:
    return _cohen_kappa(a, b, weights=weights)


def spearman(a: Sequence[float], b: Sequence[float], *, undefined: float = 0.0) -> float:
    """Spearman rank correlation (scipy's `spearmanr` statistic); `undefined` when a side is constant."""
    value = _spearman(a, b)
    return undefined if value is None else value


def _spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr  # lazy, as the rest of SciPy in ragwatch.statistics

    x, y = _pair(a, b, "spearman")
    try:
        x, y = x.astype(float), y.astype(float)
    except ValueError as exc:
        raise ValueError(f"spearman needs numeric scores: {exc}") from exc
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("spearman: scores must be finite; drop or fix NaN/inf scores first")
    if x.min() == x.max() or y.min() == y.max():
        return None
    return _library(lambda u, v: spearmanr(u, v).statistic, x, y)


def hamming_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Fraction of items where the two raters disagree (e.g. pass/fail): 0 = identical."""
    x, y = _pair(a, b, "hamming_distance")
    return float((x != y).mean())


def accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Fraction of items where the prediction equals the reference label."""
    return 1.0 - hamming_distance(y_true, y_pred)


def balanced_accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Mean recall over the classes present in `y_true` (sklearn's `balanced_accuracy_score`).

    With one class only in `y_true` it is that class's recall, i.e. the accuracy.
    """
    from sklearn.metrics import balanced_accuracy_score

    x, y = _pair(y_true, y_pred, "balanced_accuracy")
    ix, iy, _ = _codes(x, y)
    value = _library(balanced_accuracy_score, ix, iy)
    assert value is not None  # defined on any non-empty input
    return value


def f1(
    y_true: Sequence[Hashable], y_pred: Sequence[Hashable], *, positive: Hashable = 1, undefined: float = 0.0
) -> float:
    """F1 of the `positive` label (sklearn's binary `f1_score` with `pos_label=positive`).

    Returns `undefined` when `positive` is neither a true nor a predicted label of any item.
    """
    value = _f1(y_true, y_pred, positive=positive)
    return undefined if value is None else value


def _f1(y_true: Sequence[Hashable], y_pred: Sequence[Hashable], *, positive: Hashable = 1) -> float | None:
    from sklearn.metrics import f1_score

    x, y = _pair(y_true, y_pred, "f1")
    # one label's F1 is the binary F1 of "is it that label" (the same tp, fp and fn)
    true_pos, pred_pos = _is(x, positive), _is(y, positive)
    if not (true_pos.any() or pred_pos.any()):
        return None
    return _library(f1_score, true_pos, pred_pos, zero_division=0.0)  # never reached: a positive exists


def _is(x: np.ndarray, label: Hashable) -> np.ndarray:
    """Which items carry `label` (1 == 1.0 == True, as in Python)."""
    return np.fromiter((v == label for v in x.tolist()), dtype=bool, count=x.size)


def roc_auc(labels: Sequence[Hashable], scores: Sequence[float], *, positive: Hashable = True,
            undefined: float = 0.5) -> float:
    """Area under the ROC curve: the chance a random positive item scores above a random negative one
    (ties count half). Threshold-free, so it shows whether a judge's scores rank items well even when
    its default cut-off is wrong. `undefined` when only one class is present.

    Example:
        >>> roc_auc([True, False, True], [0.9, 0.2, 0.4])
        1.0
    """
    value = _roc_auc(labels, scores, positive=positive)
    return undefined if value is None else value


def _roc_auc(labels: Sequence[Hashable], scores: Sequence[float], *, positive: Hashable = True) -> float | None:
    from sklearn.metrics import roc_auc_score

    x, s = _pair(labels, scores, "roc_auc")
    try:
        s = s.astype(float)
    except ValueError as exc:
        raise ValueError(f"roc_auc needs numeric scores: {exc}") from exc
    if not np.isfinite(s).all():
        raise ValueError("roc_auc: scores must be finite; drop or fix NaN/inf scores first")
    is_pos = _is(x, positive)
    if is_pos.all() or not is_pos.any():
        return None
    return _library(roc_auc_score, is_pos, s)


def with_interval(
    metric: Callable[..., float],
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    **kwargs: Any,
) -> Estimate:
    """`metric(a, b, **kwargs)` with a seeded bootstrap interval over items (pairs resampled together).

    Resamples where the measure is undefined are skipped; when it is undefined on every resample
    (e.g. constant labels) the interval collapses onto the point value, which uses the measure's
    own `undefined` placeholder.

    Example:
        >>> with_interval(cohen_kappa, [1, 0, 1, 0], [1, 0, 1, 1]).value
        0.5
    """
    x, y = _pair(a, b, getattr(metric, "__name__", "metric"))
    value = metric(x, y, **kwargs)
    # Resamples use the measure's core, which says "undefined" as None instead of a placeholder.
    core = _CORES.get(metric)
    core_kwargs = {k: v for k, v in kwargs.items() if k != "undefined"}

    def measure(idx: np.ndarray) -> float | None:
        if core is None:
            return metric(x[idx], y[idx], **kwargs)
        return core(x[idx], y[idx], **core_kwargs)

    if metric not in _TABLE_MEASURES:
        statistic = measure
    else:
        # A library call's cost is mostly its input checks, whatever n, so each distinct table of (a, b)
        # label pairs is measured once: resamples with the same table are the same multiset of pairs.
        ix, iy, k = _codes(x, y)
        cells = ix * k + iy
        seen: dict[bytes, float | None] = {}

        def statistic(idx: np.ndarray) -> float | None:
            key = np.bincount(cells[idx], minlength=k * k).tobytes()
            if key not in seen:
                seen[key] = measure(idx)
            return seen[key]

    _, low, high = bootstrap_statistic_ci(
        statistic, x.size, confidence=confidence, resamples=resamples, seed=seed, point=value
    )
    return Estimate(value=value, ci_low=low, ci_high=high, n=int(x.size))


_CORES: dict[Callable[..., float], Callable[..., float | None]] = {
    cohen_kappa: _cohen_kappa,
    weighted_kappa: _weighted_kappa,
    spearman: _spearman,
    f1: _f1,
    roc_auc: _roc_auc,
}
# Measures of the table of (a, b) label pairs alone, whatever the items' order.
_TABLE_MEASURES = frozenset({cohen_kappa, weighted_kappa, balanced_accuracy, f1})
