"""documents -> chunks -> index."""

from __future__ import annotations

from zenml import pipeline

from ragwatch.config import IngestConfig
from steps.ingest import build_index, chunk_corpus, load_corpus


@pipeline(enable_cache=True)
def ingest(config: IngestConfig, corpus_fingerprint: str):
    documents, _report = load_corpus(config.corpus, corpus_fingerprint)
    chunks = chunk_corpus(documents, config)
    return build_index(chunks, config.embedding, config.bm25)
