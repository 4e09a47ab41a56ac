"""Which judged items a person reviews: a seeded stratified sample of a run.

`review_sample` draws `n` judged items of a run, stratified by the judge's verdict on the first
metric (pass/fail at its threshold, or the low/middle/high third of its scale), with proportional
allocation and at least 2 items per stratum so each stratum can be weighted back. Every row records
its `stratum` and `inclusion_prob` (items drawn / items in the stratum), the run it came from, and
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
from typing import Any

from pydantic import BaseModel, Field

from ragwatch.results import MetricInfo, MetricResult

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
) -> ReviewSample:
    """Draw `n` judged items of a run for review (see the module doc).

    `rows` are the run's per-item rows (`eval_results`: item_id, question, answer, contexts,
    reference_answer); `metrics` its judged metrics. Items no chosen metric scored are left out.
    """
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
    take = allocate(sizes, n)
    rng = random.Random(seed)
    out = []
    for h in sorted(strata):
        drawn = rng.sample(strata[h], take[h]) if take[h] else []
        for row in drawn:
            record: dict[str, Any] = {
                "item_id": row["item_id"], "run_id": run_id, "stratum": h,
                "inclusion_prob": take[h] / sizes[h], "question": row.get("question", ""),
                "answer": row.get("answer", ""), "contexts": list(row.get("contexts") or []),
                "reference_answer": row.get("reference_answer") or "", "reviewer": "", "note": "",
            }
            record.update({LABEL_PREFIX + m: "" for m in names})
            record.update({JUDGE_PREFIX + m: scores[m].get(row["item_id"], "") for m in names})
            out.append(record)
    return ReviewSample(run_id=run_id, metrics=names, seed=seed, stratified_by=first,
                        strata={h: {"items": sizes[h], "drawn": take[h]} for h in sizes}, rows=out)
