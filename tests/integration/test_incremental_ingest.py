"""A re-run of ingestion over a changed corpus embeds only the changed file's chunks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from zenml.client import Client

from ragwatch_zenml.commands.runner import run_pipeline
from tests.integration.conftest import write_config

pytestmark = pytest.mark.integration


def test_second_ingest_reuses_vectors_of_unchanged_files(tmp_path: Path, tiny_corpus: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(tiny_corpus, corpus)
    config = write_config(tmp_path / "cfg", corpus)
    # Uncached, so that this run's index is the newest `rag_index` even when an earlier test of the
    # session ingested the same files (a cache hit would leave another test's index the newest).
    first = Client().get_pipeline_run(run_pipeline("ingest", config, enable_cache=False).run.id)
    first_index = first.steps["build_index"].outputs["rag_index"][0].load()

    edited = corpus / "component-guide" / "orchestrators" / "local.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nOne more sentence about the local orchestrator.\n")
    second = Client().get_pipeline_run(run_pipeline("ingest", config).run.id)
    index = second.steps["build_index"].outputs["rag_index"][0].load()
    meta = second.steps["build_index"].run_metadata["index"]

    new_ids = {c.id for c in index.chunks} - {c.id for c in first_index.chunks}
    assert new_ids and all(index.get_chunk(i).source.endswith("local.md") for i in new_ids)
    assert meta["embedded_chunks"] == len(new_ids)
    assert meta["reused_vectors"] == len(index) - len(new_ids) > 0
    assert meta["previous_index_fingerprint"] == first_index.fingerprint
    assert meta["bm25_variant"] == index.bm25_variant
    artifact = second.steps["build_index"].outputs["rag_index"][0]
    assert artifact.run_metadata["bm25_variant"].startswith("BM25 (Lucene")
