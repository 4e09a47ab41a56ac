"""Per-question retrieval measures over the gains of one judged ranking.

They follow the usual IR definitions (the same as `ranx`/trec_eval): precision@k divides by k even
when fewer than k chunks came back; nDCG uses gain = grade / log2(rank + 1) with the ideal DCG from
the judged relevant items; AP divides by the number of relevant items.

Example:
    >>> hit_at_k([0.0, 1.0, 0.0], 1), reciprocal_rank([0.0, 1.0, 0.0])
    (0.0, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ragwatch.retrieval.matching import Judgement


def first_relevant_rank(gains: Sequence[float]) -> int | None:
    """1-based rank of the first relevant result, None when nothing relevant was retrieved."""
    return next((i + 1 for i, g in enumerate(gains) if g > 0), None)


def hit_at_k(gains: Sequence[float], k: int) -> float:
    return float(any(g > 0 for g in gains[:k]))


def recall_at_k(gains: Sequence[float], n_relevant: int, k: int) -> float:
    return sum(1 for g in gains[:k] if g > 0) / n_relevant


def precision_at_k(gains: Sequence[float], k: int) -> float:
    """Relevant results in the top k divided by k (fewer than k results still divide by k)."""
    return sum(1 for g in gains[:k] if g > 0) / k


def reciprocal_rank(gains: Sequence[float]) -> float:
    rank = first_relevant_rank(gains)
    return 0.0 if rank is None else 1.0 / rank


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(gains: Sequence[float], relevant_grades: Sequence[float], k: int) -> float:
    """Graded nDCG@k, gain = grade / log2(rank + 1); the ideal ranking puts the judged items first."""
    ideal = _dcg(sorted(relevant_grades, reverse=True)[:k])
    return _dcg(gains[:k]) / ideal if ideal > 0 else 0.0


def average_precision(gains: Sequence[float], n_relevant: int, k: int | None = None) -> float:
    """Mean of precision@r over the ranks r of relevant results (within k), divided by all relevant."""
    top = gains if k is None else gains[:k]
    found, total = 0, 0.0
    for i, g in enumerate(top):
        if g > 0:
            found += 1
            total += found / (i + 1)
    return total / n_relevant


def question_measures(judgement: Judgement, ks: Sequence[int]) -> dict[str, float]:
    """All measures of one judged ranking (the judgement must have at least one relevant item)."""
    gains, grades = judgement.gains, judgement.relevant_grades
    n_rel = len(grades)
    out: dict[str, float] = {"mrr": reciprocal_rank(gains), "map": average_precision(gains, n_rel)}
    for k in ks:
        out[f"hit_rate@{k}"] = hit_at_k(gains, k)
        out[f"recall@{k}"] = recall_at_k(gains, n_rel, k)
        out[f"precision@{k}"] = precision_at_k(gains, k)
        out[f"ndcg@{k}"] = ndcg_at_k(gains, grades, k)
    return out
