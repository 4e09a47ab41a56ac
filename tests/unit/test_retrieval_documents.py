"""Document-level ranking (MaxP) and labels that match nothing in the index, on hand-worked values."""

from __future__ import annotations

import math

import pytest

from ragwatch.retrieval import MatchSettings, document_ranking, evaluate_retrieval, rankings_with_documents
from ragwatch.types import Chunk, EvalSample, RelevantItem, SearchHit


def chunk_hit(cid: str, doc: str, rank: int, text: str = "") -> SearchHit:
    chunk = Chunk(id=cid, document_id=doc, source=f"corpus/{doc}.txt", text=text or f"text of {cid}",
                  start=0, end=1)
    return SearchHit(chunk=chunk, score=1.0 / rank, rank=rank)


def chunks(*pairs: str) -> list[SearchHit]:
    """`chunks("a1", "b1")`: chunk a1 of document a, chunk b1 of document b, ranked in order."""
    return [chunk_hit(p, p[0], i + 1) for i, p in enumerate(pairs)]


def doc_sample(sid: str, *docs: str, kind: str = "document") -> EvalSample:
    return EvalSample(id=sid, question=f"{sid}?", relevant=[RelevantItem(kind=kind, value=d) for d in docs])


def one(report, name: str) -> float:
    return report.metrics[name].items[0].score


RANKING = chunks("a1", "b1", "a2", "b2", "c1", "d1")  # documents a and c are relevant


def test_document_ranking_keeps_each_documents_best_chunk():
    docs = document_ranking(RANKING)
    assert [h.chunk.id for h in docs] == ["a1", "b1", "c1", "d1"]
    assert [h.rank for h in docs] == [1, 2, 3, 4]


def test_maxp_by_hand_and_chunk_level_still_available():
    s = doc_sample("q", "corpus/a.txt", "corpus/c.txt")
    report = evaluate_retrieval([s], [RANKING], ks=(1, 3, 5))
    assert report.per_question[0].rank_unit == "document"
    assert report.per_question[0].relevant_at == [1, 3]  # a, b, c, d
    ideal2 = 1 + 1 / math.log2(3)
    assert one(report, "recall@3") == 1.0
    assert one(report, "precision@3") == pytest.approx(2 / 3)
    assert one(report, "ndcg@3") == pytest.approx((1 + 1 / 2) / ideal2)  # c at rank 3: 1/log2(4)
    assert one(report, "map") == pytest.approx((1 + 2 / 3) / 2)
    assert report.metrics["mrr"].details["rank_unit"] == {"document": 1}

    chunk_level = evaluate_retrieval([s], [RANKING], ks=(1, 3, 5), match=MatchSettings(rank_unit="chunk"))
    assert chunk_level.per_question[0].relevant_at == [1, 5]  # a2 is a repeat of a: a miss
    assert one(chunk_level, "recall@3") == 0.5
    assert one(chunk_level, "precision@3") == pytest.approx(1 / 3)
    assert one(chunk_level, "ndcg@5") == pytest.approx((1 + 1 / math.log2(6)) / ideal2)
    assert one(chunk_level, "map") == pytest.approx((1 + 2 / 5) / 2)


def test_auto_ranks_chunks_for_chunk_and_text_labels():
    s = EvalSample(id="q", question="?", relevant=[RelevantItem(kind="chunk_id", value="a2")])
    report = evaluate_retrieval([s], [RANKING], ks=(3,))
    assert report.per_question[0].rank_unit == "chunk"
    assert one(report, "mrr") == pytest.approx(1 / 3)
    forced = evaluate_retrieval([s], [RANKING], ks=(3,), match=MatchSettings(rank_unit="document"))
    assert one(forced, "mrr") == 0.0  # a2 is not the best chunk of a: the document ranking keeps a1


def test_rankings_with_documents_searches_deeper_until_k_documents():
    pool = chunks(*[f"a{i}" for i in range(12)], "b1", "c1")
    depths = []

    def search(queries: list[str], depth: int) -> list[list[SearchHit]]:
        depths.append(depth)
        return [pool[:depth] for _ in queries]

    [ranking] = rankings_with_documents(search, ["q"], 3, limit=len(pool))
    assert depths == [12, 14]  # 12 chunks hold 1 document; then the whole pool
    assert [h.chunk.id for h in document_ranking(ranking)] == ["a0", "b1", "c1"]
    depths.clear()
    rankings_with_documents(search, ["q"], 1, limit=len(pool))
    assert depths == [4]


def test_labels_matching_nothing_fail_with_reason_and_warn_with_the_likely_kind():
    # document ids imported with the default (text) relevance kind: nothing can match
    corpus = [c.chunk for c in RANKING]
    samples = [doc_sample("q1", "a", kind="text"), doc_sample("q2", "c", kind="text"),
               doc_sample("q3", "corpus/b.txt")]
    report = evaluate_retrieval(samples, [RANKING] * 3, ks=(1, 3), corpus_chunks=corpus)
    hit = report.metrics["hit_rate@1"]
    assert (hit.n_scored, hit.n_failed) == (1, 2)
    assert "none of its 1 text label(s) matches anything in the index ('a')" in report.per_question[0].error
    [warning] = report.warnings
    assert "2 of 3 relevance labels (67%) match nothing" in warning
    assert "relevance kind used: text (2)" in warning
    assert "set `relevance_kind: document`" in warning
    assert hit.details["warnings"] == [warning]


def test_a_few_unmatched_labels_are_dropped_without_warning():
    corpus = [c.chunk for c in RANKING]
    s = doc_sample("q", "corpus/a.txt", "corpus/gone.txt")
    ok = [doc_sample(f"k{i}", "corpus/b.txt") for i in range(2)]
    report = evaluate_retrieval([s, *ok], [RANKING] * 3, ks=(3,), corpus_chunks=corpus)
    assert report.per_question[0].unmatched_labels == ["corpus/gone.txt"]
    assert one(report, "recall@3") == 1.0  # recall over the labels the index can hold
    assert report.warnings == []  # 1 of 4 labels


def test_chunk_id_and_text_labels_checked_against_the_index():
    corpus = [c.chunk for c in RANKING] + [chunk_hit("z9", "z", 9, text="alpha beta gamma delta").chunk]
    samples = [
        EvalSample(id="gone", question="?", relevant=[RelevantItem(kind="chunk_id", value="nope")]),
        EvalSample(id="deep", question="?", relevant=[RelevantItem(kind="text", value="alpha beta gamma")]),
    ]
    report = evaluate_retrieval(samples, [RANKING] * 2, ks=(3,), corpus_chunks=corpus)
    assert "chunk_id label(s) matches anything" in report.per_question[0].error
    assert report.per_question[1].error is None  # in the index, just not retrieved: a miss, scored 0
    assert report.metrics["mrr"].items[1].score == 0.0


def test_fixed_match_kind_names_the_kinds_the_sample_has():
    s = doc_sample("q", "corpus/a.txt")
    report = evaluate_retrieval([s], [RANKING], ks=(1,), match=MatchSettings(on="url"))
    assert "of kind 'url' (match.on); its labels are of kind document" in report.per_question[0].error
