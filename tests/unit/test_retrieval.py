"""Hand-worked examples for every retrieval measure, matching rules and the report."""

from __future__ import annotations

import math

import pytest

from ragwatch.retrieval import (
    NO_LABELS,
    MatchSettings,
    compare_retrievers,
    evaluate_retrieval,
    hits_from_contexts,
    judge,
    normalize_path,
    paths_match,
    unmatched_labels,
)
from ragwatch.types import Chunk, EvalSample, RelevantItem, RetrievedContext, SearchHit

ZENML_REWRITES = [
    ("https://docs.zenml.io/v/docs/", ""),
    ("https://docs.zenml.io/", ""),
    ("stack-components/", "component-guide/"),
]


def hit(cid: str, rank: int, source: str = "", text: str = "", score: float | None = None) -> SearchHit:
    chunk = Chunk(id=cid, document_id=source or cid, source=source or f"{cid}.md", text=text or cid,
                  start=0, end=len(text or cid))
    return SearchHit(chunk=chunk, score=1.0 / rank if score is None else score, rank=rank)


def ranking(*ids: str) -> list[SearchHit]:
    return [hit(c, i + 1) for i, c in enumerate(ids)]


def sample(sid: str, *relevant: str | tuple[str, float], kind: str = "chunk_id") -> EvalSample:
    items = [
        RelevantItem(kind=kind, value=r, grade=1.0) if isinstance(r, str)
        else RelevantItem(kind=kind, value=r[0], grade=r[1])
        for r in relevant
    ]
    return EvalSample(id=sid, question=f"question {sid}?", relevant=items)


def score(report, name: str) -> float:
    return report.metrics[name].items[0].score


def test_binary_measures_by_hand():
    # relevant {r1, r2, r3}; retrieved n1 r1 n2 r2 (4 results, fewer than k=5)
    s = sample("q", "r1", "r2", "r3")
    report = evaluate_retrieval([s], [ranking("n1", "r1", "n2", "r2")], ks=(1, 3, 5))
    assert report.per_question[0].first_relevant_rank == 2
    assert score(report, "hit_rate@1") == 0.0
    assert score(report, "hit_rate@3") == 1.0
    assert score(report, "recall@3") == pytest.approx(1 / 3)
    assert score(report, "recall@5") == pytest.approx(2 / 3)
    assert score(report, "precision@3") == pytest.approx(1 / 3)
    assert score(report, "precision@5") == pytest.approx(2 / 5)  # fewer than k still divides by k
    assert score(report, "mrr") == pytest.approx(0.5)
    assert score(report, "map") == pytest.approx((1 / 2 + 2 / 4) / 3)
    ideal = 1 + 1 / math.log2(3) + 1 / 2
    assert score(report, "ndcg@3") == pytest.approx((1 / math.log2(3)) / ideal)
    assert report.per_question[0].relevant_at == [2, 4]


def test_graded_ndcg_by_hand():
    s = sample("q", ("a", 3.0), ("b", 1.0))
    report = evaluate_retrieval([s], [ranking("b", "a")], ks=(1, 2))
    ideal2 = 3 + 1 / math.log2(3)
    assert score(report, "ndcg@2") == pytest.approx((1 + 3 / math.log2(3)) / ideal2)
    assert score(report, "ndcg@1") == pytest.approx(1 / 3)
    perfect = evaluate_retrieval([s], [ranking("a", "b")], ks=(2,))
    assert score(perfect, "ndcg@2") == pytest.approx(1.0)


def test_ties_keep_retrieval_order():
    hits = [hit("n", 1, score=0.5), hit("r", 2, score=0.5)]
    report = evaluate_retrieval([sample("q", "r")], [hits], ks=(1, 2))
    assert score(report, "hit_rate@1") == 0.0
    assert score(report, "mrr") == 0.5


def test_no_relevant_item_is_a_failure_not_a_zero():
    samples = [sample("good", "r"), EvalSample(id="bad", question="?"), sample("zero", ("r", 0.0))]
    report = evaluate_retrieval(samples, [ranking("r"), ranking("r"), ranking("r")], ks=(1,))
    result = report.metrics["hit_rate@1"]
    assert (result.score, result.n_scored, result.n_failed) == (1.0, 1, 2)
    assert result.items[1].error == NO_LABELS
    assert report.per_question[2].error == NO_LABELS


def test_empty_ranking_scores_zero():
    report = evaluate_retrieval([sample("q", "r")], [[]], ks=(1, 5))
    assert report.per_question[0].first_relevant_rank is None
    assert all(m.items[0].score == 0.0 for m in report.metrics.values())


