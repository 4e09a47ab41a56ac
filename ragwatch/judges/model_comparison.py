"""Compare several judge models on the same items: score distributions, agreement and cost, one table.

One row per (metric, judge). Agreement columns compare each judge with a reference judge (the
first one unless `reference=` names another) over the items both scored: Cohen's kappa and Hamming
distance on pass/fail, Spearman on the scores, and for 1-5 metrics quadratic-weighted kappa. Pass/fail
is an item's `passed`, or `score >= info.threshold` when the metric has a threshold.
Agreement math comes from `ragwatch.statistics.agreement`.

Example:
    >>> table = compare_judges({"qwen-0.5b": results_a, "gpt-4o": results_b})  # doctest: +SKIP
    >>> table[["metric", "judge", "mean", "kappa_pass", "spearman", "cost_usd"]]  # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ragwatch.judges.engine import passes
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.statistics.agreement import cohen_kappa, hamming_distance, spearman, weighted_kappa

if TYPE_CHECKING:
    import pandas as pd


def _pass_label(item: ItemScore, info: MetricInfo) -> bool | None:
    if item.passed is not None:
        return item.passed
    return passes(item.score, info) if item.score is not None else None


def _distribution(scores: list[float]) -> dict[str, int] | dict[str, float]:
    if scores and all(float(s).is_integer() for s in scores):
        counts = Counter(int(s) for s in scores)
        return {str(k): counts[k] for k in sorted(counts)}
    if not scores:
        return {}
    import pandas as pd  # ~0.5 s to import: `import ragwatch.judges` (config validation) needs none of it

    qs = pd.Series(scores).quantile([0.0, 0.25, 0.5, 0.75, 1.0])
    return {f"q{int(q * 100)}": round(float(v), 4) for q, v in qs.items()}


def compare_judges(
    judge_results: dict[str, dict[str, MetricResult]], *, reference: str | None = None
) -> pd.DataFrame:
    """`judge_results[judge_model][metric]` -> one row per (metric, judge), agreement vs `reference`."""
    import pandas as pd

    if not judge_results:
        raise ValueError(
            "compare_judges needs results of at least one judge: {judge_model: {metric: MetricResult}}"
        )
    judges = list(judge_results)
    reference = reference or judges[0]
    if reference not in judge_results:
        raise ValueError(f"reference judge {reference!r} is not among the judges {judges}")
    metrics = sorted({m for res in judge_results.values() for m in res})
    rows = []
    for metric in metrics:
        ref = judge_results[reference].get(metric)
        for judge in judges:
            result = judge_results[judge].get(metric)
            if result is None:
                continue
            scores = [it.score for it in result.items if it.ok and it.score is not None]
            usage = result.details.get("usage") or {}
            row: dict[str, Any] = {
                "metric": metric,
                "judge": judge,
                "mean": result.score,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "weighted_mean": result.details.get("weighted"),
                "n_scored": result.n_scored,
                "n_failed": result.n_failed,
                "pass_rate": result.details.get("pass_rate"),
                "distribution": _distribution(scores),
                "calls": usage.get("calls"),
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "latency_s": usage.get("latency_s"),
                "cost_usd": usage.get("cost_usd"),
                "reference": reference,
            }
            row.update(_agreement(ref, result) if ref is not None else _agreement_empty())
            rows.append(row)
    return pd.DataFrame(rows)


def _agreement_empty() -> dict[str, Any]:
    return {"n_paired": 0, "kappa_pass": None, "hamming_pass": None, "spearman": None, "kappa_weighted": None}


def _agreement(ref: MetricResult, other: MetricResult) -> dict[str, Any]:
    """Agreement over items both judges scored (matched by item id)."""
    ref_items = {it.item_id: it for it in ref.items if it.ok}
    pairs = [(ref_items[it.item_id], it) for it in other.items if it.ok and it.item_id in ref_items]
    out = _agreement_empty()
    out["n_paired"] = len(pairs)
    if not pairs:
        return out
    a = [float(x.score) for x, _ in pairs]  # type: ignore[arg-type]
    b = [float(y.score) for _, y in pairs]  # type: ignore[arg-type]
    out["spearman"] = spearman(a, b)
    if all(v.is_integer() and 1 <= v <= 5 for v in a + b):
        out["kappa_weighted"] = weighted_kappa([int(v) for v in a], [int(v) for v in b])
    labels = [
        (_pass_label(x, ref.info), _pass_label(y, other.info))
        for x, y in pairs
    ]
    labels = [(p, q) for p, q in labels if p is not None and q is not None]
    if labels:
        pa, pb = [p for p, _ in labels], [q for _, q in labels]
        out["kappa_pass"] = cohen_kappa(pa, pb)
        out["hamming_pass"] = hamming_distance(pa, pb)
    return out
