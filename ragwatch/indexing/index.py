"""The index: chunks, their vectors and a BM25 model; exact vector, BM25 and hybrid search.

Vector search is exact (cosine over all chunks, no approximation), so retrieval figures measure
the embedding model, not an ANN structure. Many queries are scored as blocks of matrix products
(dense for vectors, sparse for BM25), then every candidate near the top is re-scored on its own in
float64, so a query's ranking never depends on which other queries share its block. Hybrid search
fuses the vector and BM25 rankings with reciprocal rank fusion (RRF). Ties break by chunk order,
so every ranking is deterministic.

BM25 is the Lucene variant (bm25s; k1=1.5, b=0.75) over words that are lowercased, split at
non-letters, stripped of Lucene's English stop words and Snowball-stemmed (PyStemmer), by default;
`BM25Settings` picks another, and `index.bm25_variant` says which one runs.

Example:
    >>> embedder = get_embedder(EmbeddingSettings())
    >>> index = Index.build(chunks, embedder)
    >>> hits = index.search("How do I register a stack?", k=5, mode="hybrid", embedder=embedder)
    >>> [(h.rank, h.chunk.source) for h in hits]
    >>> index.save("out/index"); same = Index.load("out/index")
    >>> bigger = Index.build(new_chunks, embedder, previous=index)  # embeds only the new chunk ids
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np

from ragwatch.indexing.bm25 import Analyzer, BM25Settings, tokenize
from ragwatch.indexing.embeddings import Embedder
from ragwatch.indexing.errors import CorruptIndexError, EmbeddingMismatchError, EmptyIndexError, RagIndexError
from ragwatch.indexing.topk import best_per_row, candidates, rrf_fuse, score_blocks, top_k
from ragwatch.types import Chunk, SearchHit

# BM25Settings, tokenize (ragwatch.indexing.bm25), top_k and rrf_fuse (ragwatch.indexing.topk) stay importable from here
__all__ = ["SEARCH_MODES", "BM25Settings", "BuildStats", "CorruptIndexError", "EmbeddingMismatchError",
           "EmptyIndexError", "Index", "RagIndexError", "fingerprint", "rrf_fuse", "tokenize", "top_k"]

SearchMode = Literal["vector", "bm25", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("vector", "bm25", "hybrid")
FORMAT_VERSION = 2  # 2 records the BM25 variant; 1 (without it) still loads, with the default variant
HYBRID_MIN_DEPTH = 50
# Score-matrix cells per block of queries. Vectors: large blocks, so the chunk matrix is read once per
# many queries (float32, 64 MB: 1,000 queries over 100k chunks take 6 blocks). BM25 reads only posting
# lists, so its blocks stay small enough for the CPU cache (measured: 1<<18 cells ~6x faster than 1<<24).
BLOCK_CELLS = 1 << 24
BM25_BLOCK_CELLS = 1 << 18


@dataclass(frozen=True)
class BuildStats:
    """What `Index.build` did: chunks embedded, vectors reused from a previous index, seconds."""

    embedded: int
    reused: int
    seconds: float


def fingerprint(chunk_ids: Sequence[str], embedding_identity: str, bm25: BM25Settings | None = None) -> str:
    """sha256 over the embedding identity, the BM25 variant (when given) and the chunk ids, in order."""
    digest = hashlib.sha256(embedding_identity.encode())
    if bm25 is not None:
        digest.update(b"\nbm25:" + bm25.model_dump_json().encode())
    for chunk_id in chunk_ids:
        digest.update(b"\n" + chunk_id.encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class _BM25:
    """BM25 postings: term t's chunks are `chunks[indptr[t]:indptr[t+1]]`, with their `weights`."""

    vocab: dict[str, int]
    indptr: np.ndarray
    chunks: np.ndarray
    weights: np.ndarray
    analyzer: Analyzer


