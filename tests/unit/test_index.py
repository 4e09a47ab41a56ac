"""Index: exact vector search, BM25, hybrid fusion, persistence, and the errors that guard them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ragwatch.indexing import index as index_module
from ragwatch.indexing import topk as topk_module
from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
from ragwatch.indexing.index import (
    BM25Settings,
    CorruptIndexError,
    EmbeddingMismatchError,
    EmptyIndexError,
    Index,
    rrf_fuse,
    tokenize,
    top_k,
)
from ragwatch.types import Chunk


def make_chunks(texts: list[str], sources: list[str] | None = None) -> list[Chunk]:
    sources = sources or [f"doc{i // 2}.md" for i in range(len(texts))]
    return [
        Chunk(id=f"c{i}", document_id=src, source=src, text=t, start=0, end=len(t))
        for i, (t, src) in enumerate(zip(texts, sources, strict=True))
    ]


class TableEmbedder:
    """Vectors looked up in a table (unknown texts get a seeded random vector): the index logic alone."""

    def __init__(self, table: dict[str, np.ndarray], identity: str = "test/table", dim: int = 16) -> None:
        self.table = table
        self.identity = identity
        self.dim = dim
        self.max_input_tokens = 512
        self.calls: list[int] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        rows = []
        for t in texts:
            if t not in self.table:
                seed = sum(t.encode()) + len(t)
                self.table[t] = np.random.default_rng(seed).normal(size=self.dim)
            rows.append(self.table[t])
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


@pytest.fixture
def random_index() -> tuple[Index, TableEmbedder]:
    texts = [f"chunk number {i}" for i in range(200)]
    embedder = TableEmbedder({})
    return Index.build(make_chunks(texts), embedder), embedder


def test_vector_search_matches_brute_force(random_index: tuple[Index, TableEmbedder]) -> None:
    index, embedder = random_index
    queries = [f"query {i}" for i in range(10)]
    query_vectors = embedder.embed(queries)
    results = index.search_many(queries, k=7, mode="vector", embedder=embedder)
    for q_vec, hits in zip(query_vectors, results, strict=True):
        brute = [float(np.dot(v.astype(np.float64), q_vec)) for v in index.vectors]
        expected = sorted(range(len(brute)), key=lambda i: -brute[i])[:7]
        assert [h.chunk.id for h in hits] == [f"c{i}" for i in expected]
        assert [h.rank for h in hits] == list(range(1, 8))
        np.testing.assert_allclose([h.score for h in hits], [brute[i] for i in expected], atol=1e-5)


def test_search_many_equals_search_and_embeds_in_one_call(random_index: tuple[Index, TableEmbedder]) -> None:
    index, embedder = random_index
    queries = [f"another query {i}" for i in range(5)]
    embedder.calls.clear()
    many = index.search_many(queries, k=3, mode="hybrid", embedder=embedder)
    assert embedder.calls == [5]
    assert many == [index.search(q, k=3, mode="hybrid", embedder=embedder) for q in queries]
    assert index.search_many([], k=3, embedder=embedder) == []


def test_ties_break_by_chunk_order(monkeypatch: pytest.MonkeyPatch) -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.5, 0.1], dtype=np.float32)
    assert top_k(scores, 3).tolist() == [1, 3, 0]  # the boundary tie 0/2/4 goes to chunk 0
    assert top_k(scores, 10).tolist() == [1, 3, 0, 2, 4, 5]
    monkeypatch.setattr(topk_module, "CANDIDATE_GROUP", 1)  # the grouped search, same answer
    assert top_k(np.tile(scores, 4), 3).tolist() == [1, 3, 7]
    assert top_k(np.tile(scores, 4), 5).tolist() == [1, 3, 7, 9, 13]
    same = np.ones((4, 3), dtype=np.float32) / math.sqrt(3)
    embedder = TableEmbedder({"q": np.ones(3)}, dim=3)
    index = Index(make_chunks(["a", "b", "c", "d"]), same, embedder.identity)
    assert [h.chunk.id for h in index.search("q", k=2, embedder=embedder)] == ["c0", "c1"]


BM25_TEXTS = [
    "Pipelines are made of steps that produce artifacts.",
    "The Kubeflow orchestrator runs each step of a pipeline in its own pod.",
    "Artifacts are stored in the artifact store, one version per run.",
    "A stack holds an orchestrator and an artifact store.",
]


def test_bm25_ranks_the_keyword_document_first() -> None:
    index = Index.build(make_chunks(BM25_TEXTS), TableEmbedder({}))
    hits = index.search("kubeflow", k=4, mode="bm25")
    assert [h.chunk.id for h in hits] == ["c1"]  # chunks without the word are not matches
    hits = index.search("Which orchestrator runs a pipeline on Kubeflow?", k=4, mode="bm25")
    assert hits[0].chunk.id == "c1"
    assert hits[0].score > hits[1].score > 0
    assert index.search("the of and", k=3, mode="bm25") == []  # only stopwords: nothing matches


def test_bm25_scores_follow_the_lucene_formula() -> None:
    index = Index.build(make_chunks(BM25_TEXTS), TableEmbedder({}))
    docs = [tokenize(t) for t in BM25_TEXTS]
    avgdl = sum(len(d) for d in docs) / len(docs)
    k1, b = 1.5, 0.75

    def bm25(term: str, doc: list[str]) -> float:
        df = sum(term in d for d in docs)
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        tf = doc.count(term)
        # Lucene (and bm25s) drop the constant (k1 + 1) factor of the textbook formula
        return idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))

    terms = tokenize("Orchestrators STORE")
    assert terms == ["orchestr", "store"]
    expected = [sum(bm25(t, d) for t in terms) for d in docs]
    np.testing.assert_allclose(index.bm25_scores("Orchestrators STORE"), expected, rtol=1e-5)
    # a repeated query word counts twice, as in Lucene and bm25s
    np.testing.assert_allclose(
        index.bm25_scores("store store"), [2 * bm25("store", d) for d in docs], rtol=1e-5
    )


def test_tokenize_lowercases_splits_identifiers_stems_and_drops_stopwords() -> None:
    assert tokenize("The runner is running log_metadata() in ZenML 0.60") == [
        "runner", "run", "log", "metadata", "zenml", "0", "60"
    ]
    plain = BM25Settings(stemmer="none", stopwords="none")
    assert tokenize("The runner is running", plain) == ["the", "runner", "is", "running"]
    assert tokenize("The stores", BM25Settings(stemmer="none")) == ["stores"]


def test_bm25_variant_changes_matches_and_is_recorded(tmp_path: Path) -> None:
    texts = ["The pipeline runs nightly.", "Running a pipeline", "the the the", "unrelated words here"]
    stemmed = Index.build(make_chunks(texts), TableEmbedder({}))
    plain_settings = BM25Settings(stemmer="none", stopwords="none")
    plain = Index.build(make_chunks(texts), TableEmbedder({}), bm25=plain_settings)
    assert [h.chunk.id for h in stemmed.search("run", k=4, mode="bm25")] == ["c1", "c0"]  # shorter first
    assert plain.search("run", k=4, mode="bm25") == []
    assert stemmed.search("the", k=4, mode="bm25") == []  # a stop word
    assert plain.search("the", k=4, mode="bm25")[0].chunk.id == "c2"
    assert stemmed.bm25_variant == (
        "BM25 (Lucene, k1=1.5, b=0.75), Snowball English stemmer, Lucene English stop words"
    )
    assert plain.bm25_variant == "BM25 (Lucene, k1=1.5, b=0.75), no stemming, no stop words"
    assert stemmed.fingerprint != plain.fingerprint  # BM25 results differ, so the index is another one
    plain.save(tmp_path / "plain")
    meta = json.loads((tmp_path / "plain" / "meta.json").read_text())
    assert meta["bm25"]["stemmer"] == "none" and meta["bm25_variant"] == plain.bm25_variant
    loaded = Index.load(tmp_path / "plain")
    assert loaded.bm25_settings == plain.bm25_settings and loaded.fingerprint == plain.fingerprint
    with pytest.raises(ValueError, match="stemmer"):
        BM25Settings(stemmer="porter")  # type: ignore[arg-type]


def test_format_1_indexes_still_load_with_the_default_bm25(tmp_path: Path) -> None:
    chunks = make_chunks(BM25_TEXTS)
    index = Index.build(chunks, TableEmbedder({}))
    index.save(tmp_path / "old")
    meta_path = tmp_path / "old" / "meta.json"
    meta = json.loads(meta_path.read_text())
    for key in ("bm25", "bm25_variant"):
        del meta[key]
    meta["format_version"] = 1
    meta["fingerprint"] = index_module.fingerprint([c.id for c in chunks], meta["embedding_identity"])
    meta_path.write_text(json.dumps(meta))
    loaded = Index.load(tmp_path / "old")
    assert loaded.bm25_settings == BM25Settings() and loaded.chunks == chunks
    meta["format_version"] = 7
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CorruptIndexError, match="format 7"):
        Index.load(tmp_path / "old")


def test_rrf_fusion_on_hand_worked_ranks() -> None:
    fused = rrf_fuse([[0, 1, 2], [2, 0]])
    assert [item for item, _ in fused] == [0, 2, 1]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2][1] == pytest.approx(1 / 62)
    # equal fused scores break by item order
    assert [item for item, _ in rrf_fuse([[5, 3], [3, 5]])] == [3, 5]


def test_hybrid_search_fuses_the_two_rankings() -> None:
    # vector ranking: c3, c2, c1, c0 (by construction); BM25 ranking for "kubeflow pod": only c1
    dim = 4
    vectors = np.eye(dim, dtype=np.float32)[[0, 1, 2, 3]]
    query = np.array([0.1, 0.2, 0.3, 0.4])
    embedder = TableEmbedder({"kubeflow pod": query}, dim=dim)
    index = Index(make_chunks(BM25_TEXTS), vectors, embedder.identity)
    vec = [h.chunk.id for h in index.search("kubeflow pod", k=4, mode="vector", embedder=embedder)]
    assert vec == ["c3", "c2", "c1", "c0"]
    hits = index.search("kubeflow pod", k=4, mode="hybrid", embedder=embedder)
    # c1: 1/(60+3) + 1/(60+1); c3: 1/61; c2: 1/62; c0: 1/64
    assert [h.chunk.id for h in hits] == ["c1", "c3", "c2", "c0"]
    np.testing.assert_allclose([h.score for h in hits], [1 / 63 + 1 / 61, 1 / 61, 1 / 62, 1 / 64])
    assert [h.rank for h in hits] == [1, 2, 3, 4]


def test_save_load_round_trip(tmp_path: Path, random_index: tuple[Index, TableEmbedder]) -> None:
    index, embedder = random_index
    index.save(tmp_path / "idx")
    meta = json.loads((tmp_path / "idx" / "meta.json").read_text())
    assert meta["count"] == 200 and meta["dim"] == 16 and meta["embedding_identity"] == "test/table"
    loaded = Index.load(tmp_path / "idx")
    assert loaded.chunks == index.chunks
    np.testing.assert_array_equal(loaded.vectors, index.vectors)
    assert loaded.vectors.dtype == np.float32
    assert loaded.fingerprint == index.fingerprint == meta["fingerprint"]
    assert loaded.embedding_identity == index.embedding_identity
    for mode in ("vector", "bm25", "hybrid"):
        queries = ["chunk number 7", "number 150"]
        assert loaded.search_many(queries, k=5, mode=mode, embedder=embedder) == index.search_many(
            queries, k=5, mode=mode, embedder=embedder
        )


def test_load_rejects_damaged_indexes(tmp_path: Path) -> None:
    index = Index.build(make_chunks(BM25_TEXTS), TableEmbedder({}))
    index.save(tmp_path / "a")
    lines = (tmp_path / "a" / "chunks.jsonl").read_text().splitlines()
    (tmp_path / "a" / "chunks.jsonl").write_text("\n".join(lines[::-1]) + "\n")
    with pytest.raises(CorruptIndexError, match="fingerprint"):
        Index.load(tmp_path / "a")
    index.save(tmp_path / "b")
    (tmp_path / "b" / "vectors.npy").unlink()
    with pytest.raises(CorruptIndexError, match=r"missing vectors\.npy"):
        Index.load(tmp_path / "b")


def test_fingerprint_depends_on_chunks_and_identity() -> None:
    chunks = make_chunks(BM25_TEXTS)
    base = Index.build(chunks, TableEmbedder({}))
    assert Index.build(chunks, TableEmbedder({})).fingerprint == base.fingerprint
    assert Index.build(chunks, TableEmbedder({}, identity="test/other")).fingerprint != base.fingerprint
    assert Index.build(chunks[:3], TableEmbedder({})).fingerprint != base.fingerprint


def test_mismatched_embedder_is_refused_with_both_identities() -> None:
    index = Index.build(make_chunks(BM25_TEXTS), TableEmbedder({}, identity="test/model-a"))
    with pytest.raises(EmbeddingMismatchError) as err:
        index.search("q", mode="hybrid", embedder=TableEmbedder({}, identity="test/model-b"))
    message = str(err.value)
    assert "test/model-a" in message and "test/model-b" in message and "rebuild the index" in message
    assert index.search("kubeflow", mode="bm25", embedder=TableEmbedder({}, identity="x"))  # BM25 needs none


def test_argument_errors() -> None:
    index = Index.build(make_chunks(BM25_TEXTS), TableEmbedder({}))
    for k in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            index.search("q", k=k, mode="bm25")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown search mode 'dense'"):
        index.search("q", mode="dense")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs the embedder"):
        index.search("q", mode="vector")
    with pytest.raises(TypeError, match="use search"):
        index.search_many("q", mode="bm25")  # type: ignore[arg-type]
    assert len(index.search("q", k=50, mode="vector", embedder=TableEmbedder({}))) == 4  # k > size


def test_empty_and_duplicate_chunks() -> None:
    with pytest.raises(EmptyIndexError, match="no chunks to index"):
        Index.build([], TableEmbedder({}))
    empty = Index([], np.zeros((0, 16), dtype=np.float32), "test/table")
    with pytest.raises(EmptyIndexError, match="holds no chunks"):
        empty.search("q", mode="bm25")
    chunks = make_chunks(["a", "b"])
    with pytest.raises(ValueError, match="duplicate chunk id 'c0'"):
        Index.build([chunks[0], chunks[1], chunks[0]], TableEmbedder({}))


def test_accessors() -> None:
    chunks = make_chunks(BM25_TEXTS, sources=["b.md", "a.md", "b.md", "c.pdf"])
    index = Index.build(chunks, TableEmbedder({}))
    assert len(index) == 4
    assert index.chunks == chunks
    assert index.get_chunk("c2") == chunks[2]
    with pytest.raises(KeyError, match="no chunk with id 'zz'"):
        index.get_chunk("zz")
    assert index.documents() == ["b.md", "a.md", "c.pdf"]


def test_real_local_embedder_finds_the_paraphrased_chunk() -> None:
    embedder = get_embedder(EmbeddingSettings())
    index = Index.build(make_chunks(BM25_TEXTS), embedder, progress=False)
    hits = index.search("Where do the outputs of my runs get saved?", k=2, mode="vector", embedder=embedder)
    assert hits[0].chunk.id == "c2"
    hits = index.search("What does a stack contain?", k=1, mode="hybrid", embedder=embedder)
    assert hits[0].chunk.id == "c3"


# ---------------------------------------------------------------------- blocked search = exact search


def exact_ranking(scores: list[float], depth: int) -> list[int]:
    """The reference: one query at a time, sorted by score, ties by chunk order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:depth]


