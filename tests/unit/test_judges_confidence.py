"""Answer confidence end to end: the built-in system captures the mean token logprob when it generates
(any provider that returns logprobs, no extra call) and the perplexity judge turns it into scores."""

from __future__ import annotations

import math

import pytest
from test_judges_support import fake_server, sample
from test_rag import HashEmbedder

from ragwatch.chunking import Chunk
from ragwatch.index import Index
from ragwatch.judges import JudgesConfig, build_judges, run_judges
from ragwatch.rag import BuiltinRAG, RagSettings

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
