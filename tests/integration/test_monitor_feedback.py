"""`python run.py monitor` on a small log with thumbs and a (mocked) judge: per window the thumbs-up share
with its interval and n, its change against the previous and the first window, and the
prediction-powered level of answer_relevance/pass, in the printout, the HTML report and the metadata."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from ragwatch_zenml import cli as run

UPS = {0: [1, 1, 1, 0, 1, 1, 1, 1], 1: [1, 1, 0, 1, 1, 1, 1], 2: [0, 0, 1, 0, 0, 1, 0, 0, 0]}  # per day


def _log(path: Path) -> None:
    first = datetime(2026, 11, 18, tzinfo=UTC)
    rows = []
    for day, ups in UPS.items():
        for i in range(20):
            when = first + timedelta(days=day, minutes=30 * i)
            rows.append({"trace_id": f"d{day}-{i}", "timestamp": when.isoformat(),
                         "question": f"How do I register stack number {i}?", "answer": "Run zenml stack register.",
                         "contexts": [{"text": "Register a stack with zenml stack register NAME.", "id": "c1"}],
                         "feedback": (["down", "up"][ups[i]] if i < len(ups) else None)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.integration
def test_monitor_prints_feedback_per_window_with_changes_and_the_level(tmp_path, capsys):
    from zenml.client import Client

    _log(tmp_path / "answers.jsonl")
    verdict = json.dumps({"verdict": "yes"})  # answer relevance: the readers' yes/no question
    config = {"logs": {"path": str(tmp_path / "answers.jsonl")}, "window": {"length": "1d", "budget": 50},
              "reports_dir": str(tmp_path / "reports"),
              "judges": {"enabled": ["answer_relevance"],
                         "llm": {"model": "openai/judge", "extra": {"mock_response": verdict}, "cache": False}}}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(config))
    code = run.main(["monitor", "--config", str(path)])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    assert "thumbs up share (labels answer_relevance/pass):" in out
    assert "current   2026-11-20: 0.222 [" in out and "n=9 of 20 answers" in out
    assert "previous  2026-11-19: 0.857 [" in out and "reference 2026-11-18: 0.875 [" in out
    assert "change vs previous window (2026-11-19): -0.635 [" in out
    assert "change vs reference window (2026-11-18): -0.653 [" in out
    # the judge says 4 (pass) everywhere: a constant judge carries nothing, the level is the labels' own
    assert "answer_relevance/pass from judge + thumbs up share: 0.222 [" in out
    assert "n labels=9, n judged=20, lambda=0.00" in out and "raw judge mean 1.000" in out
    assert "what feedback measures" in out
    html = next((tmp_path / "reports").glob("*.html")).read_text()
    assert "prediction-powered level per window" in html
    metadata = Client().list_pipeline_runs(pipeline="monitor", sort_by="desc:created")[0].run_metadata
    feedback = metadata["feedback"]
    assert feedback["levels"]["answer_relevance/pass"]["n_labels"] == 9
    assert feedback["shares"]["thumbs up share"]["change_vs_previous"]["method"] == "unpaired"
    assert set(feedback["windows"]) == {"2026-11-20", "2026-11-19", "2026-11-18"}
