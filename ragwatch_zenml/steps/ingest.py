"""Ingestion steps: load the corpus, chunk it, embed it into a versioned index."""

from __future__ import annotations

import logging
import time
from typing import Annotated

from zenml import add_tags, get_step_context, log_metadata, step

from ragwatch.artifacts import ChunkSet, DocumentSet
from ragwatch.config import CorpusSettings, IngestConfig
from ragwatch.corpus.chunking import chunk_documents, chunk_spread
from ragwatch.corpus.documents import LoadResult, load_documents
from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
from ragwatch.indexing.index import BM25Settings, Index
from ragwatch_zenml.readback import index_tag
from ragwatch_zenml.steps.materializers import IndexMaterializer
from ragwatch_zenml.steps.secrets import export_api_keys

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
def build_index(
    chunks: ChunkSet, embedding: EmbeddingSettings, bm25: BM25Settings | None = None
) -> Annotated[Index, "rag_index"]:
    """Embed every chunk; the index carries the embedding model's identity and its BM25 variant.

    Unless `embedding.reuse_vectors` is off, chunks already in the latest `rag_index` artifact of
    the same embedding model keep their vectors, so a re-run embeds only changed files' chunks.
    """
    export_api_keys()  # a hosted embedding model may need a key
    started = time.perf_counter()
    embedder = get_embedder(embedding)
    previous = latest_index(embedder.identity) if embedding.reuse_vectors else None
    index = Index.build(chunks.chunks, embedder, progress=True, bm25=bm25, previous=previous)
    stats = index.build_stats
    assert stats is not None
    logger.info(
        "index: %d chunks embedded, %d vectors reused from the previous index, %s",
        stats.embedded, stats.reused, index.bm25_variant,
    )
    metadata = {
        "chunks": len(index),
        "embedding_model": index.embedding_identity,
        "bm25_variant": index.bm25_variant,
        "index_fingerprint": index.fingerprint,
        "embedded_chunks": stats.embedded,
        "reused_vectors": stats.reused,
        "embed_seconds": round(time.perf_counter() - started, 3),
    }
    if previous is not None:
        metadata["previous_index_fingerprint"] = previous.fingerprint
    log_metadata(metadata={"index": metadata})
    return index


def latest_index(embedding_identity: str, look_back: int = 20) -> Index | None:
    """The newest `rag_index` artifact built with `embedding_identity`, or None.

    A previous index that cannot be read is skipped with a warning: reuse only saves time.
    """
    from zenml.client import Client

    versions = Client().list_artifact_versions(
        name="rag_index", sort_by="desc:created", size=look_back, hydrate=True
    )
    for version in versions.items:
        if version.run_metadata.get("embedding_model") != embedding_identity:
            continue
        try:
            loaded = version.load()
        except Exception as exc:  # a deleted or damaged artifact must not stop ingestion
            logger.warning("previous index %s not reused: %s", version.id, exc)
            continue
        if isinstance(loaded, Index) and loaded.embedding_identity == embedding_identity:
            return loaded
    return None


@step(enable_cache=False)
def claim_index(index: Index, key: str) -> None:
    """Tag the `rag_index` version this run made or reused with its `ragwatch.config.index_key`, so that
    `testset` and `evaluate` of a config over the same corpus find it among the indexes of every job on
    the store. Never cached: a cached build is claimed too. (`index` is read only as the version it is.)"""
    version = get_step_context().inputs["index"][0]
    add_tags(tags=[index_tag(key)], artifact_version_id=version.id)
