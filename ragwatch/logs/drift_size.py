"""How many answers per window would decide an undecided drift verdict: a normal-approximation
power calculation from the two windows' observed spreads, at their observed difference.

With `n` answers in each window the difference of means has standard error `se = sqrt(v / n)`,
`v = var(new) + var(old)` (per answer). At a true difference `d`:
- "drift" is read with probability about `Phi(|d| / se - z(1 - alpha_drift / 2))` (the interval of the
  first Holm step, the narrowest it can be);
- "no drift" with probability about `Phi((t - d) / se - z(1 - alpha)) + Phi((t + d) / se - z(1 - alpha)) - 1`
  (two one-sided tests against the tolerance `t`).
`answers_to_decide` is the smallest `n` at which one of the two is read with probability `power`
(80%), taking the observed difference as the true one: an order of magnitude ("~N"), not a promise
(the bounded intervals are a little wider than the normal one near the ends of a scale).

Example:
    >>> answers_to_decide(var_new=0.24, var_old=0.24, diff=0.0, tolerance=0.1, alpha=0.05, alpha_drift=0.05 / 6)
    408
"""

from __future__ import annotations

import math
from statistics import NormalDist

_Z = NormalDist()
MAX_ANSWERS = 10_000_000


def decide_probability(n: float, var: float, diff: float, tolerance: float, alpha: float, alpha_drift: float
                       ) -> float:
    """The chance (normal approximation) that windows of `n` answers each read "drift" or "no drift"."""
    se = math.sqrt(var / n)
    drift = _Z.cdf(abs(diff) / se - _Z.inv_cdf(1 - alpha_drift / 2))
    z = _Z.inv_cdf(1 - alpha)
    same = max(0.0, _Z.cdf((tolerance - diff) / se - z) + _Z.cdf((tolerance + diff) / se - z) - 1)
    return min(1.0, drift + same)


def answers_to_decide(*, var_new: float, var_old: float, diff: float, tolerance: float, alpha: float,
                      alpha_drift: float, power: float = 0.8) -> int | None:
    """The answers per window at which a verdict is reached with probability `power`; None when the
    windows show no spread to extrapolate from (every score the same) or no size up to 10 million does."""
    var = var_new + var_old
    if not var > 0 or not tolerance > 0:
        return None
    if decide_probability(MAX_ANSWERS, var, diff, tolerance, alpha, alpha_drift) < power:
        return None
    low, high = 1, MAX_ANSWERS  # decide_probability grows with n: bisect for the smallest n that reaches power
    while high - low > 1:
        mid = (low + high) // 2
        if decide_probability(mid, var, diff, tolerance, alpha, alpha_drift) >= power:
            high = mid
        else:
            low = mid
    return high


def round_up(n: int) -> int:
    """Two significant digits, rounded up (`~1,300`, not `~1,283`)."""
    step = 10 ** max(0, len(str(n)) - 2)
    return -(-n // step) * step
