"""Ingestion steps: load the corpus, chunk it, embed it into a versioned index."""

from __future__ import annotations

import logging
import time
from typing import Annotated

from zenml import log_metadata, step

from ragwatch.artifacts import ChunkSet, DocumentSet
from ragwatch.chunking import chunk_documents, chunk_spread
from ragwatch.config import CorpusSettings, IngestConfig
from ragwatch.documents import LoadResult, load_documents
from ragwatch.embeddings import EmbeddingSettings, get_embedder
from ragwatch.index import Index
from steps.materializers import IndexMaterializer
from steps.secrets import export_api_keys

logger = logging.getLogger(__name__)


@step
def load_corpus(
    corpus: CorpusSettings, corpus_fingerprint: str
) -> tuple[Annotated[DocumentSet, "documents"], Annotated[LoadResult, "ingestion_report"]]:
    """Load every document; unreadable files are reported in `ingestion_report` and skipped.

    `corpus_fingerprint` (a hash of the files) is a parameter so that a changed corpus is not
    served from the step cache.
    """
    started = time.perf_counter()
    result = load_documents(corpus.paths, progress=True)
    log_metadata(
        metadata={
            "ingest": {
                "documents": len(result.documents),
                "pages": result.pages,
                "skipped_files": len(result.skipped),
                "corpus_fingerprint": corpus_fingerprint,
                "load_seconds": round(time.perf_counter() - started, 3),
            }
        }
    )
    report = result.model_copy(update={"documents": []})
    return DocumentSet(documents=result.documents), report


@step
def chunk_corpus(documents: DocumentSet, config: IngestConfig) -> Annotated[ChunkSet, "chunks"]:
    """Split documents into chunks sized in the embedding model's tokens."""
    embedder = get_embedder(config.embedding)
    chunks = chunk_documents(
        documents.documents, config.chunking, embedder.count_tokens, max_window=embedder.max_input_tokens
    )
    spread = chunk_spread(chunks, max_share=config.chunking.max_document_share)
    for warning in spread.warnings:
        logger.warning(warning)
    log_metadata(
        metadata={
            "ingest": {
                "chunks": len(chunks),
                "chunking": config.chunking.model_dump(),
                "chunks_per_document_top10": [list(pair) for pair in spread.top],
                "chunk_warnings": spread.warnings,
            }
        }
    )
    return ChunkSet(chunks=chunks, settings=config.chunking.model_dump())


@step(output_materializers=IndexMaterializer)
def build_index(chunks: ChunkSet, embedding: EmbeddingSettings) -> Annotated[Index, "rag_index"]:
    """Embed every chunk; the index carries the embedding model's identity."""
    export_api_keys()  # a hosted embedding model may need a key
    started = time.perf_counter()
    index = Index.build(chunks.chunks, get_embedder(embedding), progress=True)
    log_metadata(
        metadata={
            "index": {
                "chunks": len(index),
                "embedding_model": index.embedding_identity,
                "index_fingerprint": index.fingerprint,
                "embed_seconds": round(time.perf_counter() - started, 3),
            }
        }
    )
    return index
