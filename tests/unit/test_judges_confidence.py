"""Answer confidence end to end: the built-in system captures the mean token logprob when it generates
(any provider that returns logprobs, no extra call) and the perplexity judge turns it into scores."""

from __future__ import annotations

import math

import pytest
from test_judges_support import fake_server, sample
from test_rag import HashEmbedder

from ragwatch.artifacts import MetricGroup
from ragwatch.corpus.chunking import Chunk
from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import gate_decision
from ragwatch.indexing.index import Index
from ragwatch.judges import (
    JudgesConfig,
    PerplexityJudge,
    SimilarityJudge,
    build_judges,
    run_judges,
    unavailable_metrics,
)
from ragwatch.judges.perplexity import NO_LOGPROBS, NOT_AVAILABLE
from ragwatch.rag import BuiltinRAG, RagSettings
from ragwatch.report.summary import metrics_text, summary_text
from ragwatch.report.verdicts import reason_lines
from ragwatch.types import RagAnswer

__all__ = ["fake_server"]


pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


def test_confidence_is_captured_at_generation_and_judged_without_extra_calls(fake_server):
    server = fake_server(lambda messages: ("Use a stack.", [("Use", {"Use": 0.5}), (" a", {" a": 1.0}),
                                                            (" stack.", {" stack.": 0.8})]))
    text = "A stack is the configuration of tools."
    index = Index.build([Chunk(id="c", document_id="d", source="d.md", text=text, start=0, end=len(text))],
                        HashEmbedder())
    rag = BuiltinRAG(index, None, server.client(), RagSettings(retrieval_mode="bm25", top_k=1))
    answers = rag.answer_many(["What is a stack?", "What is a stack, again?"])
    assert server.requests[0]["logprobs"] is True  # asked for, because the provider returns them
    expected = (math.log(0.5) + math.log(1.0) + math.log(0.8)) / 3
    assert answers[0].mean_logprob == pytest.approx(expected)

    calls = len(server.requests)
    config = JudgesConfig(enabled=["perplexity"])
    results = run_judges(build_judges(config, llm=None), [sample(1), sample(2)], answers)
    assert len(server.requests) == calls  # no call to score the answers
    assert results["answer_confidence"].score == pytest.approx(math.exp(expected))
    assert results["perplexity"].score == pytest.approx(math.exp(-expected))
    assert results["answer_confidence"].items[0].details["source"] == "captured at generation"


def _system_answers(logprobs: list[float | None]) -> list[RagAnswer]:
    """Answers as a system returns them: a callable or HTTP system carries no token logprobs."""
    return [RagAnswer(question=f"Question {i}?", answer=f"Answer {i}.", mean_logprob=lp)
            for i, lp in enumerate(logprobs)]


def _judge_run(logprobs: list[float | None], seed: int = 0) -> MetricGroup:
    """The judges of one run of a system of the user's own (no generator to rescore with)."""
    samples = [sample(i) for i in range(len(logprobs))]
    answers = _system_answers(logprobs)
    judges = [PerplexityJudge(None), SimilarityJudge(HashEmbedder())]
    return MetricGroup(group="judges", metrics=run_judges(judges, samples, answers),
                       unavailable=unavailable_metrics(judges, answers))


def test_a_system_without_logprobs_has_no_confidence_metrics_rather_than_failed_items():
    run = _judge_run([None] * 6)
    assert "answer_confidence" not in run.metrics and "perplexity" not in run.metrics
    assert run.unavailable == {"answer_confidence": NOT_AVAILABLE, "perplexity": NOT_AVAILABLE}
    assert run.metrics["similarity"].n_scored == 6  # the other judges run as before
    assert sum(m.n_failed for m in run.metrics.values()) == 0
    text = metrics_text(run.metrics, run.unavailable)
    assert "answer_confidence, perplexity: not available for this system (it returns no token logprobs)" in text


def test_two_runs_without_logprobs_compare_without_a_not_comparable_row_or_a_gate_reason():
    new, old = _judge_run([None] * 6), _judge_run([None] * 6)
    cmp = compare_runs(new.metrics, old.metrics, new_label="this run", old_label="production")
    assert {r.metric for r in cmp.rows} == {"similarity"}
    assert "not_comparable" not in cmp.counts()
    decision = gate_decision(cmp)
    assert decision.promote and not any("perplexity" in r or "confidence" in r for r in reason_lines(decision))
    summary = summary_text(new.metrics, {"production": cmp}, decision,
                           ["similarity", "answer_confidence"], new.unavailable)
    row = next(line for line in summary.splitlines() if line.startswith("answer_confidence"))
    assert "not available" in row and "not measured" not in row
    assert "answer_confidence, perplexity: not available for this system" in summary


def test_some_answers_with_logprobs_and_some_without_fail_those_items_with_the_reason():
    run = _judge_run([-0.2, None, -0.4, None])
    assert not run.unavailable
    confidence = run.metrics["answer_confidence"]
    assert confidence.n_scored == 2 and confidence.n_failed == 2
    failed = [it for it in confidence.items if not it.ok]
    assert [it.item_id for it in failed] == ["q1", "q3"]
    assert all(NO_LOGPROBS in (it.error or "") for it in failed)


def test_a_local_generator_rescores_answers_without_logprobs_so_the_metrics_stay():
    class Rescorer:
        def perplexity(self, text: str) -> float:
            return 4.0

    answers = _system_answers([None, None])
    judge = PerplexityJudge(Rescorer(), generator_model="local/generator")  # the in-process provider rescores
    assert judge.unavailable(answers) is None
    assert run_judges([judge], [sample(0), sample(1)], answers)["perplexity"].score == pytest.approx(4.0)
    # every answer failed: the failures say so, not "not available"
    assert PerplexityJudge(None).unavailable([RagAnswer(question="q", answer="", error="timeout")]) is None
