"""Every pipeline's run graph draws (`get_pipeline_run_dag`, what the dashboard calls), and the daily
`evaluate` run, on the latest index and evaluation set, is still served from the step cache.

Retrieval only: no LLM at all, a few seconds per pipeline.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from zenml.client import Client

from ragwatch_zenml.commands.runner import format_outcome, run_pipeline
from tests.integration.conftest import write_config

pytestmark = pytest.mark.integration


def retrieval_only_config(directory: Path, corpus: Path, model_name: str) -> Path:
    path = write_config(directory, corpus, synthetic=False)
    config = yaml.safe_load(path.read_text())
    config["retrieval_only"] = True
    config["evaluate"]["system"]["model_name"] = model_name
    config["evaluate"]["retrieval"] = {"modes": ["bm25", "vector"], "ks": [1, 3]}
    config["evaluate"]["gate"]["gated_metrics"] = ["bm25/hit_rate@1", "vector/mrr"]
    path.write_text(yaml.safe_dump(config))
    return path


def dag_of(run_id) -> tuple[set[str], set[str]]:
    """(step names, artifact names) of the run graph the server would send the dashboard."""
    dag = Client().zen_store.get_pipeline_run_dag(run_id)
    steps = {node.name for node in dag.nodes if node.type == "step"}
    artifacts = {node.name for node in dag.nodes if node.type == "artifact"}
    return steps, artifacts


def test_every_pipeline_draws_and_the_daily_run_is_cached(tmp_path: Path, tiny_corpus: Path) -> None:
    config = retrieval_only_config(tmp_path, tiny_corpus, "ragwatch-dag-test")
    # as a user does: `make run` (full), then the daily `evaluate`; ingest and testset on their own too
    runs = {name: run_pipeline(name, config) for name in ("full", "ingest", "testset", "evaluate")}
    for name, outcome in runs.items():
        steps, artifacts = dag_of(outcome.run.id)  # raised KeyError: 'index' for evaluate after full
        assert steps, name
        if name in ("evaluate", "full"):
            assert {"track_evaluation", "build_report_step"} <= steps, (name, steps)
            assert {"report", "comparisons", "summary"} <= artifacts, (name, artifacts)
    # full made the index and the evaluation set: the daily run on them is served from the cache
    first = Client().get_pipeline_run(runs["evaluate"].run.id)
    assert first.steps["evaluate_retrieval_step"].status == "cached"
    steps, artifacts = dag_of(runs["evaluate"].run.id)
    assert {"latest_index_version", "load_index", "latest_eval_set_version", "load_eval_set"} <= steps
    assert "rag_index" in artifacts  # the index version the run used, drawn as the loader's input

    # the daily run again: nothing changed, so the loaders and every evaluation step come from the cache
    again = run_pipeline("evaluate", config)
    rerun = Client().get_pipeline_run(again.run.id)
    assert rerun.steps["load_index"].status == "cached"
    assert rerun.steps["evaluate_retrieval_step"].status == "cached"
    assert rerun.steps["track_evaluation"].status == "completed"  # never cached: it compares and tracks
    dag_of(again.run.id)  # a run of cached steps draws too
    used = rerun.run_metadata["input_rag_index"]
    latest = Client().get_artifact_version("rag_index")
    assert used["id"] == str(latest.id) and used["version"] == str(latest.version)

    # the comparison, one click away: the `comparisons` node renders its page, verdict first
    track = rerun.steps["track_evaluation"]
    comparisons = track.outputs["comparisons"][0]
    (visualization,) = comparisons.visualizations
    page = Path(visualization.uri).read_text(encoding="utf-8")
    assert page.index('id="verdict"') < page.index("<h2>vs previous run") < page.index("<h2>vs production")
    assert "Gate: PROMOTED" in page
    # the gated metrics under stable keys, with intervals and the differences, in every run's metadata
    for run in (first, rerun):
        gated = Client().get_pipeline_run(run.id).run_metadata["gated_metrics"]
        assert set(gated) == {"bm25/hit_rate@1", "vector/mrr"}
        assert {"score", "ci_low", "ci_high", "n_scored"} <= set(gated["vector/mrr"])
    assert rerun.run_metadata["gated_metrics"]["vector/mrr"]["vs_previous"]["diff"] == 0
    assert "Gate: PROMOTED" in rerun.run_metadata["verdict"]
    # the printout ends by saying which run and which artifacts to open
    last = format_outcome(again).splitlines()[-5:]
    assert last[0].endswith(f"Projects > default > Pipelines > {again.pipeline} > {again.run.name}")
    assert f"/projects/default/runs/{again.run.id}" in last[1]
    assert "'report'" in last[2] and "'comparisons'" in last[3] and "'gated_metrics'" in last[4]

    # retrieval only answers nothing: no empty system/answer rows, one line saying why, none compared
    metrics = again.metrics
    assert not any(name.startswith(("system/", "answer/")) for name in metrics.metrics)
    assert metrics.unavailable["answer/context_support"].startswith("not measured in this run: nothing was answered")
    rows = track.outputs["comparisons"][0].load().previous.rows
    assert rows and not any(row.metric.startswith(("system/", "answer/")) for row in rows)
    printout = format_outcome(again)
    # the headline may name system/hit_rate as "not available"; no system/answer row carries a figure
    assert "nothing was answered" in printout, printout
    assert not re.search(r"^(system|answer)/\S+ .*\d\.\d{3}", printout, re.M), printout