class Index:
    """Chunks, a float32 matrix of unit vectors (one row per chunk), the embedding identity, and BM25.

    BM25 is built on first use (loading an index to reuse its vectors does not pay for it).
    """

    def __init__(
        self,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        embedding_identity: str,
        bm25: BM25Settings | None = None,
    ) -> None:
        chunks = list(chunks)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise ValueError(f"vectors of shape {vectors.shape} do not match {len(chunks)} chunks")
        ids = [c.id for c in chunks]
        if len(set(ids)) != len(ids):
            dup = next(cid for cid, n in Counter(ids).items() if n > 1)
            raise ValueError(f"duplicate chunk id {dup!r}: chunk ids must be unique (deduplicate the chunks)")
        self._chunks = chunks
        self.vectors = vectors
        self.embedding_identity = embedding_identity
        self.bm25_settings = bm25 or BM25Settings()
        self._position = {cid: i for i, cid in enumerate(ids)}
        self.fingerprint = fingerprint(ids, embedding_identity, self.bm25_settings)
        self.build_stats: BuildStats | None = None
        self._bm25_lock = threading.Lock()

    # ------------------------------------------------------------------ construction

    @classmethod
    def build(
        cls,
        chunks: Sequence[Chunk],
        embedder: Embedder,
        progress: bool = False,
        *,
        bm25: BM25Settings | None = None,
        previous: Index | None = None,
    ) -> Index:
        """Embed every chunk and index it. Raises EmptyIndexError when there are no chunks.

        With `previous` (an index of the same embedding identity) chunks whose id is already there
        keep its vector and only the others are embedded: an id is a hash of source, position and
        text, so an unchanged chunk has the same id. A previous index of another identity is not used.
        """
        started = time.perf_counter()
        chunks = list(chunks)
        if not chunks:
            raise EmptyIndexError("no chunks to index: check that the corpus paths hold documents")
        vectors = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
        todo = list(range(len(chunks)))
        if previous is not None and previous.embedding_identity == embedder.identity:
            if previous.dim != embedder.dim:
                raise ValueError(
                    f"the previous index has dimension {previous.dim}, the embedder {embedder.dim}, "
                    f"under the same identity {embedder.identity!r}: rebuild without the previous index"
                )
            known = [previous._position.get(c.id) for c in chunks]
            reuse = [i for i, j in enumerate(known) if j is not None]
            if reuse:
                vectors[reuse] = previous.vectors[[known[i] for i in reuse]]
            todo = [i for i, j in enumerate(known) if j is None]
        if todo:
            vectors[todo] = cls._embed([chunks[i].text for i in todo], embedder, progress)
        index = cls(chunks, vectors, embedder.identity, bm25)
        index.build_stats = BuildStats(
            embedded=len(todo), reused=len(chunks) - len(todo), seconds=time.perf_counter() - started
        )
        return index

    @staticmethod
    def _embed(texts: list[str], embedder: Embedder, progress: bool) -> np.ndarray:
        if progress:
            from tqdm.auto import tqdm

            # Slices of many batches keep the bar moving without hurting the embedder's batching.
            step = 1024
            parts = []
            with tqdm(total=len(texts), desc="embedding chunks", unit="chunk") as bar:
                for start in range(0, len(texts), step):
                    parts.append(embedder.embed(texts[start : start + step]))
                    bar.update(len(parts[-1]))
            vectors = np.vstack(parts)
        else:
            vectors = embedder.embed(texts)
        if vectors.shape != (len(texts), embedder.dim):
            raise ValueError(
                f"embedder {embedder.identity!r} returned shape {vectors.shape}, "
                f"expected {(len(texts), embedder.dim)}"
            )
        return vectors

    # ------------------------------------------------------------------ accessors

    def __len__(self) -> int:
        return len(self._chunks)

    def __repr__(self) -> str:
        return f"Index({len(self)} chunks, {self.embedding_identity!r}, {self.fingerprint[:12]})"

    @property
    def chunks(self) -> list[Chunk]:
        return list(self._chunks)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def bm25_variant(self) -> str:
        """Which BM25 runs, in words (for reports and metadata)."""
        return self.bm25_settings.describe()

    def get_chunk(self, chunk_id: str) -> Chunk:
        try:
            return self._chunks[self._position[chunk_id]]
        except KeyError:
            raise KeyError(f"no chunk with id {chunk_id!r} in this index ({len(self)} chunks)") from None

    def documents(self) -> list[str]:
        """Distinct chunk sources, in order of first appearance."""
        return list(dict.fromkeys(c.source for c in self._chunks))

    # ------------------------------------------------------------------ search

    def search(
        self, query: str, k: int = 5, mode: SearchMode = "vector", embedder: Embedder | None = None
    ) -> list[SearchHit]:
        """The top-k chunks for one query, ranked 1..k (fewer if the index or BM25 matches are fewer)."""
        return self.search_many([query], k=k, mode=mode, embedder=embedder)[0]

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 5,
        mode: SearchMode = "vector",
        embedder: Embedder | None = None,
    ) -> list[list[SearchHit]]:
        """`search` for many queries: embedded together, scored in blocks of matrix products."""
        if isinstance(queries, str):
            raise TypeError("search_many() takes a list of queries; use search() for one")
        queries = list(queries)
        self._check_search(k, mode, embedder)
        if not queries:
            return []
        depth = max(k, HYBRID_MIN_DEPTH) if mode == "hybrid" else k
        vec: list[list[tuple[int, float]]] = []
        lex: list[list[tuple[int, float]]] = []
        if mode != "bm25":
            vec = self.vector_rankings(self._embed_queries(queries, embedder), depth)
        if mode != "vector":
            lex = self.bm25_rankings(queries, depth)
        if mode == "vector":
            ranked = vec
        elif mode == "bm25":
            ranked = lex
        else:
            ranked = [
                rrf_fuse([[i for i, _ in v], [i for i, _ in b]])[:k] for v, b in zip(vec, lex, strict=True)
            ]
        return [
            [SearchHit(chunk=self._chunks[i], score=s, rank=r) for r, (i, s) in enumerate(row, 1)]
            for row in ranked
        ]

    def _check_search(self, k: int, mode: str, embedder: Embedder | None) -> None:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if mode not in SEARCH_MODES:
            raise ValueError(f"unknown search mode {mode!r}: use one of {', '.join(SEARCH_MODES)}")
        if len(self) == 0:
            raise EmptyIndexError("the index holds no chunks: rebuild it from a corpus with documents")
        if mode == "bm25":
            return
        if embedder is None:
            raise ValueError(f"search mode {mode!r} needs the embedder the index was built with")
        if embedder.identity != self.embedding_identity:
            raise EmbeddingMismatchError(
                f"the index was built with embedding model {self.embedding_identity!r} but the query "
                f"embedder is {embedder.identity!r}: rebuild the index with the new model, or set the "
                f"embedding model in the config back to {self.embedding_identity!r}"
            )

    def _embed_queries(self, queries: list[str], embedder: Embedder | None) -> np.ndarray:
        assert embedder is not None
        query_vectors = embedder.embed(queries)
        if query_vectors.shape != (len(queries), self.dim):
            raise ValueError(
                f"query vectors of shape {query_vectors.shape}, expected ({len(queries)}, {self.dim})"
            )
        return query_vectors

    @cached_property
    def _max_norm(self) -> float:
        return float(np.linalg.norm(self.vectors, axis=1).max(initial=0.0))

    def vector_rankings(self, query_vectors: np.ndarray, depth: int) -> list[list[tuple[int, float]]]:
        """Exact top-`depth` (chunk position, cosine) per query vector, best first, ties by position.

        A float32 matrix product per block finds the candidates; each candidate within the product's
        rounding bound of the cut-off is re-scored in float64 on its own, so the result is the exact
        ranking whatever the block holds.
        """
        queries = np.ascontiguousarray(query_vectors, dtype=np.float32)
        n, dim = self.vectors.shape
        depth = min(depth, n)
        # |float32 dot - exact dot| <= dim * eps/2 * |q| * |v| (Higham); twice that covers both sides.
        slack = dim * float(np.finfo(np.float32).eps) * self._max_norm
        results: list[list[tuple[int, float]]] = []
        # The float64 re-score gathers (candidates x dim) per block: a block of a small corpus may hold
        # every query, so its rows are also bounded by depth * dim (else memory grows with the queries).
        for block in score_blocks(len(queries), max(n, 4 * depth * dim), BLOCK_CELLS):
            # One query: a matrix-vector product (BLAS gemv), several times faster than a 1-row gemm.
            approx = (self.vectors @ queries[block][0])[None, :] if block.stop - block.start == 1 else (
                queries[block] @ self.vectors.T
            )
            rows, cols = candidates(approx, depth, slack * np.linalg.norm(queries[block], axis=1))
            exact = (self.vectors[cols].astype(np.float64) * queries[block][rows].astype(np.float64)).sum(axis=1)
            results.extend(best_per_row(rows, cols, exact, depth, len(approx)))
        return results

    # ------------------------------------------------------------------ BM25

    @property
    def _bm25(self) -> _BM25 | None:
        """The BM25 postings, or None when no chunk has a word."""
        with self._bm25_lock:
            if not hasattr(self, "_bm25_model"):
                self._bm25_model = self._build_bm25()
            return self._bm25_model

    def _build_bm25(self) -> _BM25 | None:
        import bm25s

        analyzer = Analyzer(self.bm25_settings)
        vocab: dict[str, int] = {}
        # Term ids assigned here spare bm25s a second pass over every token to build its vocabulary.
        corpus = [[vocab.setdefault(t, len(vocab)) for t in analyzer(c.text)] for c in self._chunks]
        if not vocab:
            return None  # no indexable word at all: every BM25 score is 0
        model = bm25s.BM25(k1=self.bm25_settings.k1, b=self.bm25_settings.b, method="lucene")
        model.index((corpus, vocab), show_progress=False, create_empty_token=False)
        s = model.scores
        # bm25s keeps the chunk x term weights term by term: a posting list of chunks and weights.
        return _BM25(vocab, s["indptr"], s["indices"].astype(np.int64), s["data"], analyzer)

    def bm25_scores_many(self, queries: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for each query, shape (queries, chunks); 0 where no word occurs.

        A query word repeated counts as often as it occurs, as in Lucene and bm25s.
        """
        model = self._bm25
        if model is None or not queries:
            return np.zeros((len(queries), len(self)))
        return self._bm25_block(list(queries), model)

    def _bm25_block(self, queries: list[str], model: _BM25) -> np.ndarray:
        # The posting lists of every query's terms, shifted to the query's row, summed by one bincount:
        # work in proportion to the postings read (not queries x chunks x terms), each cell summed in
        # float64 in term order, so a query's scores never depend on its block.
        n = len(self)
        cells: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for qi, query in enumerate(queries):
            terms = Counter(model.vocab[t] for t in model.analyzer(query) if t in model.vocab)
            for term, count in sorted(terms.items()):
                lo, hi = model.indptr[term], model.indptr[term + 1]
                cells.append(model.chunks[lo:hi] + qi * n)
                weights.append(model.weights[lo:hi] * count if count > 1 else model.weights[lo:hi])
        if not cells:
            return np.zeros((len(queries), n))
        flat = np.bincount(np.concatenate(cells), weights=np.concatenate(weights), minlength=len(queries) * n)
        return flat.reshape(len(queries), n)

    def bm25_scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for `query` (0 where no query word occurs)."""
        return self.bm25_scores_many([query])[0]

    def bm25_rankings(self, queries: Sequence[str], depth: int) -> list[list[tuple[int, float]]]:
        """Top-`depth` (chunk position, BM25 score) per query, best first, ties by position.

        Chunks sharing no word with the query are not matches: they are left out, not ranked by order.
        """
        queries = list(queries)
        model = self._bm25
        if model is None:
            return [[] for _ in queries]
        depth = min(depth, len(self))
        results: list[list[tuple[int, float]]] = []
        for block in score_blocks(len(queries), len(self), BM25_BLOCK_CELLS):
            scores = self._bm25_block(queries[block], model)
            rows, cols = candidates(scores, depth, 0.0)
            matched = scores[rows, cols] > 0
            rows, cols = rows[matched], cols[matched]
            results.extend(best_per_row(rows, cols, scores[rows, cols], depth, len(scores)))
        return results

    # ------------------------------------------------------------------ persistence

    def save(self, directory: str | Path) -> Path:
        """Write chunks.jsonl, vectors.npy and meta.json into `directory` (created if needed)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        with (directory / "chunks.jsonl").open("w", encoding="utf-8") as f:
            for chunk in self._chunks:
                f.write(chunk.model_dump_json() + "\n")
        np.save(directory / "vectors.npy", self.vectors, allow_pickle=False)
        meta = {
            "format_version": FORMAT_VERSION,
            "embedding_identity": self.embedding_identity,
            "dim": self.dim,
            "count": len(self),
            "bm25": self.bm25_settings.model_dump(mode="json"),
            "bm25_variant": self.bm25_variant,
            "fingerprint": self.fingerprint,
        }
        (directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Index:
        """Read an index written by `save`; BM25 is rebuilt from the chunks on first use (deterministic)."""
        directory = Path(directory)
        missing = [n for n in ("meta.json", "chunks.jsonl", "vectors.npy") if not (directory / n).is_file()]
        if missing:
            raise CorruptIndexError(
                f"{directory} is not a saved index (missing {', '.join(missing)}): build it with Index.save"
            )
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        version = meta.get("format_version")
        if version not in (1, FORMAT_VERSION):
            raise CorruptIndexError(
                f"{directory}: index format {version!r}, this ragwatch reads 1 and {FORMAT_VERSION}: "
                "rebuild the index"
            )
        with (directory / "chunks.jsonl").open(encoding="utf-8") as f:
            chunks = [Chunk.model_validate_json(line) for line in f if line.strip()]
        vectors = np.load(directory / "vectors.npy", allow_pickle=False)
        if vectors.shape != (meta["count"], meta["dim"]) or len(chunks) != meta["count"]:
            raise CorruptIndexError(
                f"{directory}: meta.json says {meta['count']} x {meta['dim']}, found {len(chunks)} chunks "
                f"and vectors of shape {vectors.shape}: rebuild the index"
            )
        # Format 1 fingerprinted chunks and identity only, and ran no other BM25 than today's default.
        bm25 = BM25Settings.model_validate(meta["bm25"]) if version == FORMAT_VERSION else None
        expected = fingerprint([c.id for c in chunks], meta["embedding_identity"], bm25)
        if expected != meta["fingerprint"]:
            raise CorruptIndexError(f"{directory}: fingerprint mismatch (files changed): rebuild the index")
        return cls(chunks, vectors, meta["embedding_identity"], bm25)
