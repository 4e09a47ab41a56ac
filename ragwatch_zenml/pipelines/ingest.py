"""documents -> chunks -> index."""

from __future__ import annotations

from zenml import pipeline

from ragwatch.config import IngestConfig, index_key
from ragwatch_zenml.steps.ingest import build_index, chunk_corpus, claim_index, load_corpus


@pipeline(enable_cache=True)
def ingest(config: IngestConfig, corpus_fingerprint: str):
    """The index is tagged with its `index_key`: the index of this corpus for every job on the store."""
    documents, _report = load_corpus(config.corpus, corpus_fingerprint)
    chunks = chunk_corpus(documents, config)
    index = build_index(chunks, config.embedding, config.bm25)
    claim_index(index, index_key(config, corpus_fingerprint))
    return index
