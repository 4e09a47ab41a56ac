"""The one judge engine: every declared judge runs through `run_judge`.

A judge declares, per item, a *plan*: a generator that yields lists of `Call`s (one stage) and
receives their `Generation`s, and finally returns a `Score` (or `{metric: Score}` for a judge that
yields several metrics). The engine drives the plans of all items in lockstep, so each stage of
every item goes out in one batch (`LLMClient.generate_many`, calls with different schemas run
concurrently), asks for logprobs when the judge wants them, turns an exception in a plan into an
explicit failure of that item, counts the usage of exactly this judge's calls, and builds each
`MetricResult` with the judge's typed `MetricInfo` (pass/fail from `info.threshold`).

Multi-stage judges read as straight code: create-and-refine over context windows is a loop that
yields one stage per window (see `faithfulness.py`). A judge without LLM calls (similarity) is a
plan that yields nothing, or overrides `evaluate_all`.

Example (a complete judge):
    >>> class Shout(LLMJudge):
    ...     metrics = {"shout": MetricInfo(scale=(0.0, 1.0), binary=True, prompt_version="shout-v1")}
    ...     def plan(self, sample, answer):
    ...         if not answer.answer:
    ...             return Score(error="empty answer")
    ...         yield []  # no LLM call needed; a real judge yields [Call(...)] and gets replies back
    ...         return Score(score=float(answer.answer.isupper()))
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ragwatch.llm.types import Generation, Usage
from ragwatch.progress import Progress
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.types import EvalSample, RagAnswer


@dataclass(frozen=True)
class Call:
    """One LLM call of one stage: chat messages, the output schema and system prompt to use."""

    messages: list[dict[str, str]]
    schema: type[BaseModel] | None = None
    system: str | None = None
    logprobs: bool = False


@dataclass
class Score:
    """One item's outcome for one metric: a score (and details), or the reason it has none."""

    score: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    passed: bool | None = None  # None: decided by the metric's threshold, if it has one
    skipped: bool = False  # not applicable to the item (`ItemScore.skipped`), e.g. NO_REFERENCE


Outcome = Score | dict[str, Score]
Plan = Generator[list[Call], list[Generation], Outcome]


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def usage_of(generations: Sequence[Generation], model: str) -> Usage:
    """Usage totals of exactly these generations (per judge, not the client's lifetime)."""
    usage = Usage(model=model)
    for gen in generations:
        usage.add(gen)
    return usage


def passes(score: float, info: MetricInfo) -> bool | None:
    """Pass/fail of an item score against the metric's threshold (None without a threshold)."""
    if info.threshold is None:
        return None
    return score >= info.threshold if info.higher_is_better else score <= info.threshold


def metric_result(
    name: str,
    item_ids: Sequence[str],
    scores: Sequence[Score],
    info: MetricInfo,
    usage: Usage,
    extra: dict[str, Any] | None = None,
    *,
    judge_model: str | None = None,
) -> MetricResult:
    """`MetricResult` with typed `info` and the details every judge reports: usage, pass rate, weighted.

    The info is stamped here, for every judge: family "judge" and the model behind the scores.
    """
    info = info.model_copy(update={"family": "judge", "judge_model": judge_model or None})
    items = []
    for item_id, s in zip(item_ids, scores, strict=True):
        if s.error is not None or s.score is None:
            items.append(ItemScore(item_id=item_id, error=s.error or "not scored", details=s.details,
                                   skipped=s.skipped and s.error is not None))
            continue
        passed = s.passed if s.passed is not None else passes(s.score, info)
        items.append(ItemScore(item_id=item_id, score=s.score, passed=passed, details=s.details))
    details: dict[str, Any] = {"usage": usage.model_dump()}
    judged = [it.passed for it in items if it.ok and it.passed is not None]
    if info.threshold is not None or judged:
        details["pass_rate"] = sum(judged) / len(judged) if judged else None
    weighted = [
        it.details["weighted_score"]
        for it in items
        if it.ok and isinstance(it.details.get("weighted_score"), int | float)
    ]
    details["weighted"] = mean(weighted)
    details["n_weighted"] = len(weighted)
    details.update(extra or {})
    return MetricResult.from_items(name, items, details=details, info=info)


