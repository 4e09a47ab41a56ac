"""Populations of scores with a known mean, and the product's intervals over many samples at once.

`mean_kinds` (0/1 rates, 1-5 Likert, continuous bounded scores, stress cases), `pair_kinds` (two runs
of the same items) and `unpaired_kinds` (two windows) are what `benchmarks/interval_width.py` and
`tests/unit/test_stats.py` measure coverage and width on; `chosen_paired` and `chosen_unpaired` are
`ragwatch.statistics.intervals`' paired and unpaired differences, vectorised over rows (one sample a row).

Example:
    >>> kind = next(k for k in mean_kinds() if k.name == "p=0.3")
    >>> kind.sample(np.random.default_rng(0), (2, 5)).shape
    (2, 5)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragwatch.statistics.intervals import bounded_intervals, paired_diff_intervals

LIKERT = np.arange(1.0, 6.0)
Sampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]


@dataclass
class Kind:
    """A population of item scores: `sample(rng, (draws, n))` in the metric's own units."""

    name: str
    group: str  # binary | likert | continuous | stress
    scale: tuple[float, float]
    sample: Sampler
    truth: float
    width_checked: bool = False  # one of the brief's continuous kinds: width within 1.3x t at n=20..100


def _beta(a: float, b: float) -> tuple[Sampler, float]:
    return (lambda r, s: r.beta(a, b, size=s)), a / (a + b)


def _beta_ms(mean: float, sd: float) -> tuple[float, float]:
    k = mean * (1 - mean) / sd**2 - 1
    return mean * k, (1 - mean) * k


def _similarity(mean: float, sd: float) -> tuple[Sampler, float]:
    """Cosine similarity on (-1, 1): a Beta on the rescaled scale with this raw mean and sd."""
    a, b = _beta_ms((mean + 1) / 2, sd / 2)
    return (lambda r, s: 2 * r.beta(a, b, size=s) - 1), mean


def _mix(w: float, first: tuple[Sampler, float], second: tuple[Sampler, float]) -> tuple[Sampler, float]:
    return (lambda r, s: np.where(r.random(s) < w, first[0](r, s), second[0](r, s))), w * first[1] + (1 - w) * second[1]


def _point(v: float) -> tuple[Sampler, float]:
    return (lambda r, s: np.full(s, v)), v


def _likert(probs: tuple[float, ...]) -> tuple[Sampler, float]:
    p = np.asarray(probs)
    return (lambda r, s: r.choice(LIKERT, size=s, p=p)), float(p @ LIKERT)


def _choice(values: list[float], probs: list[float]) -> tuple[Sampler, float]:
    v, p = np.asarray(values), np.asarray(probs)
    return (lambda r, s: r.choice(v, size=s, p=p)), float(v @ p)


def _faithfulness_fraction(r: np.random.Generator, s: tuple[int, int]) -> np.ndarray:
    statements = 1 + r.poisson(3, size=s)
    return r.binomial(statements, 0.85) / statements  # E[k/m | m] = 0.85


def _likert_mean_of_three(r: np.random.Generator, s: tuple[int, int]) -> np.ndarray:
    return r.choice(LIKERT, size=(*s, 3), p=[0.02, 0.08, 0.2, 0.5, 0.2]).mean(axis=-1)


def empirical_scores(path: Path) -> dict[str, np.ndarray]:
    """Judge scores as kinds of their own: P(yes) per model and set of a `judge_choice.py --out` file
    (`benchmarks/results/judge_choice_support.json`); none when the file is absent."""
    if not path.exists():
        return {}
    records = json.loads(path.read_text())
    out = {}
    for key, rows in records.items():
        model, dataset = key.split(" | ")[0].split("/")[-1], key.split(" | ")[1]
        out[f"P(yes) {model} {dataset}"] = np.asarray([r["p"] for r in rows if r.get("p") is not None], float)
    return out