# one query per block .. all in one; groups of 2 columns take the grouped candidate search, 64 the plain one
@pytest.mark.parametrize(("block_cells", "group"), [(1, 2), (5_000, 64), (5_000, 3), (1 << 24, 2)])
def test_blocked_vector_search_is_exact_search_ties_included(
    monkeypatch: pytest.MonkeyPatch, block_cells: int, group: int
) -> None:
    monkeypatch.setattr(index_module, "BLOCK_CELLS", block_cells)
    monkeypatch.setattr(topk_module, "CANDIDATE_GROUP", group)
    rng = np.random.default_rng(7)
    # Coarse values (multiples of 1/4) repeated across rows: many exact ties, exactly representable dots.
    distinct = rng.integers(-2, 3, size=(30, 24)) / 4
    vectors = distinct[rng.integers(0, 30, size=400)].astype(np.float32)
    queries = (rng.integers(-2, 3, size=(60, 24)) / 4).astype(np.float32)
    queries[10] = queries[3]  # a repeated query must get the same ranking in another block position
    index = Index(make_chunks([f"t{i}" for i in range(400)]), vectors, "test/table")
    got = index.vector_rankings(queries, depth=25)
    n_ties = 0
    for q, ranked in zip(queries.astype(np.float64), got, strict=True):
        reference = [float(np.dot(v, q)) for v in vectors.astype(np.float64)]
        assert [i for i, _ in ranked] == exact_ranking(reference, 25)
        assert [s for _, s in ranked] == [reference[i] for i, _ in ranked]
        n_ties += len(ranked) - len({s for _, s in ranked})
    assert n_ties > 100  # the data really exercises ties
    assert got[10] == got[3]


