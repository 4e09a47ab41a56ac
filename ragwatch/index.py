"""The index: chunks, their vectors and a BM25 model; exact vector, BM25 and hybrid search.

Vector search is exact (cosine over all chunks, no approximation), so retrieval figures measure
the embedding model, not an ANN structure. Hybrid search fuses the vector and BM25 rankings with
reciprocal rank fusion (RRF). Ties break by chunk order, so every ranking is deterministic.

Example:
    >>> embedder = get_embedder(EmbeddingSettings())
    >>> index = Index.build(chunks, embedder)
    >>> hits = index.search("How do I register a stack?", k=5, mode="hybrid", embedder=embedder)
    >>> [(h.rank, h.chunk.source) for h in hits]
    >>> index.save("out/index"); same = Index.load("out/index")
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragwatch.embeddings import Embedder
from ragwatch.types import Chunk, SearchHit

SearchMode = Literal["vector", "bm25", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("vector", "bm25", "hybrid")
FORMAT_VERSION = 1
RRF_K = 60
HYBRID_MIN_DEPTH = 50

# Small on purpose: BM25's idf already discounts common words; this only drops pure function words.
STOPWORDS = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does",
        "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my",
        "no", "not", "of", "on", "or", "our", "so", "than", "that", "the", "their", "them", "then", "there",
        "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
        "will", "with", "would", "you", "your"
    )
)
_WORD = re.compile(r"[^\W_]+")  # letters and digits; `log_metadata` -> `log`, `metadata`


class RagIndexError(ValueError):
    """Base class of index errors (not `IndexError`, which is a builtin with another meaning)."""


class EmbeddingMismatchError(RagIndexError):
    """The query embedder's vector space is not the one the index was built with."""


class EmptyIndexError(RagIndexError):
    """The index holds no chunks."""


class CorruptIndexError(RagIndexError):
    """A saved index is incomplete or inconsistent."""


