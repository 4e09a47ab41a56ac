"""`testset` / `evaluate` with a `logs:` block: the log is the evaluation set; the logged system is
evaluated with 0 generator calls and the same figures as the same answers from a Python callable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from ragwatch_zenml import cli as run

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


ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "logs"
SAMPLE_FORMATS = {"jsonl": ("answers.jsonl.gz", "auto"), "csv": ("answers.csv.gz", "auto"),
                  "openinference": ("spans.jsonl.gz", "openinference"), "langfuse": ("langfuse.json.gz", "langfuse")}
SAMPLE_REPLAY = f'''
import gzip
import json

with gzip.open({str(SAMPLE / "answers.jsonl.gz")!r}, "rt", encoding="utf-8") as log:
    ROWS = {{row["question"]: row for row in map(json.loads, log)}}

def answer(question):
    row = ROWS[question]
    return {{"answer": row["answer"], "contexts": row["contexts"]}}
'''


def _sample_config(tmp_path: Path, kind: str, rag: dict) -> Path:
    """configs/logs.yaml (the README's command) on one file of the committed sample log, with a judge
    that answers from litellm's mock (no model)."""
    config = yaml.safe_load((ROOT / "configs" / "logs.yaml").read_text())
    name, fmt = SAMPLE_FORMATS[kind]
    config["logs"].update(path=str(SAMPLE / name), format=fmt)
    config["reports_dir"] = str(tmp_path / "reports")
    config["evaluate"]["system"]["rag"] = rag
    verdict = '{"verdict": "yes"}'  # answer relevance: the readers' yes/no question
    config["evaluate"]["judges"] = {"enabled": ["answer_relevance"],
                                    "llm": {"model": "openai/judge", "extra": {"mock_response": verdict},
                                            "cache": False}}
    path = tmp_path / f"{kind}-{rag['kind']}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _figures() -> dict[str, tuple]:
    return {name: (m.score, m.ci_low, m.ci_high, m.n_scored, m.n_failed) for name, m in _metrics().items()}


@pytest.mark.integration
@pytest.mark.slow
def test_the_committed_sample_log_evaluates_in_every_format_like_a_callable(tmp_path, capsys, monkeypatch):
    """The README's `testset` + `evaluate --config configs/logs.yaml` on each of the sample log's four
    files (540 answers over 6 days): 0 generator calls, and every figure equal to the same answers
    returned by a Python callable."""
    from zenml.client import Client

    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "replay_sample.py").write_text(SAMPLE_REPLAY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "replay_sample", raising=False)
    callable_config = _sample_config(tmp_path, "jsonl", {"kind": "callable", "callable": "replay_sample:answer"})
    assert run.main(["testset", "--config", str(callable_config)]) == 0
    assert run.main(["evaluate", "--config", str(callable_config)]) == 0
    by_callable = _figures()
    assert "system under test: 540 calls" in capsys.readouterr().out
    assert {"answer/context_support", "answer/reference_coverage", "system/hit_rate", "system/mrr",
            "answer_relevance"} <= set(by_callable)
    for kind in SAMPLE_FORMATS:
        config = _sample_config(tmp_path, kind, {"kind": "logged"})
        assert run.main(["testset", "--config", str(config)]) == 0, kind
        assert run.main(["evaluate", "--config", str(config)]) == 0, kind
        out = capsys.readouterr().out
        assert "system under test: 0 calls for 540 questions, 540 answered" in out, kind
        run_ = Client().list_pipeline_runs(pipeline="evaluate", sort_by="desc:created")[0]
        assert run_.steps["answer_without_index"].run_metadata["usage"]["generator"]["calls"] == 0, kind
        assert _figures() == by_callable, kind
