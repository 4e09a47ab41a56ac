"""Generate an evaluation set from the sample corpus with a local model; print speed, filter counts
and the pairs (a cold LLM cache unless --warm).

    python -m lab.testset --model local/qwen2.5-0.5b-instruct --chunks 8 [--check] [--warm]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local/qwen2.5-0.5b-instruct")
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--per-chunk", type=int, default=2)
    parser.add_argument("--corpus", default="data/sample/zenml_docs")
    parser.add_argument("--check", action="store_true", help="also run the LLM answerability filter")
    parser.add_argument("--warm", action="store_true", help="use the normal LLM cache instead of a cold one")
    args = parser.parse_args()
    if not args.warm:
        cold = tempfile.mkdtemp(prefix="ragwatch-bench-")
        models = os.path.join(os.environ.get("RAGWATCH_CACHE_DIR", os.path.expanduser("~/.cache/ragwatch")), "models")
        os.symlink(models, os.path.join(cold, "models"))
        os.environ["RAGWATCH_CACHE_DIR"] = cold

    from ragwatch.corpus.chunking import ChunkingSettings, chunk_documents
    from ragwatch.corpus.documents import load_documents
    from ragwatch.evalset.synthetic import TestsetSettings, generate_testset
    from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
    from ragwatch.indexing.index import Index
    from ragwatch.llm import LLMSettings

    started = time.perf_counter()
    documents = load_documents([args.corpus]).documents
    embedder = get_embedder(EmbeddingSettings())
    chunks = chunk_documents(documents, ChunkingSettings(), embedder.count_tokens, embedder.max_input_tokens)
    index = Index.build(chunks, embedder)
    indexed = time.perf_counter()
    print(f"index: {len(documents)} documents, {len(chunks)} chunks in {indexed - started:.1f} s")

    settings = TestsetSettings(n_chunks=args.chunks, questions_per_chunk=args.per_chunk,
                               llm_answerability_check=args.check)
    testset = generate_testset(index, LLMSettings(model=args.model), embedder, settings)
    minutes = (time.perf_counter() - indexed) / 60
    generated = testset.metadata["generated_pairs"]
    print(f"generation: {minutes * 60:.1f} s; {generated} pairs generated ({generated / minutes:.1f}/min), "
          f"{len(testset.samples)} kept ({len(testset.samples) / minutes:.1f}/min)")
    print("failures:", [(f.chunk_id[:10], f.stage, f.reason[:150]) for f in testset.failures])
    for report in testset.filters:
        print(f"filter {report.name}: removed {report.removed} {report.reasons} e.g. {report.examples[:2]}")
    for sample in testset.samples:
        print(json.dumps({"kind": sample.kind, "question": sample.question, "answer": sample.reference_answer}))


if __name__ == "__main__":
    main()
