"""Throughput of retrieval evaluation (batched search + metrics) by corpus size and query count.

Synthetic corpus: chunks of random words from a fixed vocabulary; a bag-of-words embedder over
random unit word vectors (numpy only, so the figures measure search and metrics, not a model).
Each query takes words from one target chunk, which is its relevant item. Queries are embedded in
one batch per `search_many` call. Prints queries/s per mode and how time grows with the query count.

    python -m lab.retrieval --sizes 1000 5000 20000 --queries 100 400 1600
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragwatch.indexing.index import Index
from ragwatch.retrieval import evaluate_retrieval
from ragwatch.types import Chunk, EvalSample, RelevantItem

VOCAB = 5000
DIM = 384
WORDS_PER_CHUNK = 60


class BagOfWordsEmbedder:
    """Sum of fixed random word vectors, L2-normalized: cheap, deterministic, and semantic enough
    that a query made of a chunk's words lands near that chunk."""

    identity = "bench/bow-384"
    dim = DIM
    max_input_tokens = 512

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.words = [f"w{i}" for i in range(VOCAB)]
        self.position = {w: i for i, w in enumerate(self.words)}
        self.vectors = rng.standard_normal((VOCAB, DIM)).astype(np.float32)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            ids = [self.position[w] for w in text.split() if w in self.position]
            if ids:
                out[i] = self.vectors[ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def corpus(n: int, embedder: BagOfWordsEmbedder, rng: np.random.Generator) -> Index:
    # Zipf-like word frequencies, so BM25 sees realistic idf spread
    probs = 1.0 / np.arange(1, VOCAB + 1)
    probs /= probs.sum()
    ids = rng.choice(VOCAB, size=(n, WORDS_PER_CHUNK), p=probs)
    texts = [" ".join(embedder.words[j] for j in row) for row in ids]
    chunks = [Chunk(id=f"c{i}", document_id=f"d{i // 4}", source=f"doc{i // 4}.md", text=t, start=0,
                    end=len(t))
              for i, t in enumerate(texts)]
    return Index(chunks, embedder.embed(texts), embedder.identity)


def queries(index: Index, n: int, rng: np.random.Generator) -> list[EvalSample]:
    chunks = index.chunks
    samples = []
    for qi, target in enumerate(rng.integers(0, len(chunks), size=n)):
        words = chunks[target].text.split()
        picked = [words[j] for j in rng.choice(len(words), size=8, replace=False)]
        samples.append(EvalSample(id=f"q{qi}", question=" ".join(picked),
                                  relevant=[RelevantItem(kind="chunk_id", value=chunks[target].id)]))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--queries", type=int, nargs="+", default=[100, 400, 1600])
    parser.add_argument("--modes", nargs="+", default=["vector", "bm25", "hybrid"])
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    embedder = BagOfWordsEmbedder()
    rng = np.random.default_rng(0)
    print("| chunks | mode | queries | search s | metrics s | queries/s | hit@10 | mrr |")
    print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        started = time.perf_counter()
        index = corpus(size, embedder, rng)
        build_s = time.perf_counter() - started
        for mode in args.modes:
            per_query = []
            for n in args.queries:
                samples = queries(index, n, rng)
                t0 = time.perf_counter()
                rankings = index.search_many([s.question for s in samples], args.k, mode, embedder)
                t1 = time.perf_counter()
                report = evaluate_retrieval(samples, rankings, ks=(1, 5, 10))
                t2 = time.perf_counter()
                per_query.append((t2 - t0) / n)
                print(f"| {size} | {mode} | {n} | {t1 - t0:.2f} | {t2 - t1:.2f} | {n / (t2 - t0):.0f} | "
                      f"{report.metrics['hit_rate@10'].score:.2f} | {report.metrics['mrr'].score:.2f} |")
            growth = per_query[-1] / per_query[0]
            print(f"| {size} | {mode} | time per query at {args.queries[-1]} vs {args.queries[0]} queries: "
                  f"x{growth:.2f} (1.0 = linear) | | | | | |")
        print(f"| {size} | (index built in {build_s:.1f} s) | | | | | | |")


if __name__ == "__main__":
    main()
