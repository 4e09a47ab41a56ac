"""Retrieval evaluation over every mode: batched search, questions embedded once, single-search results."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from ragwatch.config import RetrievalEvalSettings
from ragwatch.evaluation import evaluate_retrieval_modes
from ragwatch.indexing.index import Index
from ragwatch.retrieval import MatchSettings, evaluate_retrieval
from ragwatch.types import Chunk, EvalSample, RelevantItem


class CountingEmbedder:
    """Bag of hashed words; records every text it embeds."""

    identity, dim, max_input_tokens = "test/hash-64", 64, 512

    def __init__(self) -> None:
        self.seen: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


TOPICS = ["stacks", "pipelines", "secrets", "artifacts", "models", "schedules"]


def test_every_mode_searches_in_one_batch_embeds_once_and_equals_single_search() -> None:
    chunks = [Chunk(id=f"c{d}-{s}", document_id=f"{t}.md", source=f"{t}.md", start=s, end=s + 1,
                    text=f"The {t} guide, section {s}: {t} settings live in {t}_{s}.yaml")
              for d, t in enumerate(TOPICS) for s in range(3)]
    embedder = CountingEmbedder()
    index = Index.build(chunks, embedder)
    samples = [EvalSample(id=f"q{i}", question=f"question {i}: where are the {TOPICS[i % 6]} settings?",
                          relevant=[RelevantItem(kind="document", value=f"{TOPICS[i % 6]}.md")])
               for i in range(30)]
    settings = RetrievalEvalSettings(ks=[1, 3])
    embedder.seen.clear()

    metrics, per_question = evaluate_retrieval_modes(index, samples, settings, embedder)

    assert sorted(embedder.seen) == sorted(s.question for s in samples)  # once, for all modes
    assert set(per_question["mode"]) == {"vector", "bm25", "hybrid"} and len(per_question) == 90
    for mode in settings.modes:  # the same figures as one search per question
        single = [index.search(s.question, k=len(index), mode=mode, embedder=embedder) for s in samples]
        report = evaluate_retrieval(samples, single, settings.ks, MatchSettings(), corpus_chunks=index.chunks)
        for name, result in report.metrics.items():
            batched = metrics[f"{mode}/{name}"]
            assert [it.score for it in batched.items] == [it.score for it in result.items], (mode, name)
