"""Grammar-constrained decoding on the local model: llama.cpp's stock sampler vs the top-token check.

The product's own structured calls on the sample corpus, each made twice in one process, once per
sampler, alternating so machine load hits both alike: question generation for a chunk
(`testset.build_prompt`) and batched statement verification against it (the faithfulness judge's
`verify_many`, one supported and one foreign statement). Prints seconds per call for each sampler,
their ratio, and whether the replies and P(supported) are identical (they must be: greedy decoding
picks the same token either way).

    python -m benchmarks grammar_decoding [--model local/qwen2.5-0.5b-instruct] [--n 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("RAGWATCH_CACHE_DIR", tempfile.mkdtemp(prefix="ragwatch-bench-"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local/qwen2.5-0.5b-instruct")
    parser.add_argument("--n", type=int, default=8, help="chunks (each gives one call of each kind)")
    parser.add_argument("--corpus", default=str(ROOT / "data" / "sample" / "zenml_docs"))
    args = parser.parse_args()

    from ragwatch.corpus.chunking import ChunkingSettings, chunk_documents
    from ragwatch.corpus.documents import load_documents
    from ragwatch.evalset.synthetic import build_prompt, qa_schema
    from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
    from ragwatch.judges.faithfulness.verify import verify_many
    from ragwatch.llm import LLMClient, LLMSettings, local

    embedder = get_embedder(EmbeddingSettings())
    chunks = chunk_documents(load_documents([args.corpus]).documents, ChunkingSettings(), embedder.count_tokens)
    long_enough = [c for c in chunks if len(c.text) > 400]
    picked = long_enough[:: max(1, len(long_enough) // (args.n + 1))][: args.n + 1]
    first_sentence = [c.text.replace("\n", " ").split(". ")[0][:200] for c in picked]

    def calls(client: LLMClient, i: int) -> list[tuple[str, float, object]]:
        chunk = picked[i]
        out = []
        start = time.perf_counter()
        gen = client.generate(build_prompt(chunk, ["factual"]), schema=qa_schema(1), max_tokens=400)
        out.append(("question generation", time.perf_counter() - start, gen.text))
        start = time.perf_counter()
        verdicts = verify_many(client, [(chunk.text, [first_sentence[i], first_sentence[i + 1]])],
                               support_threshold=0.5)[0]
        out.append(("batched verification", time.perf_counter() - start,
                    [(v.verdict, v.p_supported, v.reason) for v in verdicts]))
        return out

    seconds: dict[tuple[str, bool], list[float]] = {}
    same = 0
    total = 0
    name = args.model.removeprefix("local/")
    for i in range(args.n):
        results = {}
        for check in ((True, False) if i % 2 else (False, True)):  # alternate which sampler goes first
            local.GREEDY_GRAMMAR_CHECK = check
            local.close_all()
            local.load(name)  # loading is not timed
            client = LLMClient(LLMSettings(model=args.model, cache=False, concurrency=1, max_tokens=400))
            results[check] = calls(client, i)
            for kind, s, _ in results[check]:
                seconds.setdefault((kind, check), []).append(s)
        for (_, _, stock), (_, _, fast) in zip(results[False], results[True], strict=True):
            total += 1
            same += stock == fast
        print(f"chunk {i + 1}/{args.n} done", file=sys.stderr, flush=True)
    local.close_all()

    print(f"{args.model}, {args.n} chunks, {os.cpu_count()} cores")
    print("| call | stock s/call | top-token check s/call | ratio |")
    print("|---|---|---|---|")
    for kind in ("question generation", "batched verification"):
        stock, fast = statistics.mean(seconds[(kind, False)]), statistics.mean(seconds[(kind, True)])
        print(f"| {kind} | {stock:.2f} | {fast:.2f} | {fast / stock:.2f}x |")
    print(f"identical replies and P(supported): {same}/{total}")
    return 0 if same == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