@pytest.mark.parametrize("group", [4, 64])
def test_blocked_vector_search_matches_float64_brute_force_on_random_vectors(
    monkeypatch: pytest.MonkeyPatch, group: int
) -> None:
    monkeypatch.setattr(index_module, "BLOCK_CELLS", 3_000)
    monkeypatch.setattr(topk_module, "CANDIDATE_GROUP", group)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((1_500, 64)).astype(np.float32)  # not unit: the bound scales with norms
    queries = rng.standard_normal((40, 64)).astype(np.float32)
    index = Index(make_chunks([f"t{i}" for i in range(1_500)]), vectors, "test/table")
    for q, ranked in zip(queries, index.vector_rankings(queries, depth=10), strict=True):
        reference = (vectors.astype(np.float64) @ q.astype(np.float64)).tolist()
        assert [i for i, _ in ranked] == exact_ranking(reference, 10)


@pytest.mark.parametrize(("block_cells", "group"), [(1, 2), (1 << 24, 64), (1 << 24, 3)])
def test_blocked_bm25_is_per_query_bm25s_ties_included(
    monkeypatch: pytest.MonkeyPatch, block_cells: int, group: int
) -> None:
    monkeypatch.setattr(index_module, "BM25_BLOCK_CELLS", block_cells)
    monkeypatch.setattr(topk_module, "CANDIDATE_GROUP", group)
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(12)]
    # few words, short texts, many repeats: plenty of documents with equal scores
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 5)))) for _ in range(300)]
    index = Index(make_chunks(texts), np.zeros((300, 4), dtype=np.float32), "test/table")
    queries = [" ".join(rng.choice(words, size=int(rng.integers(1, 4)))) for _ in range(50)] + ["zzz", "w1 w1"]
    import bm25s

    reference_model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference_model.index([tokenize(t) for t in texts], show_progress=False)
    got = index.bm25_rankings(queries, depth=20)
    n_ties = 0
    for query, ranked in zip(queries, got, strict=True):
        ids = reference_model.get_tokens_ids(tokenize(query))
        reference = reference_model.get_scores_from_ids(ids).astype(np.float64) if ids else np.zeros(300)
        np.testing.assert_allclose(index.bm25_scores(query), reference, rtol=1e-6)
        expected = [i for i in exact_ranking(reference.tolist(), 20) if reference[i] > 0]
        assert [i for i, _ in ranked] == expected
        n_ties += len(ranked) - len({s for _, s in ranked})
    assert n_ties > 100
    assert got[-2] == []  # no word of the query is in the corpus
    assert index.search_many(queries, k=20, mode="bm25") == [index.search(q, k=20, mode="bm25") for q in queries]


