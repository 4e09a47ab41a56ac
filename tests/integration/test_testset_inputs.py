"""The evaluation set a run uses is the one its config names, through `run.py`: `testset` says what it
dropped from a labelled file and why; `evaluate` stops when its job's latest set was made from other
input files, or when only another testset block of its model made one; an edited input file re-runs the
import with caching on. No LLM: imported sets only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from zenml.client import Client

from ragwatch.preflight import preflight
from ragwatch_zenml import cli
from ragwatch_zenml.commands.runner import StaleEvalSetError, require_matching_eval_set
from tests.integration.conftest import LABELLED, write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # ~2 min each: four to six pipeline runs

# The file: the LlamaIndex-style columns, a row without its query, rows without a reference answer.
ROWS = [{"query": r["question"], "reference_answer": r["reference_answer"], "relevant": r["relevant"], "id": r["id"]}
        for r in LABELLED]
ROWS += [
    {"reference_answer": "A row whose query went missing.", "id": "no-query"},
    {"query": "Which stack components exist?", "relevant": ["component-guide/orchestrators/orchestrators.md"],
     "id": "no-reference-1"},
    {"query": "How does a step report failure?", "reference_answer": "",
     "relevant": ["how-to/build-pipelines/use-failure-success-hooks.md"], "id": "no-reference-2"},
]


def _config(directory: Path, corpus: Path, rows: list, **import_overrides) -> Path:
    path = write_config(directory, corpus, synthetic=False)
    labelled = directory / "labelled.jsonl"
    labelled.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    config = yaml.safe_load(path.read_text())
    config["testset"]["imports"] = [{"format": "jsonl", "path": str(labelled), "relevance_kind": "document",
                                     "columns": {"question": "query"}, **import_overrides}]
    path.write_text(yaml.safe_dump(config))
    return path


def _last_run(pipeline: str):
    runs = Client().list_pipeline_runs(sort_by="desc:created", size=20).items
    return next(r for r in runs if r.pipeline is not None and r.pipeline.name == pipeline)


def _eval_set_ids() -> list[str]:
    return [s.id for s in Client().get_artifact_version("eval_set").load().samples]


def test_testset_prints_dropped_rows_and_evaluate_refuses_a_set_of_another_config(
        tmp_path: Path, tiny_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _config(tmp_path / "good", tiny_corpus, [*ROWS, "{not json"])
    assert cli.main(["ingest", "--config", str(good)]) == 0
    capsys.readouterr()
    assert cli.main(["testset", "--config", str(good)]) == 0
    out = capsys.readouterr().out
    assert "evaluation set: 5 items (0 synthetic, 5 imported)" in out, out
    assert "5 of 7 rows imported, 2 dropped: " in out and "no question (column 'query' missing or empty) x1" in out
    assert "line 4: no question (column 'query' missing or empty)" in out
    assert "line 7: " in out  # the line that is not JSON, with its own reason
    assert "2 kept without a reference answer" in out
    assert "2 of 5 items have no reference answer" in out

    # the testset block changes (a limit), testset is not run again: evaluate stops and says what to do
    limited = _config(tmp_path / "limited", tiny_corpus, ROWS, limit=2)
    assert cli.main(["evaluate", "--config", str(limited)]) == 2
    err = capsys.readouterr().err
    assert "its `testset:` block differs" in err and f"python run.py testset --config {limited}" in err, err

    # testset with that config makes a set of its own job (another testset block); the first config's
    # job keeps its set (issue 45: jobs share a store), and its testset steps are all cached
    assert cli.main(["testset", "--config", str(limited)]) == 0
    assert _eval_set_ids() == ["local-default", "failure-hooks"]
    require_matching_eval_set(preflight("evaluate", limited), limited)
    require_matching_eval_set(preflight("evaluate", good), good)
    assert cli.main(["testset", "--config", str(good)]) == 0
    assert _last_run("testset").steps["import_labelled_sets"].status == "cached"
    assert len(_eval_set_ids()) == 5
    require_matching_eval_set(preflight("evaluate", good), good)


def test_an_edited_input_file_reruns_testset_with_caching_on(
        tmp_path: Path, tiny_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, tiny_corpus, ROWS[:3])
    assert cli.main(["ingest", "--config", str(config)]) == 0
    assert cli.main(["testset", "--config", str(config)]) == 0
    assert cli.main(["testset", "--config", str(config)]) == 0
    assert _last_run("testset").steps["import_labelled_sets"].status == "cached"  # nothing changed: cached

    labelled = tmp_path / "labelled.jsonl"  # same path, new content: one more row
    labelled.write_text(labelled.read_text() + json.dumps(ROWS[4]) + "\n")
    capsys.readouterr()
    assert cli.main(["evaluate", "--config", str(config)]) == 2
    assert "the content of the labelled files this config imports changed" in capsys.readouterr().err
    with pytest.raises(StaleEvalSetError, match="latest evaluation set of this job"):  # compared within the job
        require_matching_eval_set(preflight("evaluate", config), config)
    assert cli.main(["testset", "--config", str(config)]) == 0
    assert "evaluation set: 4 items" in capsys.readouterr().out
    assert _last_run("testset").steps["import_labelled_sets"].status == "completed"
    assert "no-reference-1" in _eval_set_ids()
    require_matching_eval_set(preflight("evaluate", config), config)
