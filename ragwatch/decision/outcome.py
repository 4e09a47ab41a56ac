"""Could the run evaluate the system at all? A run whose LLM budget stopped it, whose system under test
was unreachable, or whose judges failed is not a measurement of the system: its gate says "not
evaluated" (`ragwatch.decision.gate.not_evaluated`), never "regression", and it is nobody's baseline.

The thresholds are the team's (`GateThresholds.max_unreachable`, `max_judge_failures`); fewer failures
are measured, not excused: `system/availability` gates a rise in unanswered questions.

Example:
    >>> found = could_not_evaluate(answers, sample_ids, calls, metrics, GateThresholds())
    >>> found  # None, or (cause, what to do)
    ('the system under test at http://127.0.0.1:8000/ask was unreachable (20 of 20 questions: Connection refused)',
     'start it or fix evaluate.system.rag.http.url, then run again')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from ragwatch.decision.thresholds import GateThresholds
from ragwatch.llm.budget import budget_stop
from ragwatch.rag.base import SystemCalls
from ragwatch.results import MetricResult
from ragwatch.types import RagAnswer


def could_not_evaluate(
    answers: Sequence[RagAnswer],
    sample_ids: Sequence[str],
    calls: SystemCalls | None,
    metrics: Mapping[str, MetricResult],
    thresholds: GateThresholds,
) -> tuple[str, str] | None:
    """(cause, what to do) when the run could not evaluate the system, else None.

    In this order: the LLM budget refused a call (any item: the run is incomplete by the user's own
    cap); more than `max_unreachable` of the questions found the system unreachable; the judges
    failed on more than `max_judge_failures` of the items the system answered.
    """
    return (_budget(answers, metrics) or _unreachable(calls, thresholds.max_unreachable)
            or _judges_failed(answers, sample_ids, metrics, thresholds.max_judge_failures))


def _budget(answers: Sequence[RagAnswer], metrics: Mapping[str, MetricResult]) -> tuple[str, str] | None:
    stops = [(stop, "the generator", "evaluate.system.generator")
             for a in answers if (stop := budget_stop(a.error))]
    where: Counter[str] = Counter()
    for name, result in metrics.items():
        for item in result.items:
            if (stop := budget_stop(item.error)) is not None:
                stops.append((stop, "the judges", "evaluate.judges.llm"))
                where[name] += 1
    if not stops:
        return None
    stop, role, key = stops[0]
    refused = (f"{len(answers) - sum(a.ok for a in answers)} of {len(answers)} questions not answered"
               if role == "the generator" else
               ", ".join(f"{name} {n} of {len(metrics[name].items)} items not scored" for name, n in where.items()))
    return (f"the LLM budget stopped the run ({role}: {stop}; {refused})",
            f"raise budget_usd in {key} (or evaluate fewer questions), then run again: "
            "what was scored is cached")


def _unreachable(calls: SystemCalls | None, limit: float) -> tuple[str, str] | None:
    if calls is None or not calls.questions:
        return None
    n = calls.failures.get("unreachable", 0)
    if n / calls.questions <= limit or n == 0:
        return None
    kind, _, where = calls.target.partition(" ")
    reason = _short(max(calls.reasons.items(), key=lambda kv: kv[1])[0]) if calls.reasons else "no reply"
    what = {"http": f"the system under test at {where}", "callable": f"the service behind {where}",
            "builtin": "the generator of the built-in system"}.get(kind, "the system under test")
    action = {"http": "start it or fix evaluate.system.rag.http.url, then run again",
              "callable": "start the service your function calls (or fix its address), then run again",
              "builtin": "start the generator's server or fix evaluate.system.generator (model, api_base), "
                         "then run again"}.get(kind, "start it, then run again")
    return f"{what} was unreachable ({n} of {calls.questions} questions: {reason})", action


def _judges_failed(answers: Sequence[RagAnswer], sample_ids: Sequence[str], metrics: Mapping[str, MetricResult],
                   limit: float) -> tuple[str, str] | None:
    answered = {sid for sid, a in zip(sample_ids, answers, strict=True) if a.ok}
    total = failed = 0
    worst: tuple[int, int, str, str] | None = None
    for name, result in metrics.items():
        if not result.info.is_judge:
            continue
        # an item the system did not answer is the system's failure (availability), not the judge's; one
        # the judge does not apply to (skipped: "no reference answer") is neither
        items = [it for it in result.items if it.item_id in answered and not it.skipped]
        bad = [it for it in items if not it.ok]
        total, failed = total + len(items), failed + len(bad)
        if bad and (worst is None or len(bad) > worst[0]):
            top = Counter(_short(it.error or "") for it in bad).most_common(1)[0][0]
            worst = (len(bad), len(items), name, top)
    if not total or failed / total <= limit or worst is None:
        return None
    n, of, name, top = worst
    return (f"the judges failed on {failed} of {total} answered items ({name}: {n} of {of}, most often: {top})",
            "check the judge model and its server (evaluate.judges.llm: model, api_base), then run again")


def _short(reason: str) -> str:
    """"connection failed: ConnectError: [Errno 111] Connection refused" -> "Connection refused"."""
    # a judge's error leads with the item ("statement 2 ('...') could not be verified: judge call failed: ");
    # the call's own reason, after it, is the same for every item and names the fault and the address
    reason = reason.rpartition("judge call failed: ")[2]
    return re.sub(r"^.*\[Errno -?\d+\]\s*", "", reason).strip()[:160] or reason[:160]