class LLMJudge:
    """Base of every declared judge: `metrics` (name -> `MetricInfo`) and `plan(sample, answer)`.

    Subclasses set `metrics` (in `__init__`, or as a class attribute when no option changes it)
    and implement `plan`. `details()` adds judge-level details per metric.
    """

    metrics: dict[str, MetricInfo]
    llm: Any = None
    model: str | None = None  # the judge LLM's model string as configured (`JudgeDeps.model`), never read off `llm`
    use_logprobs: bool = False

    @property
    def name(self) -> str:
        """The judge's name: `_name` when set (a multi-metric judge), else its first metric's."""
        return getattr(self, "_name", None) or next(iter(self.metrics))

    def plan(self, sample: EvalSample, answer: RagAnswer) -> Plan | Outcome:
        """A generator of stages returning the outcome, or the outcome at once (no LLM call)."""
        raise NotImplementedError

    @property
    def judge_model(self) -> str | None:
        """The model behind the scores (`MetricInfo.judge_model`); None for a judge without one."""
        return self.model or None

    def details(self, metric: str) -> dict[str, Any]:
        """Judge-level details of one metric (prompt family, ...)."""
        return {}

    def unavailable(self, answers: Sequence[RagAnswer]) -> str | None:
        """Why this judge can score none of this system's answers (a property of the system, e.g. it
        returns no token logprobs), or None. `run_judges` then reports its metrics as unavailable
        (`unavailable_metrics`) instead of as one failure per item."""
        return None

    def call(
        self, messages: list[dict[str, str]], schema: type[BaseModel] | None = None, system: str | None = None
    ) -> Call:
        """A `Call` with this judge's logprob setting."""
        return Call(messages=messages, schema=schema, system=system, logprobs=self.use_logprobs)

    def evaluate_all(self, samples: list[EvalSample], answers: list[RagAnswer]) -> dict[str, MetricResult]:
        return run_judge(self, samples, answers)

    def evaluate(self, samples: list[EvalSample], answers: list[RagAnswer]) -> MetricResult:
        """The judge's first (for most judges: only) metric."""
        return self.evaluate_all(samples, answers)[self.name]


def check_aligned(samples: Sequence[EvalSample], answers: Sequence[RagAnswer]) -> None:
    if len(samples) != len(answers):
        raise ValueError(
            f"{len(samples)} samples but {len(answers)} answers: pass one answer per sample, "
            "in the same order (answers[i] answers samples[i])"
        )


def logprob_overrides(use_logprobs: bool, top_logprobs: int = 5) -> dict[str, Any]:
    """Overrides for `generate_many` that ask the provider for token logprobs."""
    return {"logprobs": True, "top_logprobs": top_logprobs} if use_logprobs else {}


def gather(plans: dict[str, Plan | Outcome]) -> Generator[list[Call], list[Generation], dict[str, Any]]:
    """Run several plans side by side, their stages merged into one: `{key: outcome}`.

    The engine gathers the plans of all items; a multi-metric judge can gather sub-plans of one
    item (the rubric's four Prometheus calls). A plan that raises becomes a failed `Score`.
    """
    out: dict[str, Any] = {}
    active: dict[str, tuple[Plan, list[Call]]] = {}

    def step(key: str, plan: Plan, replies: list[Generation] | None) -> None:
        try:
            while True:
                calls = next(plan) if replies is None else plan.send(replies)
                if calls:
                    active[key] = (plan, list(calls))
                    return
                replies = []
        except StopIteration as stop:
            out[key] = stop.value if stop.value is not None else Score(error="judge gave no outcome")
        except Exception as exc:
            out[key] = _bug(exc)

    for key, plan in plans.items():
        if isinstance(plan, Score | dict):  # decided without any stage
            out[key] = plan
        else:
            step(key, plan, None)
    while active:
        stage = dict(active)
        active.clear()
        flat = [(key, c) for key, (_, calls) in stage.items() for c in calls]
        gens = yield [c for _, c in flat]
        replies: dict[str, list[Generation]] = {}
        for (key, _), gen in zip(flat, gens, strict=True):
            replies.setdefault(key, []).append(gen)
        for key, (plan, _) in stage.items():
            step(key, plan, replies[key])
    return out


