"""Ingestion throughput: PDF pages/s, chunking chunks/s, embedding chunks/s, search queries/s.

Embedding is measured twice on the same chunks in the same run: through `Embedder.embed` and through
the bare onnxruntime session (tokenize, run, mean-pool, in input order, same batch size), so the
ratio shows what the wrapper costs or gains independently of how loaded the machine is. The two
are interleaved and the best of `--repeats` is kept, since other processes share the CPU.

Usage:
    python benchmarks/ingest.py                                   # data/sample/zenml_docs + a generated PDF
    python benchmarks/ingest.py --corpus /work/shared/data/zenml_docs_0.60.0 --embed-limit 512
    python benchmarks/ingest.py --json out/ingest.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragwatch.chunking import ChunkingSettings, chunk_documents
from ragwatch.documents import load_documents
from ragwatch.embeddings import (
    EmbeddingSettings,
    LocalOnnxEmbedder,
    get_embedder,
    load_local_model,
    normalize_rows,
    ort_threads,
)
from ragwatch.index import Index
from ragwatch.types import Document

DEFAULT_CORPUS = Path("data/sample/zenml_docs")
FALLBACK_CORPUS = Path("/work/shared/data/zenml_docs_0.60.0")


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


def raw_session_embed(embedder: LocalOnnxEmbedder, texts: list[str], batch_size: int) -> np.ndarray:
    """The bare baseline: the same tokenizer and session, batches in input order, no sorting."""
    model = load_local_model(embedder.spec.name)
    rows = []
    for start in range(0, len(texts), batch_size):
        enc = model.tokenizer.encode_batch(texts[start : start + batch_size])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        hidden = model.session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        rows.append((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))
    return normalize_rows(np.vstack(rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, default=None, help=f"default {DEFAULT_CORPUS}, else {FALLBACK_CORPUS}"
    )
    parser.add_argument("--pdf-pages", type=int, default=40, help="pages of the generated PDF")
    parser.add_argument("--embed-limit", type=int, default=256, help="chunks to embed (0 = all)")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats of the embedding (best kept)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=200, help="chunk size in embedding tokens")
    parser.add_argument("--queries", type=int, default=100, help="queries for the search timing")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    corpus = args.corpus or (DEFAULT_CORPUS if DEFAULT_CORPUS.is_dir() else FALLBACK_CORPUS)
    if not corpus.exists():
        parser.error(f"corpus {corpus} does not exist: pass --corpus <directory of documents>")
    figures: dict[str, Any] = {
        "corpus": str(corpus),
        "ort_threads": ort_threads(),
        "batch_size": args.batch_size,
    }

    embedder = get_embedder(EmbeddingSettings(batch_size=args.batch_size))
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

    sample = chunks[: args.embed_limit] if args.embed_limit else chunks
    texts = [c.text for c in sample]
    figures["embedded_chunks"] = len(texts)
    best_wrapped = best_raw = float("inf")
    wrapped = raw = None
    for _ in range(max(args.repeats, 1)):  # interleaved, so both see the same machine load
        wrapped, s = timed(lambda: embedder.embed(texts))
        best_wrapped = min(best_wrapped, s)
        if isinstance(embedder, LocalOnnxEmbedder):
            raw, s = timed(lambda: raw_session_embed(embedder, texts, args.batch_size))
            best_raw = min(best_raw, s)
    figures["embed_chunks_per_s"] = round(len(texts) / best_wrapped, 2)
    if raw is not None and wrapped is not None:
        figures["raw_session_chunks_per_s"] = round(len(texts) / best_raw, 2)
        figures["embed_vs_raw_ratio"] = round(best_raw / best_wrapped, 3)
        figures["embed_vs_raw_max_abs_diff"] = float(np.abs(wrapped - raw).max())

    assert wrapped is not None
    index = Index(sample, wrapped, embedder.identity)
    queries = [c.text.split(".")[0][:200] for c in sample[: args.queries]]
    for mode in ("bm25", "vector", "hybrid"):
        _, s = timed(lambda mode=mode: index.search_many(queries, k=10, mode=mode, embedder=embedder))
        figures[f"search_{mode}_queries_per_s"] = round(len(queries) / s, 1)

    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
