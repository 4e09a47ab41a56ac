"""`python run.py monitor` on logs in the three formats: windows evaluated as answered (0 generator
calls), unpaired drift tables, bad rows counted, the report as a visualization and stable metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ragwatch_zenml import cli as run

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
FORMATS = {"jsonl": ("answers.jsonl", "auto"), "csv": ("answers.csv", "auto"),
           "openinference": ("spans.jsonl", "openinference"), "langfuse": ("langfuse.json", "langfuse")}


def _config(tmp_path: Path, name: str, fmt: str, judges: dict | None = None) -> Path:
    config = {"logs": {"path": str(LOGS / name), "format": fmt, "feedback_scale": [1, 5]},
              "window": {"length": "1d", "budget": 50}, "reports_dir": str(tmp_path / "reports"),
              "judges": judges or {"enabled": []}}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.integration
@pytest.mark.parametrize("kind", list(FORMATS))
def test_monitor_reads_each_format_and_calls_no_generator(kind, tmp_path, capsys):
    name, fmt = FORMATS[kind]
    code = run.main(["monitor", "--config", str(_config(tmp_path, name, fmt))])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "generator: 0 calls" in out
    assert "6 kept" in out and "1 missing contexts" in out  # every format has one trace without contexts
    assert "current window 2026-11-21: 3 of 3 answers" in out
    assert "vs previous window (2026-11-21 vs 2026-11-20; unpaired" in out
    assert "version v2 vs v1" not in out  # one version per day in this log
    assert "answer/context_support" in out and "not available for a log without relevance labels" in out
    assert list((tmp_path / "reports").glob("*.html"))


@pytest.mark.integration
def test_monitor_report_metadata_and_judged_feedback(tmp_path, capsys):
    from zenml.client import Client

    verdict = json.dumps({"verdict": "yes"})  # answer relevance: the readers' yes/no question
    judges = {"enabled": ["answer_relevance"],
              "llm": {"model": "openai/judge", "extra": {"mock_response": verdict}, "cache": False}}
    config = _config(tmp_path, "answers.jsonl", "auto", judges)
    estimate_code = run.main(["monitor", "--config", str(config), "--estimate", "--window", "2d"])
    estimate = capsys.readouterr().out
    assert estimate_code == 0 and "generator: 0 calls" in estimate and "judge" in estimate
    code = run.main(["monitor", "--config", str(config), "--window", "1d", "--at", "2026-11-22"])
    out = capsys.readouterr().out
    assert code == 0, out
    # the 5 answered traces of the two days, each judged once (the reference window is the previous one;
    # t6's empty answer is not judged), plus the 40 anchor answers re-judged per window evaluated (the LLM
    # cache is off), and this run's own usage history says the same
    assert "judge: 5 calls" in out and "anchor: 80 calls" in out and "TOTAL" in out and " 85/85 " in out
    assert "thumbs up share" in out and "labels answer_relevance/pass" in out
    run_ = Client().list_pipeline_runs(pipeline="monitor", sort_by="desc:created")[0]
    metadata = run_.run_metadata
    assert {"monitor", "drift_vs_previous", "feedback"} <= set(metadata)
    assert metadata["drift_vs_previous"]["answer/context_support"]["method"] == "unpaired"
    step = run_.steps["compare_windows_step"]
    report = step.outputs["monitor_report"][0]
    assert report.visualizations, "the monitor report has its HTML page as a visualization"
    # the run graph the dashboard draws (what its server sends it), with the report's artifacts
    dag = Client().zen_store.get_pipeline_run_dag(run_.id)
    steps = {node.name for node in dag.nodes if node.type == "step"}
    artifacts = {node.name for node in dag.nodes if node.type == "artifact"}
    assert {"read_log_step", "select_windows_step", "evaluate_current_window", "evaluate_previous_window",
            "evaluate_reference_window", "compare_windows_step"} <= steps
    assert {"drift_report", "monitor_report", "current_window", "log_read"} <= artifacts


@pytest.mark.integration
def test_monitor_bad_config_is_answered_before_zenml(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"logs": {"path": str(LOGS / "answers.jsonl")}, "windw": {}}))
    assert run.main(["monitor", "--config", str(path)]) == 2
    assert "windw: unknown key" in capsys.readouterr().err
    assert run.main(["monitor", "--config", str(_config(tmp_path, "answers.jsonl", "auto")), "--window", "a day"]) == 2


@pytest.mark.integration
def test_a_local_schedule_runs_monitor(tmp_path):
    from zenml.client import Client

    from ragwatch_zenml.commands import scheduling

    store = scheduling.ScheduleStore(tmp_path / "schedules.json")
    schedule = store.add("*/3 * * * * *", "monitor", str(_config(tmp_path, "answers.jsonl", "auto")))
    before = len(Client().list_pipeline_runs(pipeline="monitor", size=1000).items)
    assert scheduling.serve(store, max_runs=1, timeout_s=240) == 1  # the child runs `run.py monitor` for real
    log = sorted((scheduling.state_dir() / "schedule_logs").glob(f"{schedule.id}-*.log"))[-1].read_text()
    assert "generator: 0 calls" in log and "vs previous window" in log, log[-2000:]
    assert len(Client().list_pipeline_runs(pipeline="monitor", size=1000).items) == before + 1
