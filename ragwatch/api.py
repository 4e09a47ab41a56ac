"""Evaluate answers you already have, from a notebook or a test: no ZenML, no pipeline, no index.

A record is one question your system answered: `(question, answer, contexts[, reference])` as a
tuple, a mapping with those keys, or a `Record`. `metrics` names what to measure: a judge
(`faithfulness`, `similarity`, `correctness`, `answer_relevance`, `context_relevance`, `rubric`,
`perplexity`), a metric a judge makes (`answer_confidence`, a rubric criterion), or a lexical check
that calls no model (`answer/context_support`, `answer/reference_coverage`; `system/*` when records
carry `relevant_contexts`). The result is what the pipeline makes: one `MetricResult` per metric
(score, interval, n scored and failed, per-item scores and reasons; the judge's measured agreement
on `info.agreement`). The judge is the shipped one (`ragwatch.llm.types.JUDGE_MODEL`, logprobs where
the provider has them) unless `llm` names another.

Example:
    >>> from ragwatch import evaluate_records
    >>> results = evaluate_records(
    ...     [("What is the capital of France?", "Paris is the capital.", ["Paris is the capital of France."])],
    ...     metrics=["answer/context_support"])
    >>> results["answer/context_support"].score
    1.0
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragwatch.results import MetricResult
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext

NO_CALL_METRICS = ("answer/context_support", "answer/reference_coverage", "system/hit_rate", "system/mrr",
                   "system/context_recall", "system/context_precision")
DEFAULT_METRICS = ("faithfulness", "answer/context_support")
NO_MODEL_JUDGES = ("similarity", "perplexity")  # an embedding model, or logprobs the answers carry


class Record(BaseModel):
    """One answered question. `relevant_contexts`: the passages a good retriever returns (for `system/*`)."""

    model_config = ConfigDict(extra="forbid")

    question: str
    answer: str
    contexts: list[str] = Field(default_factory=list)
    reference: str | None = None
    relevant_contexts: list[str] = Field(default_factory=list)
    id: str | None = None


def evaluate_records(
    records: Iterable[Record | Mapping[str, Any] | Sequence[Any]],
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    llm: Any = None,
    judges: Any = None,
    embedder: Any = None,
) -> dict[str, MetricResult]:
    """Measure `metrics` on `records`; one `MetricResult` per metric, in the order asked.

    `llm`: the judge model: a litellm model string, an `LLMSettings` (or its mapping; keys left out
    keep the judge's defaults) or an `LLMClient`; default the shipped local judge. `judges`: judge
    options as in a config's `judges:` block (e.g. `{"faithfulness": {"max_statements": 8}}`, or
    `custom` rubrics). `embedder`: for `similarity` (default: the packaged local model).
    A judge named in `metrics` contributes every metric it makes (`perplexity` also gives
    `answer_confidence`). Raises `ValueError` for a bad record or an unknown metric, naming it.
    """
    samples, answers = _pairs(records)
    wanted = list(dict.fromkeys(metrics))
    if not wanted:
        raise ValueError("metrics is empty: name at least one, e.g. ['faithfulness', 'answer/context_support']")
    config, client = _judges_config(judges, llm)
    judge_names, made_by = _resolve(wanted, config)
    results: dict[str, MetricResult] = {}
    unavailable: dict[str, str] = {}
    if any(name in NO_CALL_METRICS for name in wanted):
        from ragwatch.checks.system_metrics import system_metrics

        results.update(system_metrics(samples, answers))
    if judge_names:
        judged, unavailable = _judge(config.model_copy(update={"enabled": judge_names}), client, embedder,
                                     samples, answers)
        results.update(judged)
    out: dict[str, MetricResult] = {}
    for name in wanted:
        names = [name] if name in made_by or name in NO_CALL_METRICS else sorted(_judge_metrics(name, config))
        if not (found := [m for m in names if m in results]):
            reasons = "; ".join(f"{m}: {unavailable[m]}" for m in names if m in unavailable) or "nothing made it"
            raise ValueError(f"{name} cannot be measured on these records ({reasons})")
        out.update({m: results[m] for m in found})
    return out


# ------------------------------------------------------------------------------------------ records
def _pairs(records: Iterable[Any]) -> tuple[list[EvalSample], list[RagAnswer]]:
    samples, answers = [], []
    for i, raw in enumerate(records):
        record = _record(i, raw)
        samples.append(EvalSample(id=record.id or f"r{i}", question=record.question,
                                  reference_answer=record.reference, reference_contexts=record.relevant_contexts))
        answers.append(RagAnswer(question=record.question, answer=record.answer,
                                 contexts=[RetrievedContext(text=c) for c in record.contexts]))
    if not samples:
        raise ValueError("no records: pass a list of (question, answer, contexts[, reference])")
    ids = [s.id for s in samples]
    if dupes := sorted({x for x in ids if ids.count(x) > 1}):
        raise ValueError(f"duplicate record ids {dupes[:5]}: each record needs its own id")
    return samples, answers


def _record(i: int, raw: Any) -> Record:
    if isinstance(raw, Record):
        return raw
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        if not 3 <= len(raw) <= 4:
            raise ValueError(f"record {i}: a tuple is (question, answer, contexts[, reference]), got {len(raw)} items")
        raw = dict(zip(("question", "answer", "contexts", "reference"), raw, strict=False))
    if isinstance(raw, Mapping):
        if isinstance(raw.get("contexts"), str):
            raise ValueError(f"record {i}: contexts is one string; pass a list of passages")
        try:
            return Record.model_validate(dict(raw))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"record {i}: {problems} (keys: question, answer, contexts, reference, "
                             "relevant_contexts, id)") from None
    raise ValueError(f"record {i}: expected a tuple, a mapping or a Record, got {type(raw).__name__}")


# ------------------------------------------------------------------------------------------- judges
def _judges_config(judges: Any, llm: Any) -> tuple[Any, Any]:
    """The judges' config (shipped defaults, `judges` options, the `llm` model) and a ready client, if given."""
    from ragwatch.judges.config import JudgesConfig
    from ragwatch.llm.types import LLMSettings

    data = judges.model_dump(exclude_unset=True) if isinstance(judges, BaseModel) else dict(judges or {})
    client = None
    if isinstance(llm, str):
        data["llm"] = {"model": llm}
    elif isinstance(llm, LLMSettings):
        data["llm"] = llm.model_dump(exclude_unset=True)
    elif isinstance(llm, Mapping):
        data["llm"] = dict(llm)
    elif llm is not None:  # a client (anything with settings and generate_many)
        client = llm
        data["llm"] = llm.settings.model_dump(exclude_unset=True)
    try:
        return JudgesConfig.model_validate(data), client
    except ValidationError as exc:
        raise ValueError(f"judge options: {exc}") from None


