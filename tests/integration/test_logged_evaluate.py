"""`testset` / `evaluate` with a `logs:` block: the log is the evaluation set; the logged system is
evaluated with 0 generator calls and the same figures as the same answers from a Python callable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

import run

LOG = Path(__file__).resolve().parents[1] / "data" / "logs" / "answers.jsonl"
REPLAY = f'''
import json
ROWS = {{}}
for line in open({str(LOG)!r}):
    try:
        row = json.loads(line)
    except ValueError:
        continue
    ROWS.setdefault(row["question"], row)

def answer(question):
    row = ROWS[question]
    return {{"answer": row["answer"], "contexts": row["contexts"]}}
'''


def _config(tmp_path: Path, rag: dict) -> Path:
    config = {"logs": {"path": str(LOG)}, "reports_dir": str(tmp_path / "reports"),
              "evaluate": {"system": {"model_name": "ragwatch-logged-test", "rag": rag},
                           "judges": {"enabled": []}, "promote": False}}
    path = tmp_path / f"{rag['kind']}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _metrics():
    from zenml.client import Client

    run_ = Client().list_pipeline_runs(pipeline="evaluate", sort_by="desc:created")[0]
    return run_.steps["track_evaluation"].outputs["all_metrics"][0].load().metrics


@pytest.mark.integration
def test_logged_answers_evaluate_like_a_callable(tmp_path, capsys, monkeypatch):
    (tmp_path / "replay_log.py").write_text(REPLAY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "replay_log", raising=False)
    logged = _config(tmp_path, {"kind": "logged"})
    assert run.main(["testset", "--config", str(logged)]) == 0  # the log is the set: no index needed
    assert run.main(["evaluate", "--config", str(logged)]) == 0
    out = capsys.readouterr().out
    assert "answer/context_support" in out
    from zenml.client import Client

    run_ = Client().list_pipeline_runs(pipeline="evaluate", sort_by="desc:created")[0]
    assert run_.steps["answer_without_index"].run_metadata["usage"]["generator"]["calls"] == 0
    assert "load_index" not in run_.steps  # the log's system had its own retriever
    by_log = _metrics()
    assert run.main(["evaluate", "--config", str(_config(tmp_path, {"kind": "callable",
                                                                    "callable": "replay_log:answer"}))]) == 0
    by_callable = _metrics()
    support = "answer/context_support"
    assert by_log[support].n_scored == 5 and by_log[support].n_failed == 1  # t6's empty answer fails
    for name in (support,):
        a, b = by_log[name], by_callable[name]
        assert (a.score, a.ci_low, a.ci_high, a.n_scored) == (b.score, b.ci_low, b.ci_high, b.n_scored)


@pytest.mark.integration
def test_logged_kind_without_a_log_is_a_config_error(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"evaluate": {"system": {"rag": {"kind": "logged"}}}}))
    assert run.main(["evaluate", "--config", str(path)]) == 2
    assert "needs a logs: block" in capsys.readouterr().err
