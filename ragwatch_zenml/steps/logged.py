"""Steps for a log as the evaluation set: the set from the log, a system's answers without an index,
and the metric groups a log has none of (retrieval over an index, keyword tests)."""

from __future__ import annotations

from typing import Annotated

from zenml import log_metadata, step

from ragwatch.artifacts import AnswerSet, EvalSet, MetricGroup
from ragwatch.config import SystemUnderTest
from ragwatch.evalset.assemble import generation_samples
from ragwatch.evalset.logged import LogInput, logged_eval_set
from ragwatch.evaluation import answer_questions, build_system
from ragwatch_zenml.steps.secrets import export_api_keys


@step(enable_cache=False)
def logged_eval_set_step(logs: LogInput, fingerprint: dict[str, str]) -> Annotated[EvalSet, "eval_set"]:
    """The logged questions (their logged answers inside), with what reading the log found; `fingerprint`
    (`ragwatch.config.evalset_fingerprint`, the log's settings and content) is stored as any set's is."""
    samples, report = logged_eval_set(logs)
    log_metadata(metadata={"eval_set": {"samples": len(samples), "source": "log", "log": report,
                                        "testset_fingerprint": fingerprint["testset"],
                                        "testset_config_fingerprint": fingerprint["config"],
                                        "testset_inputs_fingerprint": fingerprint["inputs"]}},
                 artifact_name="eval_set", infer_artifact=True)
    return EvalSet(samples=samples, metadata={"source": "log", "log": report})


@step
def answer_without_index(eval_set: EvalSet, system: SystemUnderTest) -> Annotated[AnswerSet, "rag_answers"]:
    """A system of its own (logged, callable, HTTP) answers the logged questions; the logged system
    returns what it said, calling nothing."""
    export_api_keys()
    rag, _ = build_system(system, None, None)
    samples = generation_samples(eval_set.samples)
    answers = answer_questions(rag, samples)
    calls = rag.calls()
    log_metadata(metadata={"answers": {"questions": len(samples), "failed": sum(1 for a in answers if not a.ok),
                                       "system_fingerprint": rag.fingerprint()},
                           "system_calls": calls.model_dump(),
                           "usage": {"generator": {"calls": 0}}})
    return AnswerSet(answers=answers, system=rag.describe(), fingerprint=rag.fingerprint(), usage={"calls": 0},
                     calls=calls)


@step
def not_measured(group: str) -> Annotated[MetricGroup, "not_measured"]:
    """An empty metric group: what a log's evaluation has no input for (an index, new questions)."""
    return MetricGroup(group=group)
