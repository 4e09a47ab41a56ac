"""Active against uniform labelling, simulated: the prediction-powered interval's width, coverage and
bias per design and number of labels, on a population of answers with the judge's real scores.

`benchmarks/active_labels.py` builds the population from labelled statements and prints the table;
`tests/unit/test_active_labels.py` runs the same simulation on a small one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragwatch.statistics.active import DEFAULT_FLOOR, active_probabilities, draw_pps
from ragwatch.statistics.ppi import ppi_mean

SIZES = (10, 20, 30, 50)


@dataclass
class Cell:
    """One design at one number of labels, over the replicates."""

    design: str
    n: int
    width: float
    coverage: float
    bias: float
    rmse: float  # of the estimate around the run's own mean label: what the labels buy
    reps: int


def simulate(f: np.ndarray, y: np.ndarray, spread: np.ndarray, noise: np.ndarray, *, items: int,
             sizes: Sequence[int] = SIZES, reps: int = 2000, seed: int = 0, floor: float = DEFAULT_FLOOR
             ) -> list[Cell]:
    """Per design and n: width, coverage and bias of the PPI interval for mean(y) over the answers.

    `f`, `y`, `spread`, `noise`: the judge's score, the readers' label, the spread and the label noise
    (`ragwatch.review.spread`) of every answer of the superpopulation; each replicate draws `items`
    answers from it with replacement.
    """
    rng = np.random.default_rng(seed)
    truth = float(y.mean())
    cells: dict[tuple[str, int], list[tuple[float, bool, float, float]]] = {}
    for _ in range(reps):
        pick = rng.integers(0, f.size, items)
        f_run, y_run, s_run, n_run = f[pick], y[pick], spread[pick], noise[pick]
        for n in sizes:
            if n > items:
                continue
            for design in ("uniform", "active"):
                if design == "uniform":
                    probs = np.full(items, n / items)
                    chosen = rng.choice(items, n, replace=False)
                else:
                    probs = active_probabilities(s_run, n, floor=floor)
                    chosen = draw_pps(probs, rng)
                est = ppi_mean(y_run[chosen], f_run[chosen], f_run, weights=1.0 / probs[chosen], bounds=(0.0, 1.0),
                               noise=n_run[chosen])
                cells.setdefault((design, n), []).append(
                    (est.ci_high - est.ci_low, est.ci_low <= truth <= est.ci_high, est.estimate - truth,
                     est.estimate - float(y_run.mean())))
    return [Cell(design=d, n=n, width=float(np.mean([r[0] for r in v])), coverage=float(np.mean([r[1] for r in v])),
                 bias=float(np.mean([r[2] for r in v])), rmse=float(np.sqrt(np.mean([r[3] ** 2 for r in v]))),
                 reps=len(v))
            for (d, n), v in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
