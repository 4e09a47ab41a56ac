"""Search throughput at scale: blocked `search_many` against one query at a time, vector and BM25.

Vector part: synthetic unit vectors (384 dimensions, as all-MiniLM-L6-v2), query vectors given, so
the figures measure search, not the embedding model. BM25 part: synthetic chunks of 120 words
drawn with Zipf frequencies from the real vocabulary of the bundled docs (so stemming and stop words
see real English), queries of 8 words. Both paths return the same rankings (checked on every run);
one query at a time is timed on `--single` queries and reported per second.

    python -m lab.search                          # 10k and 100k chunks, 1,000 queries
    python -m lab.search --sizes 10000 --queries 200
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from ragwatch.indexing.index import Index
from ragwatch.types import Chunk

DIM = 384
WORDS_PER_CHUNK = 120
WORDS_PER_QUERY = 8
T = TypeVar("T")
VOCAB_SOURCE = Path(__file__).resolve().parents[1] / "data" / "sample" / "zenml_docs"


def vocabulary() -> list[str]:
    """Distinct words of the bundled docs, most frequent first (a fixed list if they are missing)."""
    counts: dict[str, int] = {}
    for path in sorted(VOCAB_SOURCE.rglob("*.md")):
        for word in re.findall(r"[a-z]+", path.read_text(encoding="utf-8", errors="ignore").lower()):
            counts[word] = counts.get(word, 0) + 1
    words = sorted(counts, key=lambda w: (-counts[w], w))
    return words or [f"word{i}" for i in range(5000)]


def build_index(n: int, words: list[str], rng: np.random.Generator) -> Index:
    probs = 1.0 / np.arange(1, len(words) + 1)
    probs /= probs.sum()
    picks = rng.choice(len(words), size=(n, WORDS_PER_CHUNK), p=probs)
    texts = [" ".join(words[j] for j in row) for row in picks]
    chunks = [Chunk(id=f"c{i}", document_id=f"d{i // 8}", source=f"doc{i // 8}.md", text=t, start=0,
                    end=len(t)) for i, t in enumerate(texts)]
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return Index(chunks, vectors, "bench/random-384")


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}"


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def measure(size: int, words: list[str], args: argparse.Namespace, rng: np.random.Generator) -> None:
    """Print one table row per mode for an index of `size` synthetic chunks."""
    index, build_s = timed(lambda: build_index(size, words, rng))
    _, bm25_build_s = timed(lambda: index.bm25_scores("warm up"))  # BM25 is built on first use
    query_vectors = unit_rows(rng, args.queries)
    probs = 1.0 / np.arange(1, len(words) + 1)
    probs /= probs.sum()
    picks = rng.choice(len(words), size=(args.queries, WORDS_PER_QUERY), p=probs)
    queries = [" ".join(words[j] for j in row) for row in picks]
    single = min(args.single, args.queries)
    modes = {
        "vector": (
            lambda: index.vector_rankings(query_vectors, args.k),
            lambda: [index.vector_rankings(query_vectors[i : i + 1], args.k)[0] for i in range(single)],
        ),
        "bm25": (
            lambda: index.bm25_rankings(queries, args.k),
            lambda: [index.bm25_rankings([q], args.k)[0] for q in queries[:single]],
        ),
    }
    for mode, (many, one) in modes.items():
        batched, many_s = timed(many)
        singles, single_s = timed(one)
        same = batched[:single] == singles
        speedup = (args.queries / many_s) / (single / single_s)
        print(f"| {size:,} | {mode} | {rate(single, single_s)} | {rate(args.queries, many_s)} | "
              f"x{speedup:.1f} | {many_s * 1000 / args.queries:.2f} s | {same} |")
    print(f"| {size:,} | (synthetic corpus {build_s:.1f} s, BM25 built in {bm25_build_s:.1f} s) | | | | | |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=1000, help="queries per search_many call")
    parser.add_argument("--single", type=int, default=100, help="queries timed one at a time")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    words = vocabulary()
    print(f"vocabulary: {len(words)} words; k = {args.k}; {args.queries} queries per batch\n")
    print("| chunks | mode | one at a time q/s | search_many q/s | speed-up | 1,000 queries (batched) | "
          "same rankings |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        measure(size, words, args, rng)
    return 0


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


if __name__ == "__main__":
    raise SystemExit(main())