def mean_kinds(empirical: Mapping[str, np.ndarray] | None = None) -> list[Kind]:
    """Every kind of score an interval of a mean meets; `empirical` adds resampled real scores
    (`empirical_scores`), each its own continuous, width-checked kind."""
    kinds = [Kind(f"p={p}", "binary", (0, 1), (lambda r, s, p=p: (r.random(s) < p).astype(float)), p)
             for p in (0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 0.95, 0.99)]
    for name, probs in {
        "mostly 5, thin tail": (0.02, 0.03, 0.05, 0.15, 0.75), "nearly always 5": (0, 0, 0, 0.05, 0.95),
        "1 or 5": (0.05, 0, 0, 0, 0.95), "4 or 5": (0, 0, 0, 0.5, 0.5), "uniform": (0.2,) * 5,
        "mostly 1": (0.7, 0.2, 0.05, 0.03, 0.02), "mostly 4": (0, 0.05, 0.1, 0.8, 0.05),
        "centred": (0.05, 0.15, 0.4, 0.3, 0.1), "3, sometimes 4": (0, 0, 0.9, 0.1, 0),
    }.items():
        kinds.append(Kind(f"likert {name}", "likert", (1, 5), *_likert(probs)))
    cont: dict[str, tuple[tuple[Sampler, float], tuple[float, float], bool]] = {
        "similarity 0.7 sd 0.1": (_similarity(0.7, 0.1), (-1, 1), True),
        "similarity 0.5 sd 0.2": (_similarity(0.5, 0.2), (-1, 1), True),
        "similarity 0.3 sd 0.1": (_similarity(0.3, 0.1), (-1, 1), True),
        "similarity 0.9 sd 0.05": (_similarity(0.9, 0.05), (-1, 1), True),
        "beta(5,3)": (_beta(5, 3), (0, 1), True),
        "beta(2,0.3) piled near 1": (_beta(2, 0.3), (0, 1), False),
        "beta(0.3,2) piled near 0": (_beta(0.3, 2), (0, 1), False),
        "beta(0.5,0.5) U-shaped": (_beta(0.5, 0.5), (0, 1), False),
        "60% exactly 1, rest beta(3,2)": (_mix(0.6, _point(1.0), _beta(3, 2)), (0, 1), False),
        "70% exactly 0, rest beta(1,3)": (_mix(0.7, _point(0.0), _beta(1, 3)), (0, 1), False),
        "faithfulness fraction k/m": ((_faithfulness_fraction, 0.85), (0, 1), True),
        "weighted faithfulness 85/15": (_mix(0.85, _beta(10, 1), _beta(1, 6)), (0, 1), True),
        "bimodal 70/30": (_mix(0.7, _beta(8, 2), _beta(2, 8)), (0, 1), True),
        "mean of 3 Likert judges": ((_likert_mean_of_three, float(np.dot([0.02, 0.08, 0.2, 0.5, 0.2], LIKERT))),
                                    (1, 5), True),
        "expected Likert 1+4*beta(6,2)": (((lambda r, s: 1 + 4 * r.beta(6, 2, size=s)), 4.0), (1, 5), True),
    }
    for name, ((sampler, truth), scale, checked) in cont.items():
        kinds.append(Kind(name, "continuous", scale, sampler, truth, checked))
    for name, values in (empirical or {}).items():
        kinds.append(Kind(name, "continuous", (0, 1), (lambda r, s, v=values: r.choice(v, size=s)),
                          float(values.mean()), True))
    stress = {
        "10% far off (beta(40,10) + beta(1,9))": (_mix(0.9, _beta(40, 10), _beta(1, 9)), (0, 1)),
        "likert 1/3/5 at 10/80/10%": (_likert((0.1, 0, 0.8, 0, 0.1)), (1, 5)),
        "likert 85% 3, 5% each 2/4/5": (_likert((0, 0.05, 0.85, 0.05, 0.05)), (1, 5)),
        "0 / 0.6 / 1 at 10/85/5%": (_choice([0.0, 0.6, 1.0], [0.1, 0.85, 0.05]), (0, 1)),
    }
    for name, ((sampler, truth), scale) in stress.items():
        kinds.append(Kind(name, "stress", scale, sampler, truth))
    return kinds


