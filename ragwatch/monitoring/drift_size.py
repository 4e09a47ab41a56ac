"""How many answers per window would decide an undecided drift verdict: a normal-approximation
power calculation from the two windows' observed spreads, at their observed difference.

With `n` answers in each window the difference of means has standard error `se = sqrt(v / n)`,
`v = var(new) + var(old)` (per answer). At a true difference `d`:
- "drift" is read with probability about `Phi(|d| / se - z_drift)`, `z_drift = z(1 - alpha_drift / 2)`
  (the interval of the first Holm step, the widest it can be);
- "no drift" with probability about `Phi((t - d) / se - z_same) + Phi((t + d) / se - z_same) - 1`,
  `z_same = z(1 - alpha)` (two one-sided tests against the tolerance `t`).
`answers_to_decide` is the smallest `n` at which one of the two is read with probability `power`
(80%), taking the observed difference as the true one: an order of magnitude ("~N"), not a promise.

Given the windows as they are (`Seen`: their sizes and the half-widths of the intervals the verdict was
read from), the calculation is tied to what was seen: where those intervals are wider than the normal
ones (bounded intervals at small n or near the ends of a scale), each `z` is widened as much; the size
named is always larger than the larger window (those answers did not decide); windows with no spread
at all (every score the same) are extrapolated from their intervals' widths, which shrink as
`1 / sqrt(n)`. None means no size up to 10 million decides: the difference seen is within the noise
and more answers would not settle it (e.g. with a tolerance of 0, "no drift" can never be shown).

Example:
    >>> answers_to_decide(var_new=0.24, var_old=0.24, diff=0.0, tolerance=0.1, alpha=0.05, alpha_drift=0.05 / 6)
    408
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

_Z = NormalDist()
MAX_ANSWERS = 10_000_000


@dataclass(frozen=True)
class Seen:
    """The two windows as compared: scored answers in each, and the half-widths of the drift interval
    (at `1 - alpha_drift`) and of the no-drift interval (at `1 - 2 alpha`) around their difference."""

    n_new: int
    n_old: int
    half_drift: float
    half_same: float


def decide_probability(n: float, var: float, diff: float, tolerance: float, alpha: float, alpha_drift: float,
                       *, z: tuple[float, float] | None = None) -> float:
    """The chance (normal approximation) that windows of `n` answers each read "drift" or "no drift";
    `z` = `(z_drift, z_same)` replaces the normal quantiles (widened to the intervals seen)."""
    z_drift, z_same = z or (_Z.inv_cdf(1 - alpha_drift / 2), _Z.inv_cdf(1 - alpha))
    se = math.sqrt(var / n)
    drift = _Z.cdf(abs(diff) / se - z_drift)
    same = 0.0
    if tolerance > 0:
        same = max(0.0, _Z.cdf((tolerance - diff) / se - z_same) + _Z.cdf((tolerance + diff) / se - z_same) - 1)
    return min(1.0, drift + same)


def answers_to_decide(*, var_new: float, var_old: float, diff: float, tolerance: float, alpha: float,
                      alpha_drift: float, power: float = 0.8, seen: Seen | None = None) -> int | None:
    """The answers per window at which a verdict is reached with probability `power`, larger than the
    windows `seen` (when given); None when no size up to 10 million does (or, without `seen`, when the
    windows show no spread to extrapolate from)."""
    var = var_new + var_old
    floor = max(seen.n_new, seen.n_old) if seen else 1
    if not var > 0:
        return _without_spread(seen, diff, tolerance) if seen else None
    z = (_Z.inv_cdf(1 - alpha_drift / 2), _Z.inv_cdf(1 - alpha))
    if seen:  # widen each quantile to the interval actually seen at the windows' own sizes
        se_now = math.sqrt(var_new / max(seen.n_new, 1) + var_old / max(seen.n_old, 1))
        z = (max(z[0], seen.half_drift / se_now), max(z[1], seen.half_same / se_now))

    def reached(n: int) -> bool:
        return decide_probability(n, var, diff, tolerance, alpha, alpha_drift, z=z) >= power

    if not reached(MAX_ANSWERS):
        return None
    low, high = floor, MAX_ANSWERS  # decide_probability grows with n: bisect for the smallest n that reaches power
    while high - low > 1:
        mid = (low + high) // 2
        if reached(mid):
            high = mid
        else:
            low = mid
    return high


def _without_spread(seen: Seen, diff: float, tolerance: float) -> int | None:
    """Every score the same in each window: nothing is random, so the size at which the intervals (their
    half-widths shrinking as `1 / sqrt(n)` from the smaller window's) fit within the tolerance, or exclude 0."""
    n_ref = max(min(seen.n_new, seen.n_old), 1)
    sizes = []
    if tolerance - abs(diff) > 0:
        sizes.append(n_ref * (seen.half_same / (tolerance - abs(diff))) ** 2)
    if diff != 0:
        sizes.append(n_ref * (seen.half_drift / abs(diff)) ** 2)
    if not sizes or min(sizes) > MAX_ANSWERS:
        return None
    return max(math.ceil(min(sizes)), max(seen.n_new, seen.n_old) + 1)


def round_up(n: int) -> int:
    """Two significant digits, rounded up (`~1,300`, not `~1,283`)."""
    step = 10 ** max(0, len(str(n)) - 2)
    return -(-n // step) * step
