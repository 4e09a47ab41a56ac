"""What judging one more answer costs, for the budget planner (`ragwatch.review.plan`).

Calls and tokens per answer come from the run's own judge usage (`MetricResult.details["usage"]`: the
judge's requests over the answers it tried, its tokens per call sent); when every call was a cache hit
the usage history's typical tokens for the judge's stages stand in. Seconds per call are
`ragwatch.llm.history.stage_rate`'s (the machine's recorded wall time per call of each of the judge's
stages, weighted by the calls each stage sends), dollars the cost map's (`ragwatch.llm.pricing`: 0 for
a local model; None for a model it does not price), batch dollars the map's batch prices (else its
discount) for a provider with a batch API (`ragwatch.llm.provider_batch.BATCH_PROVIDERS`).

Example:
    >>> unit = judge_unit_cost(result, read_history())  # doctest: +SKIP
    >>> unit.calls_per_answer, unit.seconds_per_call  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragwatch.llm.history import StageRecord, stage_rate, typical
from ragwatch.llm.models import is_local
from ragwatch.llm.pricing import call_cost, is_priced
from ragwatch.results import MetricResult
from ragwatch.review.plan import UnitCost


def judge_stages(result: MetricResult, records: Sequence[StageRecord], model: str) -> list[str]:
    """The usage-history stages of the judge behind `result` (`judge <name> stage <k>`; a judge that
    scores several metrics records under each of their names' judge)."""
    names = {result.name, *(result.details.get("usage_shared_by") or [])}
    pattern = re.compile(r"^judge (.+) stage \d+$")
    seen = {r.stage for r in records if r.model == model and (m := pattern.match(r.stage)) and m.group(1) in names}
    return sorted(seen)


def judge_unit_cost(result: MetricResult, records: Sequence[StageRecord]) -> UnitCost | None:
    """Calls, seconds and dollars of judging one more answer like the run's; None when the run's
    usage does not say which model judged it or how many calls an answer takes."""
    usage = result.details.get("usage") or {}
    model = result.info.judge_model or usage.get("model") or ""
    tried = result.n_scored + result.n_failed
    requests = int(usage.get("requests") or 0)
    if not model or not tried or not requests:
        return None
    calls_per_answer = requests / tried
    stages = judge_stages(result, records, model)
    sent = int(usage.get("calls") or 0)
    if sent:
        prompt, completion = usage.get("prompt_tokens", 0) / sent, usage.get("completion_tokens", 0) / sent
    else:  # every call a cache hit: the history's typical tokens of these stages
        seen = [t for s in stages if (t := typical(records, model, s)) is not None]
        calls = sum(t.calls for t in seen)
        prompt = sum(t.prompt_tokens * t.calls for t in seen) / calls if calls else None
        completion = sum(t.completion_tokens * t.calls for t in seen) / calls if calls else None
    seconds, rate = _seconds_per_call(records, model, stages)
    dollars = batch = None
    if prompt is not None and completion is not None and is_priced(model):
        dollars = call_cost(model, prompt, completion) * calls_per_answer
        if not is_local(model) and _has_batch(model):
            batch = call_cost(model, prompt, completion, batch=True) * calls_per_answer
    return UnitCost(model=model, calls_per_answer=calls_per_answer, seconds_per_call=seconds,
                    dollars_per_answer=dollars, batch_dollars_per_answer=batch, rate=rate)


def _seconds_per_call(records: Sequence[StageRecord], model: str, stages: list[str]) -> tuple[float | None, str]:
    """The stages' recorded seconds per call, weighted by the calls each sends (`typical`)."""
    found = [(rate, t.calls) for s in stages
             if (rate := stage_rate(records, model, s)) is not None and (t := typical(records, model, s)) is not None]
    if not found:
        return None, f"no recorded run of this judge with {model} on this machine"
    total = sum(calls for _, calls in found)
    seconds = sum(rate.seconds_per_call * calls for rate, calls in found) / total
    return seconds, "; ".join(f"{rate.stage}: {rate.describe()}" for rate, _ in found)


def _has_batch(model: str) -> bool:
    from ragwatch.llm.provider_batch import batch_provider

    try:
        batch_provider(model)
    except Exception:  # not a batch provider, or a model litellm cannot place: no batch price either way
        return False
    return True
