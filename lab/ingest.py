"""Ingestion throughput: PDF pages/s, chunking chunks/s, embedding chunks/s against the bare ONNX
session at several corpus sizes, where embedding time goes, and incremental re-ingestion.

Embedding is measured on the same chunk texts through `Embedder.embed` and through the bare
onnxruntime session as a user would call it (the model's tokenizer padding each batch, batches in
input order, mean pooling), with the same session and batch size. The two are interleaved and the
best of `--repeats` is kept, since other processes share the CPU: read the ratio, not the rates.

`--profile` breaks the time down: tokenization vs the session, padding (share of padded word
pieces with and without length sorting), batch size, onnxruntime threads.

The incremental part copies the corpus, builds an index, changes `--changed` of the files and
builds again with the first index as `previous`: only the changed files' chunks are embedded.

Usage:
    python -m lab.ingest                                   # data/sample/zenml_docs + a generated PDF
    python -m lab.ingest --sizes 64 256 1024 --profile
    python -m lab.ingest --corpus /work/shared/data/zenml_docs_0.60.0 --json out/ingest.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragwatch.corpus.chunking import ChunkingSettings, chunk_documents
from ragwatch.corpus.documents import load_documents
from ragwatch.indexing.embeddings import (
    EmbeddingSettings,
    LocalOnnxEmbedder,
    load_local_model,
    mean_pool,
    ort_threads,
)
from ragwatch.indexing.index import Index
from ragwatch.types import Chunk, Document

DEFAULT_CORPUS = Path("data/sample/zenml_docs")
FALLBACK_CORPUS = Path("/work/shared/data/zenml_docs_0.60.0")
TARGET_CHUNKS = 100_000


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def make_pdf(path: Path, documents: list[Document], pages: int) -> Path:
    """A text PDF of `pages` pages filled with corpus text (about 450 words a page)."""
    import pymupdf

    words = " ".join(d.text for d in documents).split()
    pdf = pymupdf.open()
    per_page = 450
    for p in range(pages):
        start = (p * per_page) % max(len(words) - per_page, 1)
        text = " ".join(words[start : start + per_page])
        page = pdf.new_page()
        page.insert_textbox(pymupdf.Rect(50, 50, 545, 800), text, fontsize=8)
    pdf.save(path)
    pdf.close()
    return path


class BareSession:
    """The baseline: the packaged model's session and tokenizer used directly, nothing else."""

    def __init__(self, embedder: LocalOnnxEmbedder, session: Any = None) -> None:
        from tokenizers import Tokenizer

        model = load_local_model(embedder.spec.name)
        self.session = session or model.session
        self.tokenizer = Tokenizer.from_file(str(model.tokenizer_path))
        self.tokenizer.enable_truncation(max_length=embedder.spec.window)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of the batch

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), batch_size):
            enc = self.tokenizer.encode_batch(texts[start : start + batch_size])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            rows.append(mean_pool(self.session.run(None, feeds)[0], mask))
        return np.vstack(rows)


def corpus_texts(chunks: list[Chunk], n: int) -> list[str]:
    """`n` chunk texts: the corpus's, repeated in order when it has fewer."""
    return [chunks[i % len(chunks)].text for i in range(n)]


def compare_with_bare(
    embedder: LocalOnnxEmbedder, bare: BareSession, texts: list[str], repeats: int
) -> dict[str, Any]:
    best_ours = best_bare = float("inf")
    ours = base = None
    for _ in range(max(repeats, 1)):  # interleaved, so both see the same machine load
        ours, s = timed(lambda: embedder.embed(texts))
        best_ours = min(best_ours, s)
        base, s = timed(lambda: bare.embed(texts, embedder.settings.batch_size))
        best_bare = min(best_bare, s)
    assert ours is not None and base is not None
    return {
        "chunks": len(texts),
        "ragwatch_chunks_per_s": round(len(texts) / best_ours, 2),
        "bare_chunks_per_s": round(len(texts) / best_bare, 2),
        "ratio": round(best_bare / best_ours, 3),
        "max_abs_diff": float(np.abs(ours - base).max()),
    }