@dataclass
class PairKind:
    """Two runs' scores of the same items: `sample(rng, (draws, n))` gives (old, new); `truth` the mean difference."""

    name: str
    group: str  # binary | continuous | likert | stress
    scale: tuple[float, float]
    sample: Callable[[np.random.Generator, tuple[int, int]], tuple[np.ndarray, np.ndarray]]  # (old, new)
    truth: float = 0.0


def _binary_pair(up: float, down: float, p1: float = 0.6):
    def sample(r: np.random.Generator, s: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        u = r.random(s)
        old = (r.random(s) < p1).astype(float)
        went_up, went_down = u < up, (u >= up) & (u < up + down)
        old = np.where(went_up, 0.0, np.where(went_down, 1.0, old))
        return old, np.where(went_up, 1.0, np.where(went_down, 0.0, old))
    return sample


def _similarity_pair(delta: float, sd: float, changed: float = 1.0):
    a, b = _beta_ms(0.85, 0.05)

    def sample(r: np.random.Generator, s: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        old = 2 * r.beta(a, b, size=s) - 1
        new = np.clip(old + r.normal(delta, sd, size=s), -1, 1)
        return old, np.where(r.random(s) < changed, new, old)
    return sample


def _faithfulness_pair(changed: float, worse: bool):
    good, bad = _mix(0.85, _beta(10, 1), _beta(1, 6))[0], _mix(0.7, _beta(10, 1), _beta(1, 6))[0]

    def sample(r: np.random.Generator, s: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        old = good(r, s)
        return old, np.where(r.random(s) < changed, (bad if worse else good)(r, s), old)
    return sample


def _likert_pair(down: float, up: float, probs: tuple[float, ...] = (0.02, 0.08, 0.2, 0.5, 0.2)):
    def sample(r: np.random.Generator, s: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        old = r.choice(LIKERT, size=s, p=np.asarray(probs))
        u = r.random(s)
        step = np.where(u < down, -1.0, np.where(u < down + up, 1.0, 0.0))
        return old, np.clip(old + step, 1, 5)
    return sample


def pair_kinds() -> list[PairKind]:
    """Every kind of paired change the gate's difference meets; truths from 400,000 seeded draws."""
    kinds = [
        PairKind("0/1: a change fixes 1 item in 10", "binary", (0, 1), _binary_pair(0.1, 0)),
        PairKind("0/1: fixes 1 in 50", "binary", (0, 1), _binary_pair(0.02, 0)),
        PairKind("0/1: 5% fixed, 5% broken", "binary", (0, 1), _binary_pair(0.05, 0.05)),
        PairKind("0/1: 10% fixed, 5% broken", "binary", (0, 1), _binary_pair(0.1, 0.05)),
        PairKind("0/1: 20% fixed, 10% broken", "binary", (0, 1), _binary_pair(0.2, 0.1)),
        PairKind("0/1: 30% each way", "binary", (0, 1), _binary_pair(0.3, 0.3)),
        PairKind("0/1: identical runs", "binary", (0, 1), _binary_pair(0, 0)),
        PairKind("similarity +0.03, sd 0.1", "continuous", (-1, 1), _similarity_pair(0.03, 0.1)),
        PairKind("similarity 0, sd 0.05", "continuous", (-1, 1), _similarity_pair(0, 0.05)),
        PairKind("similarity -0.05, sd 0.2", "continuous", (-1, 1), _similarity_pair(-0.05, 0.2)),
        # stress: a tenth of the items moved a lot (rare large changes); listed, not counted
        PairKind("similarity: 10% of items +0.1", "stress", (-1, 1), _similarity_pair(0.1, 0.15, 0.1)),
        PairKind("similarity: 30% of items -0.1", "continuous", (-1, 1), _similarity_pair(-0.1, 0.1, 0.3)),
        PairKind("weighted faithfulness: 20% rescored", "continuous", (0, 1), _faithfulness_pair(0.2, False)),
        PairKind("weighted faithfulness: 30% worse", "stress", (0, 1), _faithfulness_pair(0.3, True)),
        PairKind("likert: 10% down, 10% up", "likert", (1, 5), _likert_pair(0.1, 0.1)),
        PairKind("likert: 5% down, 15% up", "likert", (1, 5), _likert_pair(0.05, 0.15)),
        PairKind("likert: 1 in 10 up", "likert", (1, 5), _likert_pair(0, 0.1)),
        PairKind("likert mostly 5: 20% down", "likert", (1, 5), _likert_pair(0.2, 0, (0.02, 0.03, 0.05, 0.15, 0.75))),
    ]
    rng = np.random.default_rng(99)
    for kind in kinds:
        old, new = kind.sample(rng, (400_000, 1))
        kind.truth = float((new - old).mean())
    return kinds


def inferred_scale(*samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, what `ragwatch.statistics.intervals` infers without a scale: (0, 1) when every score fits,
    else the range."""
    lo = np.min([s.min(axis=1) for s in samples], axis=0)
    hi = np.max([s.max(axis=1) for s in samples], axis=0)
    fits = (lo >= 0) & (hi <= 1)
    return np.where(fits, 0.0, lo), np.where(fits, 1.0, hi)


def chosen_paired(
    old: np.ndarray, new: np.ndarray, scale: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """`paired_diff_interval` of new - old per row, on each row's scale (the point 0 where it has none)."""
    lo, hi = scale
    spread = hi > lo
    low, high = np.zeros(len(old)), np.zeros(len(old))  # no spread: the point 0, as paired_diff_interval
    if spread.any():
        _, low[spread], high[spread] = paired_diff_intervals(new[spread], old[spread], (lo[spread], hi[spread]))
    return low, high


def _mean_rows(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    width = np.where(hi > lo, hi - lo, 1.0)
    low, high, _ = bounded_intervals((x - lo[:, None]) / width[:, None])
    return x.mean(axis=1), lo + width * low, lo + width * high


def chosen_unpaired(
    a: np.ndarray, b: np.ndarray, scale: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """`unpaired_diff_interval` (MOVER on the two means' intervals) of a - b per row."""
    lo, hi = scale
    m1, l1, u1 = _mean_rows(a, lo, hi)
    m2, l2, u2 = _mean_rows(b, lo, hi)
    diff = m1 - m2
    low, high = diff - np.hypot(m1 - l1, u2 - m2), diff + np.hypot(u1 - m1, m2 - l2)
    flat = ~(hi > lo)
    low[flat], high[flat] = diff[flat], diff[flat]
    return low, high


def unpaired_kinds() -> list[tuple[str, Kind, Kind]]:
    """Two runs' populations, each a kind of `mean_kinds`: (name, first, second)."""
    by_name = {k.name: k for k in mean_kinds()}
    pairs = [
        ("0/1: 0.35 vs 0.3", "p=0.3", "p=0.3"), ("0/1: 0.05 vs 0.05", "p=0.05", "p=0.05"),
        ("0/1: 0.95 vs 0.9", "p=0.95", "p=0.9"),
        ("similarity 0.7 vs 0.5", "similarity 0.7 sd 0.1", "similarity 0.5 sd 0.2"),
        ("weighted faithfulness vs bimodal", "weighted faithfulness 85/15", "bimodal 70/30"),
        ("likert mostly 5 vs 4-or-5", "likert mostly 5, thin tail", "likert 4 or 5"),
        ("likert mostly 4 vs centred", "likert mostly 4", "likert centred"),
        ("likert mostly 5 vs itself", "likert mostly 5, thin tail", "likert mostly 5, thin tail"),
    ]
    out = []
    for name, first, second in pairs:
        a = by_name[first]
        if name.startswith("0/1: 0.35"):
            a = Kind("p=0.35", "binary", (0, 1), lambda r, s: (r.random(s) < 0.35).astype(float), 0.35)
        out.append((name, a, by_name[second]))
    return out
