"""A hit rate (or recall) at a k no smaller than the corpus is reached whatever the ranking: it says so."""

from __future__ import annotations

import html
from collections import Counter

import numpy as np

from ragwatch.config import RetrievalEvalSettings
from ragwatch.evaluation import evaluate_retrieval_modes
from ragwatch.indexing.index import Index
from ragwatch.report.page import build_html_report
from ragwatch.retrieval import MatchSettings, evaluate_retrieval
from ragwatch.retrieval.evaluate import trivial_warning
from ragwatch.types import Chunk, EvalSample, RelevantItem, SearchHit

DOCS = ["local", "airflow", "kubeflow", "tekton"]
TRIVIAL_AT_5 = "hit_rate@5, recall@5: trivially reached: k=5 >= the corpus's 4 documents"


def corpus(docs: list[str] = DOCS, per_doc: int = 2) -> list[Chunk]:
    return [Chunk(id=f"{d}-{i}", document_id=f"{d}.md", source=f"{d}.md", start=0, end=10,
                  text=f"the {d} orchestrator runs pipelines part {i} " + " ".join([d] * (i + 1)))
            for d in docs for i in range(per_doc)]


def ranking(chunks: list[Chunk], first: str) -> list[SearchHit]:
    """Every chunk, those of document `first` last: the worst a retriever can do."""
    ordered = sorted(chunks, key=lambda c: c.document_id == f"{first}.md")
    return [SearchHit(chunk=c, score=1.0 / (i + 1), rank=i + 1) for i, c in enumerate(ordered)]


def doc_samples(kind: str = "document") -> list[EvalSample]:
    return [EvalSample(id=d, question=f"What does the {d} orchestrator do?",
                       relevant=[RelevantItem(kind=kind, value=f"{d}.md")]) for d in DOCS]


def _warnings(report, name: str) -> list[str]:
    return report.metrics[name].details.get("warnings", [])


def test_a_k_at_least_the_corpus_documents_is_flagged_on_its_hit_rate_and_recall():
    chunks = corpus()
    samples = doc_samples()
    report = evaluate_retrieval(samples, [ranking(chunks, s.id) for s in samples], ks=(1, 3, 5, 10),
                                corpus_chunks=chunks)
    # the relevant document comes last of the 4, yet hit rate and recall at 5 and 10 are perfect
    assert report.metrics["hit_rate@5"].score == report.metrics["recall@10"].score == 1.0
    assert report.metrics["hit_rate@3"].score == 0.0
    for name in ("hit_rate@5", "recall@5"):
        assert any(w.startswith(TRIVIAL_AT_5) for w in _warnings(report, name)), _warnings(report, name)
    assert any("k=10 >= the corpus's 4 documents" in w for w in _warnings(report, "hit_rate@10"))
    for name in ("hit_rate@3", "recall@3", "ndcg@5", "precision@5", "mrr", "map"):
        assert _warnings(report, name) == [], name  # below the corpus's size, or not trivially 1
    assert sum(w.startswith("hit_rate@") for w in report.warnings) == 2  # k=5 and k=10


def test_chunk_ranked_questions_count_the_chunks():
    chunks = corpus(per_doc=2)  # 8 chunks
    samples = [EvalSample(id=c.id, question=f"q {c.id}?", relevant=[RelevantItem(kind="chunk_id", value=c.id)])
               for c in chunks[:2]]
    report = evaluate_retrieval(samples, [ranking(chunks, "none")] * 2, ks=(5, 10), corpus_chunks=chunks)
    assert _warnings(report, "hit_rate@5") == []
    assert any("k=10 >= the corpus's 8 chunks" in w for w in _warnings(report, "hit_rate@10"))


def test_no_warning_without_the_corpus_or_on_a_larger_one():
    samples = doc_samples()
    chunks = corpus()
    rankings = [ranking(chunks, s.id) for s in samples]
    assert evaluate_retrieval(samples, rankings, ks=(5,)).warnings == []  # the corpus is unknown: no claim
    bigger = corpus([*DOCS, "sagemaker", "vertex"])
    report = evaluate_retrieval(samples, [ranking(bigger, s.id) for s in samples], ks=(5,), corpus_chunks=bigger)
    assert _warnings(report, "hit_rate@5") == []
    only_sources = evaluate_retrieval(samples, rankings, ks=(5,), corpus_sources=[f"{d}.md" for d in DOCS])
    assert any(w.startswith(TRIVIAL_AT_5) for w in _warnings(only_sources, "hit_rate@5"))


def test_a_mixed_set_names_the_questions_it_applies_to():
    text = trivial_warning(5, Counter({"document": 3, "chunk": 7}), {"document": 4, "chunk": 40})
    assert text is not None and "for the 3 of 10 questions ranked by document" in text
    assert trivial_warning(3, Counter({"document": 3}), {"document": 4}) is None


class WordsEmbedder:
    """Hashed bag of words: enough for an index of a few chunks, no model to load."""

    identity = "test/words"
    max_input_tokens = 512
    dim = 32

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: list[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                matrix[row, sum(word.encode()) % self.dim] += 1
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def test_the_warning_reaches_the_run_metrics_and_the_report():
    embedder = WordsEmbedder()
    index = Index.build(corpus(), embedder)
    settings = RetrievalEvalSettings(modes=["bm25", "vector"], ks=[1, 3, 5], match=MatchSettings())
    metrics, _ = evaluate_retrieval_modes(index, doc_samples(), settings, embedder)
    # what run.py prints: every retrieval metric's warnings, once each (orchestration/runner.py)
    printed = dict.fromkeys(w for m in metrics.values() for w in m.details.get("warnings", []))
    assert [w for w in printed if w.startswith(TRIVIAL_AT_5)] and len(printed) == 1
    assert metrics["bm25/hit_rate@5"].score == 1.0 and metrics["bm25/hit_rate@5"].details["warnings"]
    page = build_html_report("run", metrics, None)
    assert page.count(html.escape(TRIVIAL_AT_5)) == 1  # under the retrieval matrices, once for both modes
