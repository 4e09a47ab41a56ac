"""How fast can this machine read a prompt? The ceiling under every local call, per model and quantization.

Reading the prompt is 70-85% of every local call (`benchmarks/local_throughput.py`), and batching does
not speed it up: it is arithmetic, not memory traffic. This script measures that rate directly for the
packaged models as shipped (Q4_K_M, repacked by llama.cpp for AVX2) and requantized from them to Q8_0
and Q4_0 (the formats with llama.cpp's other fast CPU kernels), on the same ~800 tokens of the bundled
corpus, best of `--repeats`, then prints the least time the embedded default's calls can take on this
machine from prompt reading alone: no engine, batching or scheduling change can go below it while
the calls read the same tokens.

Tokens per call default to the figures `local_throughput.py` measured on the default's real calls
(judge 810, answer 569, synthetic pair 324); change them with the flags. A batch-engine slot keeps
the judge's instructions from its previous call, so the floor is also printed with those tokens
(the verification system prompt, tokenized by the judge model) not read again.

    python -m lab.prompt_reading [--tokens 800] [--repeats 2] [--items 60] [--no-requantize]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.judges.faithfulness.verify import VERIFY_BATCH_SYSTEM  # noqa: E402
from ragwatch.llm.local import N_THREADS, model_path  # noqa: E402

GENERATOR = "qwen2.5-0.5b-instruct"
JUDGE = "qwen2.5-coder-1.5b-instruct"
# llama.cpp's llama_ftype values
REQUANTIZED = {"Q8_0": 7, "Q4_0": 2}


def sample_text() -> str:
    pages = sorted((ROOT / "data" / "sample" / "zenml_docs").rglob("*.md"))
    return "\n\n".join(p.read_text(encoding="utf-8") for p in pages[:8])


@contextlib.contextmanager
def quiet_fd(fd: int) -> Iterator[None]:
    """llama.cpp's quantizer prints every tensor from C; send that file descriptor to /dev/null."""
    saved = os.dup(fd)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), fd)
        try:
            yield
        finally:
            os.dup2(saved, fd)
            os.close(saved)


def requantize(source: Path, ftype: int, target: Path) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.allow_requantize = True  # from Q4_K_M: the shipped weights, re-encoded
    params.nthread = N_THREADS
    sys.stdout.flush()
    with quiet_fd(1), quiet_fd(2):
        failed = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), ctypes.byref(params))
    if failed:
        raise RuntimeError(f"requantizing {source} failed")


def prompt_rate(path: Path, text: str, n_tokens: int, repeats: int) -> float:
    """Best prompt tokens/s over `repeats` fresh reads of the first `n_tokens` tokens of `text`."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(path), n_ctx=4096, n_threads=N_THREADS, verbose=False)
    try:
        tokens = llm.tokenize(text.encode("utf-8"))[:n_tokens]
        best = 0.0
        for _ in range(repeats):
            llm.reset()
            llm._ctx.kv_cache_clear()  # a fresh read: no prefix reuse
            started = time.perf_counter()
            llm.eval(tokens)
            best = max(best, len(tokens) / (time.perf_counter() - started))
        return best
    finally:
        llm.close()


def token_count(name: str, text: str) -> int:
    from llama_cpp import Llama

    vocab = Llama(model_path=str(model_path(name)), vocab_only=True, verbose=False)
    try:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False))
    finally:
        vocab.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=800, help="prompt tokens per read")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--items", type=int, default=60, help="answered and judged items of the bound")
    parser.add_argument("--judge-tokens", type=int, default=810)
    parser.add_argument("--answer-tokens", type=int, default=569)
    parser.add_argument("--pair-tokens", type=int, default=324)
    parser.add_argument("--no-requantize", action="store_true", help="only the shipped files")
    args = parser.parse_args(argv)

    import llama_cpp

    print(f"llama.cpp: {llama_cpp.llama_print_system_info().decode().strip()}; {N_THREADS} threads")
    text = sample_text()
    rates: dict[str, float] = {}
    print("\n| model | format | prompt tokens/s | x shipped |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ragwatch-quant-") as tmp:
        for name in (GENERATOR, JUDGE):
            shipped = model_path(name)
            formats = {"Q4_K_M (shipped)": shipped}
            if not args.no_requantize:
                for label, ftype in REQUANTIZED.items():
                    formats[label] = Path(tmp) / f"{name}-{label}.gguf"
                    requantize(shipped, ftype, formats[label])
            for label, path in formats.items():
                rate = prompt_rate(path, text, args.tokens, args.repeats)
                rates.setdefault(name, rate)  # the shipped file's rate is the first
                print(f"| {name} | {label} | {rate:.1f} | {rate / rates[name]:.2f}x |", flush=True)
                if path != shipped:
                    path.unlink()
    gen, judge = rates[GENERATOR], rates[JUDGE]
    instructions = token_count(JUDGE, VERIFY_BATCH_SYSTEM)
    minutes = {
        f"judge (faithfulness, {args.judge_tokens} tokens/call)": args.judge_tokens / judge,
        f"answers ({args.answer_tokens} tokens/call)": args.answer_tokens / gen,
        f"synthetic pairs or reference answers ({args.pair_tokens} tokens/call)": args.pair_tokens / gen,
    }
    minutes = {stage: args.items * seconds / 60 for stage, seconds in minutes.items()}
    reused = args.items * instructions / judge / 60
    print(f"\nLeast prompt-reading time for {args.items} items with the shipped files ({args.tokens} tokens per read):")
    for stage, value in minutes.items():
        print(f"- {stage}: {value:.1f} min")
    total = sum(minutes.values())
    print(f"- total: {total:.1f} min before any token is generated; {total - reused:.1f} min when every judge "
          f"call finds its {instructions} instruction tokens already read")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