def test_a_relevant_document_counts_once():
    s = sample("q", "guide/a.md", kind="document")
    hits = [hit("c1", 1, source="guide/a.md"), hit("c2", 2, source="guide/a.md"), hit("c3", 3, source="b.md")]
    j = judge(s, hits)
    assert j.gains == [1.0, 0.0, 0.0]
    report = evaluate_retrieval([s], [hits], ks=(3,))
    assert score(report, "recall@3") == 1.0
    assert score(report, "precision@3") == pytest.approx(1 / 3)


def test_url_matching_with_rewrites_and_corpus_prefix():
    match = MatchSettings(on="url", url_rewrites=ZENML_REWRITES)
    s = sample("q", "https://docs.zenml.io/v/docs/stack-components/artifact-stores", kind="url")
    hits = [hit("x", 1, source="docs/book/component-guide/orchestrators/README.md"),
            hit("y", 2, source="docs/book/component-guide/artifact-stores/README.md")]
    assert judge(s, hits, match).gains == [0.0, 1.0]
    assert judge(s, hits, MatchSettings(on="url")).gains == [0.0, 0.0]  # without the rewrite


def test_gitbook_folder_page_and_aliases_for_copies():
    assert normalize_path("component-guide/artifact-stores/artifact-stores.md") == (
        "component-guide", "artifact-stores")
    s = sample("q", "https://docs.zenml.io/user-guide/rag-with-zenml/data-ingestion", kind="url")
    hits = [hit("c", 1, source="docs/book/user-guide/rag/data-ingestion.md")]
    assert judge(s, hits).gains == [0.0]
    match = MatchSettings(aliases={"docs/book/user-guide/rag-with-zenml/data-ingestion.md":
                                   "docs/book/user-guide/rag/data-ingestion.md"})
    assert judge(s, hits, match).gains == [1.0]
    assert unmatched_labels([s], ["docs/book/user-guide/rag/data-ingestion.md"], match) == {}


def test_normalize_path_and_suffix_rule():
    assert normalize_path("https://docs.zenml.io/How-To/Setup.md?x=1#top") == ("how-to", "setup")
    assert normalize_path("docs\\book\\guide\\README.md") == ("docs", "book", "guide")
    assert paths_match(("guide", "a"), ("docs", "book", "guide", "a"))
    assert not paths_match(("guide", "a"), ("other", "a", "b"))
    assert not paths_match(("ide", "a"), ("guide", "a"))  # segment-wise, not character-wise
    assert not paths_match((), ("a",))


def test_text_matching_either_direction():
    ref = "ZenML pipelines are made of steps that pass artifacts"
    s = EvalSample(id="q", question="?", relevant=[RelevantItem(kind="text", value=ref)])
    containing = hit("c1", 1, text="Intro. " + ref + ". More words here about stacks and orchestrators.")
    piece = hit("c2", 2, text="made of steps that pass artifacts")
    unrelated = hit("c3", 3, text="Kubernetes orchestrator settings")
    assert judge(s, [unrelated, containing]).gains == [0.0, 1.0]
    assert judge(s, [piece]).gains == [1.0]  # the chunk is a piece of the reference
    strict = MatchSettings(on="text", text_overlap=1.0)
    partial = hit("c4", 1, text="ZenML pipelines are made of many things")  # 5/9 one way, 5/7 the other
    assert judge(s, [partial]).gains == [1.0]
    assert judge(s, [partial], strict).gains == [0.0]


def test_reference_contexts_used_as_text_labels_when_no_items():
    s = EvalSample(id="q", question="?", reference_contexts=["alpha beta gamma delta"])
    assert judge(s, [hit("c", 1, text="alpha beta gamma delta epsilon")]).gains == [1.0]


def test_auto_uses_one_kind_per_sample_pages_first_and_fixed_kind_filters():
    s = EvalSample(id="q", question="?", relevant=[
        RelevantItem(kind="chunk_id", value="c9"), RelevantItem(kind="document", value="a.md")])
    hits = [hit("c1", 1, source="a.md"), hit("c9", 2, source="z.md")]
    # the chunk id and the document name one ground truth twice: auto counts the document only
    assert judge(s, hits).gains == [1.0, 0.0]
    assert judge(s, hits).relevant_grades == [1.0]
    assert judge(s, hits, MatchSettings(on="chunk_id")).gains == [0.0, 1.0]
    only_chunk = EvalSample(id="q2", question="?", relevant=[RelevantItem(kind="chunk_id", value="c9")])
    assert judge(only_chunk, hits).gains == [0.0, 1.0]


def test_corpus_sources_turn_dangling_labels_into_failures():
    s1 = sample("ok", "https://docs.zenml.io/how-to/a", kind="url")
    s2 = sample("dangling", "https://docs.zenml.io/how-to/gone", kind="url")
    corpus = ["docs/book/how-to/a.md", "docs/book/how-to/b.md"]
    match = MatchSettings(url_rewrites=ZENML_REWRITES)
    rk = [hit("c", 1, source="docs/book/how-to/a.md")]
    report = evaluate_retrieval([s1, s2], [rk, rk], ks=(1,), match=match, corpus_sources=corpus)
    assert report.metrics["hit_rate@1"].n_failed == 1
    assert "matches anything in the index" in report.per_question[1].error
    assert unmatched_labels([s1, s2], corpus, match) == {"dangling": ["https://docs.zenml.io/how-to/gone"]}


