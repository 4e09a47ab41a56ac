"""The daily loop against a live system, through `run.py`: a real HTTP server on 127.0.0.1 whose
behaviour the test changes between runs. The system is asked on every evaluate; an outage or a spent
budget is "could not evaluate" (exit 3), never a regression nor anybody's baseline; two systems each
keep their own history."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from zenml.client import Client

from ragwatch_zenml import cli
from ragwatch_zenml.readback import run_metrics
from tests.fake_llm_server import FakeLLMServer
from tests.integration.conftest import write_config
from tests.integration.test_budget_pipeline import MAX_TOKENS, long_reasoning

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GOOD = "The local orchestrator is the default orchestrator of ZenML; it runs pipelines locally."
WRONG = "Flyte schedules every pipeline on a Kubernetes cluster."
CONTEXT = "The local orchestrator is the default orchestrator of ZenML."


class LiveRag:
    """A RAG endpoint of the user's own: POST {"question"} -> {"answer", "contexts"}.

    `answer` is what it says; `fail_first` answers 503 to the first attempt of each question (so every
    question is retried once); `requests` counts every request received. `stop()` closes the port
    (connection refused), `start()` opens it again on the same port.
    """

    def __init__(self) -> None:
        self.answer, self.fail_first, self.requests = GOOD, False, 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ask"

    def start(self) -> None:
        live = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["question"]
                with live._lock:
                    live.requests += 1
                    first = question not in live._seen
                    live._seen.add(question)
                if live.fail_first and first:
                    status, body = 503, {"error": "warming up"}
                else:
                    status, body = 200, {"answer": live.answer, "contexts": [{"text": CONTEXT}]}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def behave(self, answer: str, fail_first: bool = False) -> None:
        self.answer, self.fail_first, self._seen = answer, fail_first, set()


@pytest.fixture
def live_rag() -> Iterator[LiveRag]:
    server = LiveRag()
    yield server
    server.stop()


def _config(directory: Path, corpus: Path, model_name: str, rag: dict, **overrides) -> Path:
    # similarity needs no LLM call; availability and similarity gate
    settings = {"judges": {"enabled": ["similarity"]}, "e2e": {"enabled": False},
                "gate": {"gated_metrics": ["system/availability", "similarity"]}, **overrides}
    return write_config(directory, corpus, synthetic=False, system={"model_name": model_name, "rag": rag},
                        **settings)


def _http(url: str) -> dict:
    return {"kind": "http", "http": {"url": url, "timeout_s": 5, "max_retries": 2, "backoff_s": 0.01}}


def _last_run():
    return Client().list_pipeline_runs(sort_by="desc:created", size=1, hydrate=True).items[0]


def _comparisons(run):
    return run.steps["track_evaluation"].outputs["comparisons"][0].load()


def test_a_live_system_is_asked_every_run_and_an_outage_is_not_a_regression(
    tmp_path: Path, tiny_corpus: Path, live_rag: LiveRag, capsys
) -> None:
    config = _config(tmp_path, tiny_corpus, "ragwatch-live-rag", _http(live_rag.url))
    assert cli.main(["full", "--config", str(config)]) == 0
    first = _last_run()
    assert live_rag.requests == 3  # the three labelled questions
    out = capsys.readouterr().out
    assert "system under test: 3 requests for 3 questions, 3 answered" in out

    # the same URL and config, a different system behind it: asked again, and the change is reported
    live_rag.behave(WRONG, fail_first=True)
    code = cli.main(["evaluate", "--config", str(config)])
    out = capsys.readouterr().out
    assert live_rag.requests == 3 + 6  # each question failed once (503) and was retried
    assert "system under test: 6 requests for 3 questions, 3 errors (3 retries), 3 answered" in out
    second = _last_run()
    similarity = _comparisons(second).previous.row("similarity")
    assert similarity.new_score < similarity.old_score - 0.2, similarity
    assert code == 1 and "NOT PROMOTED" in out  # worse than production: not promoted

    # the system is down: could not evaluate (exit 3), said on the terminal, nobody's baseline
    live_rag.stop()
    assert cli.main(["evaluate", "--config", str(config)]) == 3
    out = capsys.readouterr().out
    cause = (f"could not evaluate: the system under test at {live_rag.url} was unreachable "
             "(3 of 3 questions: Connection refused); start it or fix evaluate.system.rag.http.url, then run again")
    assert out.rstrip().endswith(cause), out[-600:]
    assert "NOT PROMOTED (regression)" not in out
    down = _last_run()
    assert down.run_metadata["gate"]["status"] == "not_evaluated"
    assert down.run_metadata["system_calls"]["failures"] == {"unreachable": 3}

    # up again: compared with the last run that evaluated (not the outage), production untouched
    live_rag.start()
    live_rag.behave(GOOD)
    assert cli.main(["evaluate", "--config", str(config)]) == 0
    comparisons = _comparisons(_last_run())
    assert comparisons.previous_run.startswith(second.name + " ")
    assert comparisons.production_run.startswith(first.name + " ")
    assert comparisons.production.row("system/availability").verdict == "unchanged"


def test_a_run_stopped_by_its_budget_could_not_evaluate(
    tmp_path: Path, tiny_corpus: Path, live_rag: LiveRag, capsys
) -> None:
    with FakeLLMServer(responder=long_reasoning, lifetime_s=600) as server:
        judge = {"model": "openai/gpt-4o-mini", "api_base": server.base_url, "max_tokens": MAX_TOKENS,
                 "concurrency": 1, "budget_usd": 1e-6}  # less than one call
        judges = {"llm": judge, "enabled": ["correctness", "similarity"]}
        config = _config(tmp_path, tiny_corpus, "ragwatch-budget-live-rag", _http(live_rag.url), judges=judges)
        assert cli.main(["full", "--config", str(config)]) == 3
    out = capsys.readouterr().out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("could not evaluate: the LLM budget stopped the run (the judges: budget of $1e-06 "
                           "reached after 0 items; correctness 3 of 3 items not scored)"), last
    assert "raise budget_usd in evaluate.judges.llm" in last
    run = _last_run()
    assert run.run_metadata["gate"]["status"] == "not_evaluated"
    # not promoted and nothing logged on the model version: no production for this system
    version = Client().get_model_version("ragwatch-budget-live-rag", "latest")
    assert "production_evaluation" not in version.run_metadata and "evaluation" not in version.run_metadata


def test_two_systems_are_each_compared_with_their_own_history(
    tmp_path: Path, tiny_corpus: Path, live_rag: LiveRag, oracle_module, capsys
) -> None:
    oracle_module({"*": WRONG})
    http = _config(tmp_path / "http", tiny_corpus, "ragwatch-two-rag", _http(live_rag.url))
    own = _config(tmp_path / "callable", tiny_corpus, "ragwatch-two-rag",
                  {"kind": "callable", "callable": "fixed_rag:answer"})
    runs = {}
    for name, config in (("http 1", http), ("callable 1", own), ("http 2", http), ("callable 2", own)):
        assert cli.main(["evaluate" if runs else "full", "--config", str(config)]) == 0, name
        runs[name] = _last_run()
        time.sleep(0.01)
    capsys.readouterr()
    first_http, first_own = _comparisons(runs["http 1"]), _comparisons(runs["callable 1"])
    assert first_http.previous is None and first_own.previous is None  # a new system has no history
    assert first_own.production is None
    for name, earlier in (("http 2", "http 1"), ("callable 2", "callable 1")):
        comparisons = _comparisons(runs[name])
        assert comparisons.previous_run.startswith(runs[earlier].name + " "), name
        assert comparisons.production_run.startswith(runs[earlier].name + " "), name
        assert comparisons.previous.row("similarity").verdict == "unchanged", name

    # asked for explicitly, two systems compare, labelled as such
    assert cli.main(["compare", runs["callable 2"].name, runs["http 2"].name, "--config", str(own)]) == 0
    out = capsys.readouterr().out
    assert "comparison of systems, not a regression" in out
    assert run_metrics(runs["http 2"]) is not None
