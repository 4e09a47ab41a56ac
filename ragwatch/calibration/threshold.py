"""A decision threshold for probability-weighted verdicts, chosen on one split and reported on another.

A small judge's P(yes) often ranks items well but sits on the wrong side of 0.5 (everything
"supported"). `choose_threshold` splits the labelled items in two seeded halves (stratified by
label), picks the cut-off that maximizes balanced accuracy on the first half (midpoints between
observed scores; ties go to the middle of the best run), and reports agreement at that cut-off on
the second half, which never saw it: an honest figure for the tuned judge.

Example:
    >>> choice = choose_threshold([0.2, 0.3, 0.6, 0.7, 0.25, 0.35, 0.65, 0.8], [False, False, True, True] * 2)
    >>> choice.threshold, choice.balanced_accuracy.value
    (0.45, 1.0)
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel

from ragwatch.statistics.agreement import Estimate, balanced_accuracy, cohen_kappa, with_interval
from ragwatch.statistics.agreement import accuracy as accuracy_of
from ragwatch.statistics.cutoff import best_threshold

MIN_PER_CLASS = 2  # per half: each half needs both classes to measure balanced accuracy


class ThresholdChoice(BaseModel):
    """The tuned cut-off on P(yes) and its agreement on the held-out half."""

    threshold: float
    tuned_on: int
    reported_on: int
    tune_balanced_accuracy: float
    balanced_accuracy: Estimate
    accuracy: Estimate
    cohen_kappa: Estimate

    def to_markdown(self) -> str:
        def cell(e: Estimate) -> str:
            return f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"

        return (f"Weighted-mode threshold chosen on {self.tuned_on} items: faithful when P(yes) >= "
                f"{self.threshold:.3f} (balanced accuracy there {self.tune_balanced_accuracy:.3f}); on the other "
                f"{self.reported_on} items: balanced accuracy {cell(self.balanced_accuracy)}, accuracy "
                f"{cell(self.accuracy)}, Cohen's kappa {cell(self.cohen_kappa)}.")


def split_halves(labels: Sequence[bool], *, seed: int = 0) -> tuple[list[int], list[int]]:
    """Two seeded halves of the item positions, each holding about half of either class."""
    rng = random.Random(seed)
    first, second = [], []
    for value in (True, False):
        positions = [i for i, label in enumerate(labels) if label == value]
        rng.shuffle(positions)
        half = (len(positions) + 1) // 2
        first += positions[:half]
        second += positions[half:]
    return sorted(first), sorted(second)


def choose_threshold(scores: Sequence[float], faithful: Sequence[bool], *, seed: int = 0,
                     resamples: int = 2000) -> ThresholdChoice | None:
    """Tune on one half, report on the other; None when a half would lack a class (too few labels)."""
    if len(scores) != len(faithful):
        raise ValueError(f"{len(scores)} scores but {len(faithful)} labels: pass one of each per item")
    if min(sum(faithful), len(faithful) - sum(faithful)) < 2 * MIN_PER_CLASS:
        return None
    tune, held = split_halves(faithful, seed=seed)
    threshold, tuned_bal = best_threshold([scores[i] for i in tune], [faithful[i] for i in tune])
    truth = [bool(faithful[i]) for i in held]
    pred = [scores[i] >= threshold for i in held]
    kw = {"seed": seed, "resamples": resamples}
    return ThresholdChoice(
        threshold=round(threshold, 4), tuned_on=len(tune), reported_on=len(held), tune_balanced_accuracy=tuned_bal,
        balanced_accuracy=with_interval(balanced_accuracy, truth, pred, **kw),
        accuracy=with_interval(accuracy_of, truth, pred, **kw),
        cohen_kappa=with_interval(cohen_kappa, truth, pred, **kw),
    )
