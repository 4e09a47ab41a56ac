"""Retrieval quality on the whole ZenML 0.60.0 docs with the labelled ZenML question set.

For each retrieval mode (vector, bm25, hybrid) prints hit@1/3/5/10, MRR, nDCG@5/10 and recall@5 with
95% bootstrap intervals, and lists the questions whose URL maps to no file of the corpus (counted as
failures, not as misses). The index is cached in --index-dir, keyed by its fingerprint.

    python -m lab.retrieval_quality --corpus /work/shared/data/zenml_docs_0.60.0 \
        --questions /work/shared/data/zenml_qa/test_dataset.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

from ragwatch.corpus.chunking import ChunkingSettings, chunk_documents
from ragwatch.corpus.documents import load_documents
from ragwatch.evalset.imported import load_zenml_qa
from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
from ragwatch.indexing.index import BM25Settings, Index, fingerprint
from ragwatch.retrieval import (
    MatchSettings,
    compare_retrievers,
    evaluate_retrieval,
    rankings_with_documents,
    unmatched_labels,
)

# The question set links docs.zenml.io pages; the corpus is the docs/book tree of the same release.
ZENML_URL_REWRITES = [
    ("https://docs.zenml.io/v/docs/", ""),
    ("https://docs.zenml.io/", ""),
    ("stack-components/", "component-guide/"),
]
SHOWN = ["hit_rate@1", "hit_rate@3", "hit_rate@5", "hit_rate@10", "mrr", "ndcg@5", "ndcg@10", "recall@5"]


def build_or_load_index(corpus: Path, cache: Path, chunking: ChunkingSettings, embedder) -> Index:
    docs = load_documents([str(corpus / "**" / "*.md")], root=corpus)
    chunks = chunk_documents(docs.documents, chunking, embedder.count_tokens, embedder.max_input_tokens)
    expected = fingerprint([c.id for c in chunks], embedder.identity, BM25Settings())  # as Index.build
    target = cache / expected[:16]
    if target.exists():
        index = Index.load(target)
        if index.fingerprint == expected:
            return index
    started = time.perf_counter()
    index = Index.build(chunks, embedder, progress=True)
    print(f"indexed {len(docs.documents)} documents, {len(chunks)} chunks in "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    index.save(target)
    return index


def duplicate_aliases(corpus: Path, kept: list[str]) -> dict[str, str]:
    """Path of each byte-identical copy -> the copy the index kept. The loader indexes duplicate
    files once; the question set may link either copy (the 0.60.0 docs hold rag/ and
    rag-with-zenml/ twice)."""
    kept_set = set(kept)
    groups: dict[str, list[str]] = {}
    for file in sorted(corpus.rglob("*.md")):
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        groups.setdefault(digest, []).append(file.relative_to(corpus).as_posix())
    aliases = {}
    for paths in groups.values():
        target = next((p for p in paths if p in kept_set), None)
        aliases.update({p: target for p in paths if target and p != target})
    return aliases


def cell(table, metric: str, setting: str) -> str:
    return (f"{table.loc[setting, metric]:.3f} [{table.loc[setting, metric + '_ci_low']:.2f}, "
            f"{table.loc[setting, metric + '_ci_high']:.2f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/data/zenml_docs_0.60.0"))
    parser.add_argument("--questions", type=Path,
                        default=Path("/work/shared/data/zenml_qa/test_dataset.jsonl"))
    parser.add_argument("--index-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "ragwatch_bench_index")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--overlap-tokens", type=int, default=30)
    parser.add_argument("--embedding-model", default=EmbeddingSettings().model)
    parser.add_argument("--worst", type=int, default=5, help="worst questions to list for hybrid")
    parser.add_argument("--rank-unit", choices=["document", "chunk"], default="document",
                        help="rank documents by their best chunk (MaxP, the default) or rank chunks")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        parser.error(f"--corpus {args.corpus} is not a directory: pass the unpacked ZenML docs tree")

    embedder = get_embedder(EmbeddingSettings(model=args.embedding_model))
    chunking = ChunkingSettings(max_tokens=args.max_tokens, overlap_tokens=args.overlap_tokens)
    index = build_or_load_index(args.corpus, args.index_dir, chunking, embedder)
    samples = load_zenml_qa(args.questions)
    sources = index.documents()
    aliases = duplicate_aliases(args.corpus, sources)
    match = MatchSettings(on="url", url_rewrites=ZENML_URL_REWRITES, aliases=aliases, rank_unit=args.rank_unit)
    questions = [s.question for s in samples]

    rankings, timings = {}, {}
    for mode in ("vector", "bm25", "hybrid"):
        started = time.perf_counter()
        rankings[mode] = rankings_with_documents(
            lambda qs, d, m=mode: index.search_many(qs, d, m, embedder), questions, 10, limit=len(index))
        timings[mode] = time.perf_counter() - started
    table = compare_retrievers(samples, rankings, ks=(1, 3, 5, 10), match=match, corpus_sources=sources)

    print(f"corpus: {args.corpus} ({len(sources)} documents, {len(index)} chunks, "
          f"{embedder.identity}, chunks of <= {args.max_tokens} tokens; {len(aliases)} duplicate files "
          f"aliased to their indexed copy; ranked by {args.rank_unit})")
    print(f"questions: {len(samples)} from {args.questions}; scored {int(table['n_scored'].iloc[0])}, "
          f"failed {int(table['n_failed'].iloc[0])}\n")
    print("| mode | " + " | ".join(SHOWN) + " | search s |")
    print("|---" * (len(SHOWN) + 2) + "|")
    for mode in table.index:
        print(f"| {mode} | " + " | ".join(cell(table, m, mode) for m in SHOWN) + f" | {timings[mode]:.1f} |")

    missing = unmatched_labels(samples, sources, match)
    print(f"\n{len(missing)} questions whose URL maps to no file of the corpus (failures):")
    by_id = {s.id: s for s in samples}
    for sid, urls in missing.items():
        print(f"  {sid}: {', '.join(urls)}  ({by_id[sid].question[:70]})")

    if args.worst:
        report = evaluate_retrieval(samples, rankings["hybrid"], (1, 3, 5, 10), match, corpus_sources=sources)
        print(f"\nworst {args.worst} questions (hybrid):")
        for row in report.worst(args.worst).itertuples():
            print(f"  - {row.question[:90]}\n    expected {row.expected}\n"
                  f"    got {row.retrieved_instead[:200]}")


if __name__ == "__main__":
    main()
