"""`python run.py monitor` tells judge drift from system drift: a judge that changes silently between two
daily runs (the same model name, a provider that now says yes to everything) reads "judge drift" with the
anchor's figures and no system drift; a worse system with the same judge reads system drift with the
judge unchanged. The judge is a fake behind the fake OpenAI-compatible server (tests/planted_judge.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ragwatch_zenml import cli as run
from tests.fake_llm_server import FakeLLMServer
from tests.planted_judge import PlantedJudge, write_log


def _config(tmp_path: Path, server: FakeLLMServer) -> Path:
    config = {"logs": {"path": str(tmp_path / "answers.jsonl")}, "window": {"length": "1d", "budget": 100},
              "reports_dir": str(tmp_path / "reports"),
              "judges": {"enabled": ["answer_relevance"], "use_logprobs": False,
                         # no LLM cache: a provider's silent change is seen only by calls that reach it
                         "llm": {"model": "openai/judge", "api_base": server.base_url, "cache": False}}}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.integration
def test_a_silent_judge_change_between_daily_runs_reads_judge_drift(tmp_path, capsys):
    from zenml.client import Client

    write_log(tmp_path / "answers.jsonl", {0: 0.7, 1: 0.7, 2: 0.7})  # the system never changes
    judge = PlantedJudge({"*": "good"})
    with FakeLLMServer(responder=judge) as server:
        config = _config(tmp_path, server)
        assert run.main(["monitor", "--config", str(config), "--at", "2026-11-20"]) == 0
        first = capsys.readouterr().out
        assert "judge: answer_relevance judge unchanged: on 40 anchor answers" in first
        judge.modes["*"] = "yes"  # the provider changed the model behind the same name overnight
        calls = judge.calls
        code = run.main(["monitor", "--config", str(config), "--at", "2026-11-21"])
        out = capsys.readouterr().out
    assert code == 0, out
    # yesterday's window came from the step cache: judged (with the anchor) by yesterday's judge
    assert judge.calls - calls == 60 + 40, "only today's answers and today's anchor are judged"
    assert ("judge drift: answer_relevance judge drifted (same model, prompt and settings: a silent change): "
            "on 40 anchor answers kappa") in out
    assert "-> 0.000, balanced accuracy" in out and "level" in out and "-> 1.000 (+" in out
    assert "system drift on corrected levels: none (answer_relevance/pass corrected" in out
    assert "monitor: no drift for the worse" in out
    html = next(p for p in (tmp_path / "reports").glob("*.html") if "judge drift" in p.read_text())
    assert "Judge drift, on the labelled anchor" in html.read_text()
    metadata = Client().list_pipeline_runs(pipeline="monitor", sort_by="desc:created")[0].run_metadata
    row = metadata["judge_drift"]["vs_previous"]["answer_relevance"]
    assert row["judge_drift"] is True and row["n_anchor"] == 40 and row["kappa_new"] == 0.0
    assert row["corrected_metric"] == "answer_relevance/pass"


@pytest.mark.integration
def test_a_worse_system_with_the_same_judge_reads_system_drift(tmp_path, capsys):
    write_log(tmp_path / "answers.jsonl", {0: 0.8, 1: 0.8, 2: 0.3})  # day 3: worse answers
    with FakeLLMServer(responder=PlantedJudge({"*": "good"})) as server:
        code = run.main(["monitor", "--config", str(_config(tmp_path, server))])
        out = capsys.readouterr().out
    assert code == 1, out
    assert "judge: answer_relevance judge unchanged: on 40 anchor answers" in out
    assert "judge drift" not in out
    verdict = next(line for line in out.splitlines() if line.startswith("monitor: "))
    assert verdict.startswith("monitor: DRIFT for the worse") and "answer_relevance" in verdict