def _batch(
    llm: Any, calls: list[Call], desc: str | Progress | None = None, stage: str | None = None
) -> list[Generation]:
    """All calls of one stage: one `generate_many` per (schema, system, logprobs), run concurrently
    (they share the client's concurrency limit), results in input order. `desc`: a label, or the
    judge's one `Progress` every batch advances; `stage`: the calls' usage-history label. With
    `batch: true`, one provider batch for the whole stage."""
    if getattr(getattr(llm, "settings", None), "batch", False):  # the whole stage as one provider batch
        return llm.generate_stage([(c.messages, c.schema, c.system, logprob_overrides(c.logprobs)) for c in calls],
                                  desc=desc, stage=stage)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, c in enumerate(calls):
        groups.setdefault((c.schema, c.system, c.logprobs), []).append(k)

    def run(key: tuple[Any, ...]) -> list[Generation]:
        schema, system, logprobs = key
        prompts = [calls[k].messages for k in groups[key]]
        return llm.generate_many(prompts, schema=schema, system=system, desc=desc, stage=stage,
                                 **logprob_overrides(logprobs))

    out: list[Generation | None] = [None] * len(calls)
    keys = list(groups)
    if len(keys) == 1:
        results = [run(keys[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(len(keys), 16)) as pool:
            results = list(pool.map(run, keys))
    for key, gens in zip(keys, results, strict=True):
        for k, gen in zip(groups[key], gens, strict=True):
            out[k] = gen
    return [g for g in out if g is not None]


def drive(
    plan: Generator[list[Call], list[Generation], Any], llm: Any, desc: str | None = None
) -> tuple[Any, list[Generation]]:
    """Run a plan (or gathered plans) to its end with `llm`: (its return value, every generation).

    With `desc`, one progress bar counts the calls of every stage: a later stage (only the items
    still undecided go on) grows its total, so the judge reads as one sequence of lines with one
    estimate of the time left, not a bar per stage and per batch."""
    every: list[Generation] = []
    progress: Progress | None = None
    stage = 0
    try:
        calls = next(plan)
        while True:
            stage += 1
            if desc and calls:
                if progress is None:
                    progress = Progress(len(calls), desc, unit="calls")
                    progress.more_may_come = True
                else:
                    progress.grow(len(calls))
            gens = _batch(llm, calls, progress, f"{desc} stage {stage}" if desc else None)
            every += gens
            calls = plan.send(gens)
    except StopIteration as stop:
        return stop.value, every
    finally:
        if progress is not None:
            progress.close()


def _bug(exc: BaseException) -> Score:
    return Score(error=f"judge error: {type(exc).__name__}: {exc}")


def judged_key(answer: str, statements: Sequence[str] | None = None) -> str:
    """A short hash of the answer text (and its statements): what a label of the item is about."""
    import hashlib

    text = answer if statements is None else "\x1f".join([answer, *statements])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_judge(judge: LLMJudge, samples: list[EvalSample], answers: list[RagAnswer]) -> dict[str, MetricResult]:
    """Run every item's plan, stage by stage in batches; one `MetricResult` per declared metric."""
    check_aligned(samples, answers)
    plans: dict[str, Plan | Outcome] = {}
    for i, (sample, answer) in enumerate(zip(samples, answers, strict=True)):
        try:
            plans[str(i)] = judge.plan(sample, answer)
        except Exception as exc:
            plans[str(i)] = _bug(exc)
    outcomes, every = drive(gather(plans), judge.llm, desc=f"judge {judge.name}")
    for i, answer in enumerate(answers):
        _stamp_judged(outcomes[str(i)], answer)

    usage = usage_of(every, judge.model or "")
    ids = [s.id for s in samples]
    results: dict[str, MetricResult] = {}
    names = list(judge.metrics)
    for name in names:
        scores = []
        for i in range(len(samples)):
            out = outcomes[str(i)]
            if isinstance(out, Score):
                scores.append(out if len(names) == 1 or out.error is not None else _missing(name))
            else:
                scores.append(out.get(name) or _missing(name))
        extra = judge.details(name)
        if len(names) > 1:
            extra["usage_shared_by"] = names
        results[name] = metric_result(name, ids, scores, judge.metrics[name], usage, extra,
                                      judge_model=judge.judge_model)
    return results


def _stamp_judged(outcome: Outcome, answer: RagAnswer) -> None:
    """Put the key of exactly what was judged (the answer, and the statements when there are some) on
    every score, so a human label given for it is never attached to a different answer later."""
    for score in outcome.values() if isinstance(outcome, dict) else [outcome]:
        statements = score.details.get("statements")
        score.details["judged_key"] = judged_key(answer.answer, statements if isinstance(statements, list) else None)


def _missing(metric: str) -> Score:
    return Score(error=f"the judge returned no score for {metric}")


def unavailable_metrics(judges: Sequence[Any], answers: Sequence[RagAnswer]) -> dict[str, str]:
    """Metric name -> why the system under test cannot have it (`LLMJudge.unavailable`); `run_judges`
    leaves these judges out, so the run lists them as not available rather than as failed items."""
    out: dict[str, str] = {}
    for judge in judges:
        if (reason := _unavailable(judge, answers)) is not None:
            out.update(dict.fromkeys(judge.metrics, reason))
    return out


def _unavailable(judge: Any, answers: Sequence[RagAnswer]) -> str | None:
    check = getattr(judge, "unavailable", None)  # a judge of one's own need not derive from LLMJudge
    return check(answers) if check is not None else None


def run_judges(judges: Sequence[Any], samples: list[EvalSample], answers: list[RagAnswer]) -> dict[str, MetricResult]:
    """Run every judge; each contributes all its metrics. Two judges may not yield one metric name.
    A judge that is unavailable for this system (`unavailable_metrics`) contributes none.

    Example:
        >>> results = run_judges(build_judges(JudgesConfig(), llm), samples, answers)  # doctest: +SKIP
    """
    check_aligned(samples, answers)
    results: dict[str, MetricResult] = {}
    for judge in judges:
        if _unavailable(judge, answers) is not None:
            continue
        for name, result in judge.evaluate_all(samples, answers).items():
            if name in results:
                raise ValueError(f"two judges produce a metric named {name!r}: give custom judges unique names")
            results[name] = result
    return results
