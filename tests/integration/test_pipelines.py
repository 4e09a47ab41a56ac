"""Pipelines on a temporary ZenML store, read back through `zenml.client.Client`."""

from __future__ import annotations

from pathlib import Path

import pytest
from zenml.client import Client
from zenml.enums import ModelStages

from ragwatch.indexing.index import Index
from ragwatch_zenml.commands.runner import run_pipeline
from tests.integration.conftest import write_config

pytestmark = pytest.mark.integration


def test_ingest_pipeline_versions_the_index(tmp_path: Path, tiny_corpus: Path) -> None:
    config = write_config(tmp_path, tiny_corpus)
    outcome = run_pipeline("ingest", config)

    run = Client().get_pipeline_run(outcome.run.id)
    assert run.status == "completed"
    index = run.steps["build_index"].outputs["rag_index"][0].load()
    assert isinstance(index, Index) and len(index) > 3
    assert {s.split("/")[-1] for s in index.documents()} == {
        "orchestrators.md", "local.md", "use-failure-success-hooks.md"
    }
    hits = index.search("failure hook", k=3, mode="bm25")
    assert "use-failure-success-hooks" in hits[0].chunk.source
    report = run.steps["load_corpus"].outputs["ingestion_report"][0].load()
    assert report.skipped == []
    latest = Client().get_artifact_version("rag_index")
    assert latest.run_metadata["chunks"] == len(index)


def test_full_pipeline_with_tiny_model_tracks_everything(tmp_path: Path, tiny_corpus: Path) -> None:
    config = write_config(tmp_path, tiny_corpus)
    outcome = run_pipeline("full", config)
    run = Client().get_pipeline_run(outcome.run.id)
    assert run.status == "completed"

    for group in ("retrieval", "e2e", "judges", "usage", "gate", "eval_set", "system"):
        assert group in run.run_metadata, group
    assert "hybrid/hit_rate@5" in run.run_metadata["retrieval"]
    metrics = outcome.metrics.metrics
    for name in ("correctness", "faithfulness", "similarity", "e2e_failure_rate"):
        result = metrics[name]
        assert result.n_scored + result.n_failed > 0
        for item in result.items:  # scored or failed with a reason, never NaN
            assert (item.score is not None) != (item.error is not None)
    results = run.steps["collect_results"].outputs["eval_results"][0].load()
    assert {"question", "answer", "contexts", "correctness", "correctness__reason"} <= set(results.columns)
    assert "<html" in str(run.steps["build_report_step"].outputs["report"][0].load()).lower()
    assert outcome.report_path is not None and outcome.report_path.is_file()

    version = Client().get_model_version("ragwatch-test-rag", ModelStages.PRODUCTION)
    assert version.run_metadata["evaluation"]["run_id"] == str(run.id)
    assert outcome.gate.promote  # the first evaluation has no baseline

    # A second run of the same configuration is served from the step cache, and still tracked.
    again = run_pipeline("full", config)
    rerun = Client().get_pipeline_run(again.run.id)
    assert rerun.steps["generate_answers"].status == "cached"
    assert "judges" in rerun.run_metadata and "gate" in rerun.run_metadata
    assert again.gate.promote, again.gate.reasons