def tokenize(text: str) -> list[str]:
    """Lowercase words without stopwords, for BM25."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def fingerprint(chunk_ids: Sequence[str], embedding_identity: str) -> str:
    """sha256 over the embedding identity and the chunk ids, in order."""
    digest = hashlib.sha256(embedding_identity.encode())
    for chunk_id in chunk_ids:
        digest.update(b"\n" + chunk_id.encode())
    return digest.hexdigest()


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; ties go to the lower index."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        # Everything scoring at least the k-th value, so boundary ties are all considered.
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order[:k]]


def rrf_fuse(rankings: Sequence[Sequence[int]], k_rrf: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k_rrf + rank), rank 1-based.

    Returns (item, score) best first; ties go to the lower item.
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k_rrf + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


class Index:
    """Chunks, a float32 matrix of unit vectors (one row per chunk), the embedding identity, and BM25."""

    def __init__(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedding_identity: str) -> None:
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
        self._position = {cid: i for i, cid in enumerate(ids)}
        self.fingerprint = fingerprint(ids, embedding_identity)
        self._bm25 = self._build_bm25(chunks)

    # ------------------------------------------------------------------ construction

    @classmethod
    def build(cls, chunks: Sequence[Chunk], embedder: Embedder, progress: bool = False) -> Index:
        """Embed every chunk and index it. Raises EmptyIndexError when there are no chunks."""
        chunks = list(chunks)
        if not chunks:
            raise EmptyIndexError("no chunks to index: check that the corpus paths hold documents")
        texts = [c.text for c in chunks]
        if progress:
            from tqdm.auto import tqdm

            # Slices of a few batches keep the bar moving without hurting the embedder's batching.
            step = 256
            parts = []
            with tqdm(total=len(texts), desc="embedding chunks", unit="chunk") as bar:
                for start in range(0, len(texts), step):
                    parts.append(embedder.embed(texts[start : start + step]))
                    bar.update(len(parts[-1]))
            vectors = np.vstack(parts)
        else:
            vectors = embedder.embed(texts)
        if vectors.shape != (len(chunks), embedder.dim):
            raise ValueError(
                f"embedder {embedder.identity!r} returned shape {vectors.shape}, "
                f"expected {(len(chunks), embedder.dim)}"
            )
        return cls(chunks, vectors, embedder.identity)

    @staticmethod
    def _build_bm25(chunks: list[Chunk]) -> Any:  # bm25s.BM25, or None when there is no word
        import bm25s

        corpus = [tokenize(c.text) for c in chunks]
        if not any(corpus):
            return None  # no indexable word at all: every BM25 score is 0
        model = bm25s.BM25()
        model.index(corpus, show_progress=False)
        return model

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
        """`search` for many queries; the queries are embedded together, in the embedder's batches."""
        if isinstance(queries, str):
            raise TypeError("search_many() takes a list of queries; use search() for one")
        queries = list(queries)
        self._check_search(k, mode, embedder)
        if not queries:
            return []
        depth = max(k, HYBRID_MIN_DEPTH) if mode == "hybrid" else k
        vector_scores = self._vector_scores(queries, embedder) if mode != "bm25" else None
        results: list[list[SearchHit]] = []
        for qi, query in enumerate(queries):
            if mode == "vector":
                assert vector_scores is not None
                scores = vector_scores[qi]
                ranked = [(int(i), float(scores[i])) for i in top_k(scores, k)]
            elif mode == "bm25":
                ranked = self._bm25_ranking(query, k)
            else:
                assert vector_scores is not None
                vec = [int(i) for i in top_k(vector_scores[qi], depth)]
                lex = [i for i, _ in self._bm25_ranking(query, depth)]
                ranked = rrf_fuse([vec, lex])[:k]
            results.append(
                [SearchHit(chunk=self._chunks[i], score=s, rank=r) for r, (i, s) in enumerate(ranked, 1)]
            )
        return results

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

    def _vector_scores(self, queries: list[str], embedder: Embedder | None) -> np.ndarray:
        assert embedder is not None
        query_vectors = embedder.embed(queries)
        if query_vectors.shape != (len(queries), self.dim):
            raise ValueError(
                f"query vectors of shape {query_vectors.shape}, expected ({len(queries)}, {self.dim})"
            )
        # One matrix-vector product per query: the scores of a query never depend on its batch.
        return np.stack([self.vectors @ q for q in query_vectors])

    def bm25_scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for `query` (0 where no query word occurs)."""
        scores = np.zeros(len(self), dtype=np.float32)
        if self._bm25 is None:
            return scores
        ids = self._bm25.get_tokens_ids(tokenize(query))
        if not ids:
            return scores
        return np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float32)

    def _bm25_ranking(self, query: str, depth: int) -> list[tuple[int, float]]:
        # Chunks sharing no word with the query are not matches: they are left out, not ranked by order.
        scores = self.bm25_scores(query)
        return [(int(i), float(scores[i])) for i in top_k(scores, depth) if scores[i] > 0]

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
            "fingerprint": self.fingerprint,
        }
        (directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Index:
        """Read an index written by `save`; BM25 is rebuilt from the chunks (it is deterministic)."""
        directory = Path(directory)
        missing = [n for n in ("meta.json", "chunks.jsonl", "vectors.npy") if not (directory / n).is_file()]
        if missing:
            raise CorruptIndexError(
                f"{directory} is not a saved index (missing {', '.join(missing)}): build it with Index.save"
            )
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format_version") != FORMAT_VERSION:
            raise CorruptIndexError(
                f"{directory}: index format {meta.get('format_version')!r}, this ragwatch reads "
                f"{FORMAT_VERSION}: rebuild the index"
            )
        with (directory / "chunks.jsonl").open(encoding="utf-8") as f:
            chunks = [Chunk.model_validate_json(line) for line in f if line.strip()]
        vectors = np.load(directory / "vectors.npy", allow_pickle=False)
        if vectors.shape != (meta["count"], meta["dim"]) or len(chunks) != meta["count"]:
            raise CorruptIndexError(
                f"{directory}: meta.json says {meta['count']} x {meta['dim']}, found {len(chunks)} chunks "
                f"and vectors of shape {vectors.shape}: rebuild the index"
            )
        index = cls(chunks, vectors, meta["embedding_identity"])
        if index.fingerprint != meta["fingerprint"]:
            raise CorruptIndexError(f"{directory}: fingerprint mismatch (files changed): rebuild the index")
        return index
