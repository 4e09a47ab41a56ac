"""Coverage by simulation of the level of a run of one of the calibration data's own systems
(`ragwatch.judges.faithfulness.level.own_system_level`): the pooled point, an interval reaching over a fit with
the system's own intercept shift."""

from __future__ import annotations

import numpy as np

from ragwatch.judges.faithfulness.level import own_system_level
from ragwatch.statistics.level import CalibrationSet, estimate_level, item_weights

BETA = np.array([1.2, 0.6])


def _answers(rng: np.random.Generator, n_items: int, bias: float) -> tuple[np.ndarray, ...]:
    """Answers of 1-4 statements whose features move with the answer's quality; the label depends on the
    features, on the system (`bias` on the logit) and on an answer effect the features do not see."""
    items = np.repeat(np.arange(n_items), rng.integers(1, 5, size=n_items))
    quality = rng.normal(0.3, 1.0, size=n_items)[items]
    x = np.column_stack([quality, 0.5 * quality]) + rng.normal(size=(len(items), 2))
    effect = rng.normal(0, 0.8, size=n_items)[items]
    y = rng.random(len(items)) < 1 / (1 + np.exp(-(x @ BETA + bias + effect)))
    return x, y, items


def test_a_run_of_a_labelled_system_unlike_the_others_is_covered() -> None:
    """Calibration: 4 systems of 25 answers; s0's logit is 1.5 below the others' (like S3 among the eight). A run:
    40 new answers of s0. The pooled fit alone is pulled toward the others and its interval misses; the reported
    interval (over the own-shift fit's) covers what the readers find on the run's answers in >= 93% of 200 runs,
    and the point stays the pooled fit's."""
    rng = np.random.default_rng(42)
    reported, pooled_only, widths = [], [], []
    for rep in range(200):
        biases = [-1.5, *rng.normal(0, 0.3, size=3)]
        parts = [_answers(rng, 25, b) for b in biases]
        offsets = np.cumsum([0] + [p[2].max() + 1 for p in parts])
        cal = CalibrationSet(x=np.vstack([p[0] for p in parts]), y=np.concatenate([p[1] for p in parts]),
                             groups=np.concatenate([p[2] + offsets[k] for k, p in enumerate(parts)]),
                             systems=np.concatenate([np.full(len(p[1]), f"s{k}") for k, p in enumerate(parts)]))
        x_run, y_run, items = _answers(rng, 40, biases[0])
        truth = float(item_weights(items)[0] @ y_run)
        est, own = own_system_level(cal, "s0", x_run, items, resamples=100, seed=rep)
        pooled = estimate_level(cal, x_run, items, resamples=100, seed=rep)
        assert est.estimate == pooled.estimate and est.transfer is None
        assert est.ci_low <= min(own.ci_low, est.estimate) and est.ci_high >= max(own.ci_high, est.estimate)
        reported.append(est.ci_low <= truth <= est.ci_high)
        pooled_only.append(pooled.ci_low <= truth <= pooled.ci_high)
        widths.append(est.ci_high - est.ci_low)
    assert np.mean(reported) >= 0.93, np.mean(reported)
    assert np.mean(pooled_only) < 0.90  # the own-shift fit is needed: the pooled interval alone misses
    assert np.mean(widths) < 0.6, np.mean(widths)