# ---------------------------------------------------------------------- incremental builds


class RecordingEmbedder(TableEmbedder):
    def __init__(self, identity: str = "test/table") -> None:
        super().__init__({}, identity=identity)
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().embed(texts)


def test_build_with_a_previous_index_embeds_only_new_chunks() -> None:
    old_chunks = make_chunks([f"old text {i}" for i in range(100)])
    first = Index.build(old_chunks, RecordingEmbedder())
    assert first.build_stats is not None and first.build_stats.embedded == 100
    changed = [c.model_copy(update={"id": f"new{i}", "text": f"changed text {i}"}) for i, c in
               enumerate(old_chunks[:3])]
    added = Chunk(id="added", document_id="new.md", source="new.md", text="a new file", start=0, end=10)
    new_chunks = [*changed, *old_chunks[3:], added]
    embedder = RecordingEmbedder()
    second = Index.build(new_chunks, embedder, previous=first)
    # the embedder saw only the new chunks
    assert sorted(embedder.texts) == sorted([added.text, *(c.text for c in changed)])
    assert second.build_stats is not None
    assert (second.build_stats.embedded, second.build_stats.reused) == (4, 97)
    full = Index.build(new_chunks, RecordingEmbedder())
    np.testing.assert_allclose(second.vectors, full.vectors, atol=1e-6)
    assert second.fingerprint == full.fingerprint
    # another vector space: nothing is reused
    other = RecordingEmbedder(identity="test/other")
    rebuilt = Index.build(new_chunks, other, previous=first)
    assert len(other.texts) == 101 and rebuilt.build_stats is not None and rebuilt.build_stats.reused == 0
    # nothing changed: nothing is embedded
    idle = RecordingEmbedder()
    Index.build(new_chunks, idle, previous=second)
    assert idle.texts == []