def profile(embedder: LocalOnnxEmbedder, texts: list[str], many: list[str], repeats: int) -> dict[str, Any]:
    """Where embedding time goes: tokenization, padding (on `many` texts), batch size, threads."""
    import onnxruntime as ort

    model = load_local_model(embedder.spec.name)
    out: dict[str, Any] = {}
    _, tok_s = timed(lambda: model.tokenizer.encode_batch(texts))
    _, total_s = timed(lambda: embedder.embed(texts))
    out["tokenize_share"] = round(tok_s / total_s, 4)
    lengths = np.array([len(e.ids) for e in model.tokenizer.encode_batch(many)])
    batch = embedder.settings.batch_size

    def padded_share(order: np.ndarray) -> float:
        padded = sum(len(b) * lengths[b].max() for b in np.array_split(order, max(1, len(order) // batch)))
        return round(1 - lengths.sum() / padded, 3)

    out["padding_share_input_order"] = padded_share(np.arange(len(texts)))
    out["padding_share_length_sorted"] = padded_share(np.argsort(lengths, kind="stable"))
    for size in (8, 16, 32, 64):
        sized = LocalOnnxEmbedder(EmbeddingSettings(batch_size=size))
        best = min(timed(lambda sized=sized: sized.embed(texts))[1] for _ in range(repeats))
        out[f"batch_{size}_chunks_per_s"] = round(len(texts) / best, 2)
    for threads in (1, 2):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(str(model.model_path), sess_options=options, providers=["CPUExecutionProvider"])
        bare = BareSession(embedder, session)
        best = min(timed(lambda bare=bare: bare.embed(texts, batch))[1] for _ in range(repeats))
        out[f"bare_{threads}_threads_chunks_per_s"] = round(len(texts) / best, 2)
    return out


def incremental(
    corpus: Path, embedder: LocalOnnxEmbedder, settings: ChunkingSettings, changed: float
) -> dict[str, Any]:
    """Full build, then a re-build after `changed` of the files were edited, with the first as previous."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "corpus"
        shutil.copytree(corpus, copy)

        def chunks() -> list[Chunk]:
            docs = load_documents([copy]).documents
            return chunk_documents(docs, settings, embedder.count_tokens, embedder.max_input_tokens)

        first_chunks = chunks()
        first, full_s = timed(lambda: Index.build(first_chunks, embedder))
        files = sorted(p for p in copy.rglob("*") if p.is_file() and p.suffix in {".md", ".txt"})
        n_changed = max(1, round(len(files) * changed))
        for path in files[:: max(1, len(files) // n_changed)][:n_changed]:
            path.write_text(path.read_text(encoding="utf-8") + "\n\nEdited for the benchmark.\n", encoding="utf-8")
        second_chunks = chunks()
        second, inc_s = timed(lambda: Index.build(second_chunks, embedder, previous=first))
        assert second.build_stats is not None
        return {
            "files": len(files),
            "files_changed": n_changed,
            "chunks": len(second_chunks),
            "chunks_embedded": second.build_stats.embedded,
            "chunks_reused": second.build_stats.reused,
            "full_build_s": round(full_s, 2),
            "incremental_build_s": round(inc_s, 2),
            "incremental_vs_full": round(inc_s / full_s, 4),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=None, help=f"default {DEFAULT_CORPUS}, else {FALLBACK_CORPUS}"
    )
    parser.add_argument("--pdf-pages", type=int, default=40, help="pages of the generated PDF")
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128, 512], help="chunks to embed")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats of the embedding (best kept)")
    parser.add_argument("--batch-size", type=int, default=EmbeddingSettings().batch_size)
    parser.add_argument("--max-tokens", type=int, default=200, help="chunk size in embedding tokens")
    parser.add_argument("--profile", action="store_true", help="break embedding time down")
    parser.add_argument("--changed", type=float, default=0.01, help="share of files edited (incremental)")
    parser.add_argument("--no-incremental", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    corpus = args.corpus or (DEFAULT_CORPUS if DEFAULT_CORPUS.is_dir() else FALLBACK_CORPUS)
    if not corpus.exists():
        parser.error(f"corpus {corpus} does not exist: pass --corpus <directory of documents>")
    figures: dict[str, Any] = {"corpus": str(corpus), "ort_threads": ort_threads(), "batch_size": args.batch_size}

    embedder = LocalOnnxEmbedder(EmbeddingSettings(batch_size=args.batch_size))
    _, load_s = timed(lambda: embedder.embed(["warm up the session"]))
    figures["embedder"] = embedder.identity
    figures["model_load_s"] = round(load_s, 2)

    loaded, corpus_s = timed(lambda: load_documents([corpus]))
    figures["corpus_files"] = len(loaded.documents)
    figures["corpus_load_files_per_s"] = round(len(loaded.documents) / corpus_s, 1)
    with tempfile.TemporaryDirectory() as tmp:
        pdf_path = make_pdf(Path(tmp) / "bench.pdf", loaded.documents, args.pdf_pages)
        pdf_result, pdf_s = timed(lambda: load_documents([pdf_path]))
    figures["pdf_pages"] = pdf_result.pages
    figures["pdf_pages_per_s"] = round(pdf_result.pages / pdf_s, 1)

    settings = ChunkingSettings(max_tokens=args.max_tokens)
    documents = loaded.documents + pdf_result.documents
    chunks, chunk_s = timed(
        lambda: chunk_documents(documents, settings, embedder.count_tokens, embedder.max_input_tokens)
    )
    figures["chunks"] = len(chunks)
    figures["chunking_chunks_per_s"] = round(len(chunks) / chunk_s, 1)
    figures["mean_chunk_tokens"] = round(float(np.mean([c.metadata["n_tokens"] for c in chunks])), 1)

    bare = BareSession(embedder)
    rows = [compare_with_bare(embedder, bare, corpus_texts(chunks, n), args.repeats) for n in args.sizes]
    figures["embedding"] = rows
    rate = rows[-1]["ragwatch_chunks_per_s"]
    figures["embed_100k_chunks_min_extrapolated"] = round(TARGET_CHUNKS / rate / 60, 1)
    if args.profile:
        figures["profile"] = profile(
            embedder, corpus_texts(chunks, args.sizes[0]), corpus_texts(chunks, args.sizes[-1]), args.repeats
        )
    if not args.no_incremental:
        figures["incremental"] = incremental(corpus, embedder, settings, args.changed)

    print_figures(figures)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def print_figures(figures: dict[str, Any]) -> None:
    scalars = {k: v for k, v in figures.items() if not isinstance(v, list | dict)}
    width = max(len(k) for k in scalars)
    for key, value in scalars.items():
        print(f"{key:<{width}}  {value}")
    print("\n| chunks | ragwatch chunks/s | bare session chunks/s | ratio | max abs diff |")
    print("|---|---|---|---|---|")
    for row in figures["embedding"]:
        print(f"| {row['chunks']} | {row['ragwatch_chunks_per_s']} | {row['bare_chunks_per_s']} | "
              f"{row['ratio']} | {row['max_abs_diff']:.1e} |")
    for section in ("profile", "incremental"):
        if section in figures:
            print(f"\n{section}:")
            for key, value in figures[section].items():
                print(f"  {key:<34}  {value}")


if __name__ == "__main__":
    raise SystemExit(main())
