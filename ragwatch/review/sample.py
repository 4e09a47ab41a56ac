"""Which judged items a person reviews: a seeded sample of a run, drawn where labels count.

`review_sample` draws `n` judged items of a run in one of two designs:
- "active" (the default): active labelling (`ragwatch.statistics.active`): item i is drawn with
  probability `inclusion_prob` proportional to its `label_spread` on the first metric (how far a
  reader's label is expected to land from the judge's score, `ragwatch.review.spread`), mixed with a
  uniform floor so every item can be drawn; the rows come in random order, so any first k labelled
  keep the ratios of those probabilities. The estimate weights each label by 1 / inclusion_prob
  (`ragwatch.review.labelled`) and stays unbiased; its interval narrows where the judge is unsure.
- "uniform": stratified by the judge's verdict on the first metric (pass/fail at its threshold, or
  the low/middle/high third of its scale), with proportional allocation and at least 2 items per
  stratum, so every item has about n/N (items drawn / items in the stratum).
Every row records its `stratum` (the judge's verdict, shown on the page) and `inclusion_prob`, the run it came from, and
one empty `label:<metric>` column per metric; the judge's scores sit in separate `judge:<metric>`
columns a reviewer may hide. `review export` writes the rows as files (`ragwatch.review.files`);
the review page shows them one at a time (`ragwatch.review.session`).

Example:
    >>> sample = review_sample(rows, metrics, n=50, seed=0, run_id="...")  # doctest: +SKIP
    >>> sample.strata  # doctest: +SKIP
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from ragwatch.results import MetricInfo, MetricResult
from ragwatch.review.spread import spreads_of
from ragwatch.statistics.active import DEFAULT_FLOOR, active_probabilities, draw_pps

Design = Literal["active", "uniform"]
DESIGNS: tuple[str, ...] = ("active", "uniform")

LABEL_PREFIX, JUDGE_PREFIX = "label:", "judge:"
MIN_PER_STRATUM = 2
BASE_COLUMNS = ["item_id", "run_id", "stratum", "inclusion_prob", "question", "answer", "contexts",
                "reference_answer", "reviewer", "note"]


class ReviewSample(BaseModel):
    """The items drawn for review, how they were drawn, and the rows to write."""

    run_id: str
    metrics: list[str]
    seed: int
    stratified_by: str
    strata: dict[str, dict[str, int]]  # stratum -> {"items": N_h, "drawn": n_h}
    rows: list[dict[str, Any]] = Field(default_factory=list)
    design: Design = "uniform"  # samples saved before active labelling were stratified-uniform

    def describe(self) -> str:
        """How the items were drawn, in one phrase (export and serve print it)."""
        strata = ", ".join(f"{h} {c['drawn']}/{c['items']}" for h, c in self.strata.items())
        if self.design == "active":
            return (f"active: drawn where the {self.stratified_by} judge is least sure, weighted back by "
                    f"1/inclusion probability; by verdict {strata}")
        return f"stratified by the {self.stratified_by} judge: {strata}"


def default_review_metrics(metrics: dict[str, MetricResult]) -> list[str]:
    """Judged metrics with a prompt (a reviewer answers the judge's question) and a scored item."""
    return [name for name, m in metrics.items()
            if m.info.is_judge and m.info.prompt_version and m.n_scored and m.info.scale]


def stratum_of(score: float | None, info: MetricInfo) -> str:
    """`fail`/`pass` at the metric's threshold (0.5 for binary ones), else a third of its scale."""
    if score is None:
        return "unscored"
    threshold = info.threshold if info.threshold is not None else (0.5 if info.binary else None)
    if threshold is not None:
        return "pass" if score >= threshold else "fail"
    low, high = info.scale or (0.0, 1.0)
    third = (score - low) / (high - low) if high > low else 0.0
    return "low" if third < 1 / 3 else "middle" if third < 2 / 3 else "high"


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of `n` draws over strata, at least 2 per stratum where it has 2."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    take = {h: min(size, MIN_PER_STRATUM) for h, size in sizes.items()}
    left = n - sum(take.values())
    if left < 0:  # fewer draws than 2 per stratum: the largest strata first
        take = dict.fromkeys(sizes, 0)
        for h in sorted(sizes, key=lambda h: -sizes[h])[:n]:
            take[h] = 1
        return take
    room = {h: sizes[h] - take[h] for h in sizes}
    quota = {h: left * room[h] / max(sum(room.values()), 1) for h in sizes}
    for h in sizes:
        take[h] += math.floor(quota[h])
    rest = n - sum(take.values())
    for h in sorted(sizes, key=lambda h: -(quota[h] - math.floor(quota[h]))):
        if rest == 0:
            break
        if take[h] < sizes[h]:
            take[h] += 1
            rest -= 1
    return take


def review_sample(
    rows: Sequence[dict[str, Any]],
    metrics: dict[str, MetricResult],
    *,
    n: int = 50,
    metric_names: Sequence[str] | None = None,
    seed: int = 0,
    run_id: str = "",
    design: Design = "active",
    floor: float = DEFAULT_FLOOR,
) -> ReviewSample:
    """Draw `n` judged items of a run for review (see the module doc).

    `rows` are the run's per-item rows (`eval_results`: item_id, question, answer, contexts,
    reference_answer); `metrics` its judged metrics. Items no chosen metric scored are left out.
    `design`: "active" or "uniform"; `floor`: the active design's uniform share.
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown sampling design {design!r}; choose one of {list(DESIGNS)}")
    names = list(metric_names) if metric_names else default_review_metrics(metrics)
    unknown = [m for m in names if m not in metrics]
    if unknown:
        raise ValueError(f"no judged metric {unknown} in this run; choose from {sorted(metrics)}")
    if not names:
        raise ValueError("this run has no LLM-judged metric with scored items: nothing to review")
    if n < 1:
        raise ValueError(f"--n must be at least 1, got {n}")
    scores = {name: {it.item_id: it.score for it in metrics[name].items if it.ok} for name in names}
    judged = [row for row in rows if any(row["item_id"] in scores[m] for m in names)]
    if not judged:
        raise ValueError("no item of this run was scored by the chosen metrics: nothing to review")
    first = names[0]
    strata: dict[str, list[dict[str, Any]]] = {}
    for row in judged:
        strata.setdefault(stratum_of(scores[first].get(row["item_id"]), metrics[first].info), []).append(row)
    sizes = {h: len(members) for h, members in sorted(strata.items())}
    if design == "active":
        drawn = _active_draw(judged, metrics[first], n, seed, floor)
        take = dict.fromkeys(sizes, 0)
        for row, _ in drawn:
            take[stratum_of(scores[first].get(row["item_id"]), metrics[first].info)] += 1
    else:
        take = allocate(sizes, n)
        rng = random.Random(seed)
        drawn = [(row, take[h] / sizes[h]) for h in sorted(strata)
                 for row in (rng.sample(strata[h], take[h]) if take[h] else [])]
    out = []
    for row, prob in drawn:
        record: dict[str, Any] = {
            "item_id": row["item_id"], "run_id": run_id,
            "stratum": stratum_of(scores[first].get(row["item_id"]), metrics[first].info),
            "inclusion_prob": prob, "question": row.get("question", ""),
            "answer": row.get("answer", ""), "contexts": list(row.get("contexts") or []),
            "reference_answer": row.get("reference_answer") or "", "reviewer": "", "note": "",
        }
        record.update({LABEL_PREFIX + m: "" for m in names})
        record.update({JUDGE_PREFIX + m: scores[m].get(row["item_id"], "") for m in names})
        out.append(record)
    return ReviewSample(run_id=run_id, metrics=names, seed=seed, stratified_by=first, design=design,
                        strata={h: {"items": sizes[h], "drawn": take[h]} for h in sizes}, rows=out)


def _active_draw(judged: Sequence[dict[str, Any]], result: MetricResult, n: int, seed: int, floor: float
                 ) -> list[tuple[dict[str, Any], float]]:
    """(row, inclusion probability) of an active draw, in random order (see the module doc).

    Items the first metric did not score (scored by another chosen metric only) get the mean spread.
    """
    spreads = {i: spread for i, (spread, _) in spreads_of(result).items()}
    typical = sum(spreads.values()) / len(spreads) if spreads else 1.0
    spread = np.array([spreads.get(row["item_id"], typical) for row in judged])
    probs = active_probabilities(spread, min(n, len(judged)), floor=floor)
    chosen = draw_pps(probs, np.random.default_rng(seed))
    return [(judged[i], float(probs[i])) for i in chosen]
