"""How far a person's label of an item is expected to land from the judge's score: the item's `spread`.

Active labelling (`ragwatch.statistics.active`) draws items in proportion to it, and the gate's labels
plan (`ragwatch.decision.labels_plan`) sizes a labelling round with it. For an item whose statements
carry a calibrated P(supported) `p_j` (faithfulness), the label is the share of its m statements a
reader finds supported, so given the judge

    E[(label - score)^2] = sum_j p_j (1 - p_j) / m^2  +  (mean_j p_j - score)^2

(independent statements; the second term is zero when the score is the mean P(supported), and is the
gap to the verdict share otherwise). For any other judged item, its score `s` rescaled to [0, 1] is
read as a probability: `sqrt(s (1 - s))`, in the metric's units. Spreads only steer where labels go:
a wrong spread widens the interval, it never biases the estimate. The first term alone is the
item's `noise`, what its label varies by given a calibrated judge: the prediction-powered interval
takes it as a floor under the labels' observed variance (`ragwatch.statistics.ppi.ppi_mean`).

Example:
    >>> from ragwatch.results import ItemScore, MetricInfo
    >>> item = ItemScore(item_id="q1", score=1.0, details={"verdicts": [
    ...     {"statement": "a", "verdict": True, "p_supported": 0.9},
    ...     {"statement": "b", "verdict": True, "p_supported": 0.6}]})
    >>> round(label_spread(item, MetricInfo(scale=(0.0, 1.0))), 3)
    0.445
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragwatch.results import LEVEL_ITEM_KEY, ItemScore, MetricInfo, MetricResult
from ragwatch.statements import statement_verdicts


def probs_spread(probs: Sequence[float], score: float) -> tuple[float, float]:
    """(spread, noise) of an item whose statements have calibrated P(supported) `probs`, scored `score`:
    noise = sqrt(sum p (1 - p)) / m, what labels vary by given the judge; spread adds the gap between
    the mean P(supported) and the score."""
    ps = [min(max(float(p), 0.0), 1.0) for p in probs]
    m = len(ps)
    noise_var = sum(p * (1 - p) for p in ps) / m**2
    return math.sqrt(noise_var + (sum(ps) / m - float(score)) ** 2), math.sqrt(noise_var)


def item_spread(item: ItemScore, info: MetricInfo) -> tuple[float, float]:
    """(spread, noise) of one scored item, in the metric's units (see the module doc)."""
    if item.score is None:
        return 0.0, 0.0
    probs = [v.p_supported for v in statement_verdicts(item.details)]
    if probs and all(p is not None for p in probs):
        level = item.details.get(LEVEL_ITEM_KEY)  # the judge's value PPI corrects, when the score is a level
        judged = float(level) if isinstance(level, int | float) else float(item.score)
        return probs_spread(probs, judged)  # type: ignore[arg-type]
    low, high = info.scale or (0.0, 1.0)
    width = high - low if high > low else 1.0
    s = min(max((float(item.score) - low) / width, 0.0), 1.0)
    sd = math.sqrt(s * (1 - s)) * width
    return sd, sd


def expected_label(item: ItemScore) -> float | None:
    """The label the judge expects a reader to give: the item's value of the level when its metric's
    score is one (`LEVEL_ITEM_KEY`: calibrated for the readers' level, the headline's own quantity), else
    the mean P(supported) of its statements when they carry one, else its score."""
    level = item.details.get(LEVEL_ITEM_KEY)
    if item.score is not None and isinstance(level, int | float):
        return float(level)
    probs = [v.p_supported for v in statement_verdicts(item.details)]
    if probs and all(p is not None for p in probs):
        return sum(min(max(float(p), 0.0), 1.0) for p in probs) / len(probs)  # type: ignore[arg-type]
    return None if item.score is None else float(item.score)


def label_spread(item: ItemScore, info: MetricInfo) -> float:
    """The expected size of (label - judge score) for one scored item, in the metric's units."""
    return item_spread(item, info)[0]


def spreads_of(result: MetricResult) -> dict[str, tuple[float, float]]:
    """item id -> (spread, noise) of every scored item of `result`."""
    return {it.item_id: item_spread(it, result.info) for it in result.items if it.ok and it.score is not None}