def test_bad_input_says_what_to_do():
    with pytest.raises(ValueError, match="one ranking"):
        evaluate_retrieval([sample("q", "r")], [])
    with pytest.raises(ValueError, match="positive integers"):
        evaluate_retrieval([sample("q", "r")], [ranking("r")], ks=(0,))
    with pytest.raises(ValueError, match="duplicate sample id"):
        evaluate_retrieval([sample("q", "r"), sample("q", "r")], [ranking("r"), ranking("r")])
    with pytest.raises(ValueError, match="extra"):
        MatchSettings(onn="url")
    with pytest.raises(ValueError, match="text_overlap"):
        MatchSettings(text_overlap=0)


def test_aggregate_ci_and_worst_table():
    samples = [sample(f"q{i}", "r") for i in range(4)] + [EvalSample(id="nolab", question="?")]
    rankings = [ranking("r"), ranking("n", "r"), ranking("n", "n", "n"), ranking("n", "n", "r"), ranking("r")]
    report = evaluate_retrieval(samples, rankings, ks=(1, 3))
    mrr = report.metrics["mrr"]
    assert mrr.score == pytest.approx((1 + 0.5 + 0 + 1 / 3) / 4)
    assert mrr.ci_low <= mrr.score <= mrr.ci_high
    worst = report.worst(2)
    assert list(worst["question_id"]) == ["q2", "q3"]
    assert worst.iloc[0]["retrieved_instead"] == "n.md; n.md; n.md"
    assert list(report.worst(1, include_failed=True)["question_id"]) == ["nolab"]
    assert report.summary()["hit_rate@1"]["n_failed"] == 1


def test_compare_retrievers_side_by_side():
    samples = [sample("a", "r"), sample("b", "r")]
    settings = {"good": [ranking("r"), ranking("r")], "bad": [ranking("n"), ranking("n", "r")]}
    table = compare_retrievers(samples, settings, ks=(1, 5))
    assert list(table.index) == ["good", "bad"]
    assert table.loc["good", "hit_rate@1"] == 1.0
    assert table.loc["bad", "mrr"] == pytest.approx(0.25)
    assert {"mrr_ci_low", "mrr_ci_high", "n_scored", "n_failed"} <= set(table.columns)


def test_hits_from_contexts_rank_in_order():
    hits = hits_from_contexts([RetrievedContext(text="t1", chunk_id="a", source="x.md", score=0.9),
                               RetrievedContext(text="t2")])
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].chunk.id == "a" and hits[1].chunk.id  # a stable id derived from the text
    assert hits_from_contexts([RetrievedContext(text="t2")])[0].chunk.id == hits[1].chunk.id


def test_remembered_embedder_embeds_each_text_once_and_returns_the_same_vectors():
    import numpy as np

    from ragwatch.retrieval import RememberedEmbedder

    class Counting:
        identity, dim = "test/counting", 3

        def __init__(self):
            self.seen: list[str] = []

        def embed(self, texts):
            self.seen += texts
            return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32).reshape(-1, 3)

    inner = Counting()
    remembered = RememberedEmbedder(inner)
    first = remembered.embed(["a", "bb", "a"])
    again = remembered.embed(["bb", "ccc", "a"])
    assert inner.seen == ["a", "bb", "ccc"]  # each distinct text embedded once
    assert np.array_equal(first, inner.embed(["a", "bb", "a"]))
    assert np.array_equal(again, inner.embed(["bb", "ccc", "a"]))
    assert remembered.identity == "test/counting" and remembered.embed([]).shape == (0, 3)


def test_every_retrieval_metric_carries_its_identity():
    from ragwatch.retrieval import retrieval_infos

    infos = retrieval_infos([1, 5])
    assert infos["hit_rate@5"].family == "retrieval" and infos["hit_rate@5"].measure == "hit_rate"
    assert infos["hit_rate@5"].k == 5 and infos["hit_rate@5"].binary and infos["mrr"].k is None
    assert list(infos)[:2] == ["mrr", "map"] and not infos["ndcg@1"].binary


def test_a_stored_result_with_its_family_in_details_reads_back_with_it_in_info():
    from ragwatch.results import MetricResult

    old = {"name": "faithfulness", "score": 1.0, "n_scored": 1, "n_failed": 0, "items": [],
           "info": {"prompt_version": "v4"}, "details": {"family": "judge", "usage": {}}}
    result = MetricResult.model_validate(old)
    assert result.info.is_judge and "family" not in result.details
