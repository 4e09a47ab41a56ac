"""Issue 45 through `run.py`, with a real HTTP system on 127.0.0.1: a list of questions without reference
answers is answered and judged for faithfulness; an outage that only the keyword tests see could not
evaluate (exit 3); two daily jobs (an HTTP system's and a log's) alternate on one store without a stop."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from zenml.client import Client

import tests.planted_faithfulness as planted
from ragwatch.judges.faithfulness import calibrations
from ragwatch_zenml import cli
from tests.fake_llm_server import FakeLLMServer
from tests.integration.conftest import LABELLED, write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # each test: three to seven pipeline runs

JUDGE = "openai/fake-judge"
LOG = Path(__file__).resolve().parents[1] / "data" / "logs" / "answers.jsonl"
GOOD = {"answer": "The local orchestrator is the default orchestrator of ZenML; it runs pipelines locally.",
        "contexts": [{"text": "The local orchestrator is the default orchestrator of ZenML."}]}


class System:
    """A RAG endpoint of the user's own: POST {"question"} -> `reply(question)`; counts the requests."""

    def __init__(self, reply: Callable[[str], dict[str, Any]]) -> None:
        self.reply, self.requests, self._lock = reply, 0, threading.Lock()
        system = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["question"]
                with system._lock:
                    system.requests += 1
                data = json.dumps(system.reply(question)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/ask"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def system() -> Iterator[Callable[[Callable[[str], dict[str, Any]]], System]]:
    started: list[System] = []

    def start(reply: Callable[[str], dict[str, Any]]) -> System:
        started.append(System(reply))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _http(url: str) -> dict[str, Any]:
    return {"kind": "http", "http": {"url": url, "timeout_s": 5, "max_retries": 1, "backoff_s": 0.01}}


def _edit(path: Path, **top: Any) -> Path:
    """Top-level keys of a config (write_config sets `evaluate` only)."""
    config = yaml.safe_load(path.read_text())
    config.update(top)
    path.write_text(yaml.safe_dump(config))
    return path


def _last_run(pipeline: str):
    runs = Client().list_pipeline_runs(sort_by="desc:created", size=20, hydrate=True).items
    return next(r for r in runs if r.pipeline is not None and r.pipeline.name == pipeline)


def _metrics(run) -> dict[str, Any]:
    return run.steps["track_evaluation"].outputs["all_metrics"][0].load().metrics


def test_questions_without_reference_answers_are_answered_and_judged(
    tmp_path: Path, tiny_corpus: Path, system, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("FAKE_JUDGE_KEY", "sk-fake")
    # the fake judge stands in for the local judge: the shipped calibration, under its name
    shipped = next(c for c in calibrations.CALIBRATIONS if c.level_data)
    monkeypatch.setattr(calibrations, "CALIBRATIONS", (*calibrations.CALIBRATIONS, shipped.model_copy(
        update={"model": JUDGE})))
    live = system(planted.answer_of)
    with FakeLLMServer(responder=planted.judge_reply, lifetime_s=900) as judge_server:
        judge = {"model": JUDGE, "api_base": judge_server.base_url, "api_key_env": "FAKE_JUDGE_KEY",
                 "max_tokens": 200, "cache": False}
        config = write_config(
            tmp_path, tiny_corpus, synthetic=False,
            system={"model_name": "ragwatch-unreferenced", "rag": _http(live.url)},
            judges={"llm": judge, "enabled": ["faithfulness", "correctness", "similarity"], "use_logprobs": True,
                    "faithfulness": {"statements": "sentences", "max_statements": 4}},
            e2e={"enabled": False}, gate={"gated_metrics": ["faithfulness"]})
        _edit(config, reports_dir=str(tmp_path / "reports"))
        # a team's list of real user questions: no reference answer, no passage, no labels
        rows = [{"id": r["id"], "question": r["question"]} for r in planted.questions()[:6]]
        (tmp_path / "labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        code = cli.main(["full", "--config", str(config)])
        assert judge_server.calls > 0
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "6 of 6 items have no reference answer: the system answers them" in out
    assert live.requests == 6 and "system under test: 6 requests for 6 questions, 6 answered" in out
    metrics = _metrics(_last_run("full"))
    faithfulness = metrics["faithfulness"]
    assert (faithfulness.n_scored, faithfulness.n_failed) == (6, 0) and faithfulness.score is not None
    for name in ("correctness", "similarity", "answer/reference_coverage"):
        result = metrics[name]  # said per item, not a failure of the judge nor a dropped row
        assert (result.n_scored, result.n_failed, result.n_skipped, len(result.items)) == (0, 0, 6, 6), name
        assert all(it.skipped and "no reference answer" in it.error for it in result.items), name
    assert metrics["answer/context_support"].n_scored == 6 and metrics["system/availability"].score == 1.0


def test_an_outage_only_the_keyword_tests_see_could_not_evaluate(
    tmp_path: Path, tiny_corpus: Path, system, capsys
) -> None:
    down = system(lambda question: GOOD)
    down.stop()  # the port is closed: connection refused
    config = write_config(tmp_path, tiny_corpus, synthetic=False,
                          system={"model_name": "ragwatch-keyword-outage", "rag": _http(down.url)},
                          judges={"enabled": ["similarity"]}, without_reference="retrieval_only")
    _edit(config, reports_dir=str(tmp_path / "reports"))
    # questions -> documents only; the retrieval-only mode, by name, asks the system none of them
    rows = [{k: v for k, v in r.items() if k != "reference_answer"} for r in LABELLED]
    (tmp_path / "labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["full", "--config", str(config)]) == 3
    out = capsys.readouterr().out
    cause = (f"could not evaluate: the system under test at {down.url} was unreachable (2 of 2 questions: "
             "Connection refused); start it or fix evaluate.system.rag.http.url, then run again")
    assert out.rstrip().endswith(cause), out[-800:]
    assert "no scored item" not in out and "NOT PROMOTED (regression)" not in out
    run = _last_run("full")
    calls = run.run_metadata["system_calls"]
    assert (calls["questions"], calls["keyword_tests"], calls["failures"]) == (2, 2, {"unreachable": 2})
    assert run.run_metadata["gate"]["status"] == "not_evaluated"
    assert "hybrid/hit_rate@1" in _metrics(run)  # retrieval was still measured on the three questions


def test_two_daily_jobs_alternate_on_one_store(tmp_path: Path, tiny_corpus: Path, system, capsys) -> None:
    live = system(lambda question: GOOD)
    http = write_config(tmp_path / "http", tiny_corpus, synthetic=False,
                        system={"model_name": "ragwatch-daily-http", "rag": _http(live.url)},
                        judges={"enabled": ["similarity"]}, e2e={"enabled": False},
                        gate={"gated_metrics": ["system/availability", "similarity"]})
    _edit(http, reports_dir=str(tmp_path / "reports"))
    logs = tmp_path / "logs.yaml"
    logs.write_text(yaml.safe_dump({
        "logs": {"path": str(LOG)}, "reports_dir": str(tmp_path / "reports"),
        "evaluate": {"system": {"model_name": "ragwatch-daily-logs", "rag": {"kind": "logged"}},
                     "judges": {"enabled": []}, "promote": False}}))

    assert cli.main(["ingest", "--config", str(http)]) == 0
    for day in (1, 2):  # each job makes its set then evaluates, every day, on the one store
        for name, config in (("http", http), ("logs", logs)):
            assert cli.main(["testset", "--config", str(config)]) == 0, (day, name)
            code = cli.main(["evaluate", "--config", str(config)])
            assert code == 0, (day, name, capsys.readouterr())
    # the HTTP job again, right after the logs job's testset: its own set, no stop
    assert cli.main(["testset", "--config", str(logs)]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", "--config", str(http)]) == 0, capsys.readouterr()
    assert live.requests == 3 * 3  # three evaluates of the HTTP job, three questions each
    used = _last_run("evaluate").run_metadata["input_eval_set"]
    assert used["job"].startswith("ragwatch-daily-http@")
    assert [s.id for s in Client().get_artifact_version(used["id"]).load().samples] == [r["id"] for r in LABELLED]
    # each set is tagged with its job; the newest store-wide is the logs job's
    newest = Client().get_artifact_version("eval_set")
    assert newest.run_metadata["evalset_job"].startswith("ragwatch-daily-logs@")
    assert any(t.name.startswith("evalset-job:ragwatch-daily-logs@") for t in newest.tags)