def _resolve(wanted: list[str], config: Any) -> tuple[list[str], set[str]]:
    """The judges to run, and the metric names asked that a judge makes (not judge names)."""
    from ragwatch.judges import registry

    judge_names = registry.names() + [c.name for c in config.custom]
    run: list[str] = []
    made_by: set[str] = set()
    for name in wanted:
        if name in NO_CALL_METRICS:
            continue
        if name in judge_names:
            run.append(name)
            continue
        owner = next((j for j in judge_names if name in _judge_metrics(j, config)), None)
        if owner is None:
            known = [*NO_CALL_METRICS, *judge_names]
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown metric {name!r}{hint}; choose from {known} or a metric a judge makes")
        run.append(owner)
        made_by.add(name)
    return list(dict.fromkeys(run)), made_by


def _judge_metrics(judge: str, config: Any) -> set[str]:
    """The metric names judge `judge` makes with these options (built without a client: nothing is sent)."""
    from ragwatch.judges import build_judges

    (built,) = build_judges(config.model_copy(update={"enabled": [judge]}), llm=None)
    return set(built.metrics)


def _judge(config: Any, client: Any, embedder: Any, samples: list[EvalSample],
           answers: list[RagAnswer]) -> tuple[dict[str, MetricResult], dict[str, str]]:
    """The enabled judges' metrics, and the metrics these answers cannot have (with the reason)."""
    from ragwatch.judges import build_judges, run_judges, unavailable_metrics
    from ragwatch.llm.client import LLMClient

    calls = any(name not in NO_MODEL_JUDGES for name in config.enabled)
    llm = client if client is not None else LLMClient(config.llm) if calls else None
    judges = build_judges(config, llm, embedder=embedder)
    return run_judges(judges, samples, answers), unavailable_metrics(judges, answers)
