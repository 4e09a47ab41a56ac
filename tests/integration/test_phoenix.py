"""The Phoenix round trip with the real server: `phoenix serve` on 127.0.0.1 (SQLite in a temp
directory), answers sent to it as OpenInference traces (a logged file through the script, and the
built-in system itself, traced as it answers), `python run.py monitor` pulling a window of spans through
Phoenix's REST API, evaluating them and writing its verdicts back as span annotations. The configs are
the docs' (docs/examples/phoenix_evaluate.yaml, phoenix_monitor.yaml), with only what this test's
environment needs overridden, each override saying why: a broken example fails here.

Phoenix lives in its own venv (requirements/phoenix.txt): `RAGWATCH_PHOENIX_PYTHON` names its python
(default: `.phoenix-venv/bin/python` in the checkout). Skipped, with how to install it, when it is absent.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from ragwatch.config import FullConfig
from ragwatch.config_loader import load_config
from ragwatch.indexing.index import Index
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch.rag import BuiltinRAG, RagSettings
from ragwatch.types import Chunk
from ragwatch_zenml import cli as run
from tests.fake_llm_server import FakeLLMServer
from tests.unit.test_rag import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "data" / "logs" / "answers.jsonl"
EXAMPLES = ROOT / "docs" / "examples"
PYTHON = Path(os.environ.get("RAGWATCH_PHOENIX_PYTHON", ROOT / ".phoenix-venv" / "bin" / "python"))
STARTUP_S = 300
INSTALL = ("python -m venv .phoenix-venv && .phoenix-venv/bin/pip install -r requirements/phoenix.txt "
           "(or set RAGWATCH_PHOENIX_PYTHON to a python that has arize-phoenix)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _on(server: str, documented: str) -> str:
    """`documented` (a URL of the docs' examples) with the host and port of the test's Phoenix: it
    listens on a free port, not the docs' 6006 (which another Phoenix may hold); the path stays as written."""
    return urlsplit(documented)._replace(netloc=urlsplit(server).netloc).geturl()


def _monitor_config(directory: Path, server: str, logs: dict[str, Any] | None = None) -> Path:
    """docs/examples/phoenix_monitor.yaml, included as it is, with the test's Phoenix and `logs` on top;
    the reports go to the test's directory, not the checkout's reports/."""
    documented = load_config(EXAMPLES / "phoenix_monitor.yaml", MonitorConfig).logs.phoenix
    logs = logs or {}
    phoenix = {"url": _on(server, documented.url), **logs.get("phoenix", {})}
    path = directory / "phoenix_monitor.yaml"
    path.write_text(yaml.safe_dump({"include": [str(EXAMPLES / "phoenix_monitor.yaml")],
                                    "logs": {**logs, "phoenix": phoenix}, "reports_dir": str(directory / "reports")}))
    return path


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    if not PYTHON.is_file() or subprocess.run([str(PYTHON), "-c", "import phoenix.otel, phoenix.server"],
                                              capture_output=True).returncode != 0:
        pytest.skip(f"arize-phoenix is not installed at {PYTHON}: {INSTALL}")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = _free_port(), _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_TELEMETRY_ENABLED": "false"}
    server = subprocess.Popen([str(PYTHON), "-m", "phoenix.server.main", "serve"], env=env, cwd=work,
                              stdout=(work / "server.log").open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        # importing Phoenix alone took 107 s, answering 172 s, on a loaded 2-core machine at nice 10
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                _get(f"{url}/v1/projects")
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"phoenix serve exited: {(work / 'server.log').read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    pytest.fail(f"phoenix serve did not answer within {STARTUP_S} s")
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.integration
@pytest.mark.slow
def test_phoenix_round_trip(phoenix, tmp_path, capsys):
    sent = subprocess.run([str(PYTHON), str(ROOT / "scripts" / "phoenix_send_traces.py"), str(LOG),
                           "--url", phoenix, "--project", "ragwatch-test"], capture_output=True, text=True, check=True)
    assert "sent 8 traces" in sent.stdout
    # the docs' monitor config; its project is the script's (the docs' ragwatch-rag holds the other test's
    # traces on this shared server), and the test log's 1-5 ratings carry no scale of their own
    config = _monitor_config(tmp_path, phoenix, {"feedback_scale": [1, 5], "phoenix": {"project": "ragwatch-test"}})
    for _ in range(20):  # the traces reach Phoenix's database a moment after the exporter returns
        if len(_get(f"{phoenix}/v1/projects/ragwatch-test/spans?limit=100")["data"]) >= 23:
            break
        time.sleep(0.5)
    assert run.main(["monitor", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "project ragwatch-test: 7 kept" in out and "1 missing contexts" in out
    assert "a span tree without a retriever span" in out
    assert "generator: 0 calls" in out and "wrote the verdict of 3 traces back" in out
    roots = [s for s in _get(f"{phoenix}/v1/projects/ragwatch-test/spans?limit=100")["data"]
             if s["parent_id"] is None and s["start_time"].startswith("2026-11-21")]
    query = "&".join(f"span_ids={s['context']['span_id']}" for s in roots)
    annotations = _get(f"{phoenix}/v1/projects/ragwatch-test/span_annotations?{query}")["data"]
    assert len(annotations) == 3 and {a["name"] for a in annotations} == {"ragwatch"}
    assert all("unpaired" in a["result"]["explanation"] for a in annotations)


DOCS = {
    "stacks.md": "A ZenML stack is the set of tools a pipeline runs on: an orchestrator and an artifact store.",
    "models.md": "A model version groups the artifacts and metadata of one trained system.",
    "cache.md": "Step caching reuses the outputs of a step whose code and inputs did not change.",
}


def _spans(url: str, project: str) -> list[dict]:
    try:
        return _get(f"{url}/v1/projects/{project}/spans?limit=1000")["data"]
    except urllib.error.HTTPError as exc:
        if exc.code == 404:  # Phoenix creates the project with its first span
            return []
        raise


@pytest.mark.integration
@pytest.mark.slow
def test_builtin_system_traces_reach_phoenix_and_monitor_annotates_them(phoenix, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))  # every answer generated, none cached
    chunks = [Chunk(id=f"c-{name}", document_id=name, source=name, text=text, start=0, end=len(text))
              for name, text in DOCS.items()]
    index = Index.build(chunks, HashEmbedder())
    questions = ["What is a ZenML stack?", "What does a model version group?", "When is a step cached?"]
    # the trace settings of `python run.py evaluate --config docs/examples/phoenix_evaluate.yaml`, sent to the
    # test's Phoenix; the system is the built-in one on a three-page index with a fake generator (the bundled
    # evaluation that file includes runs the local model on the sample corpus for minutes)
    documented = load_config(EXAMPLES / "phoenix_evaluate.yaml", FullConfig).evaluate.system.rag.trace
    trace = documented.model_copy(update={"otlp_endpoint": _on(phoenix, documented.otlp_endpoint)})
    project = trace.project  # the docs' project, the one the monitor config reads
    with FakeLLMServer(responder=lambda body: "From the context: " + body["messages"][-1]["content"][-60:]) as llm:
        settings = LLMSettings(model="openai/fake-model", api_base=llm.base_url, max_retries=1)
        rag = BuiltinRAG(index, None, LLMClient(settings), RagSettings(retrieval_mode="bm25", top_k=2, trace=trace))
        answers = rag.answer_many(questions)
        assert llm.calls == 3 and all(a.ok for a in answers)
        for _ in range(40):  # spans reach Phoenix's database a moment after the exporter returns
            if len(spans := _spans(phoenix, project)) >= 9:
                break
            time.sleep(0.5)
        by_kind: dict[str, list[dict]] = {}
        for span in spans:
            by_kind.setdefault(span["span_kind"], []).append(span)
        assert {k: len(v) for k, v in by_kind.items()} == {"CHAIN": 3, "RETRIEVER": 3, "LLM": 3}
        roots = {s["attributes"]["input.value"]: s for s in by_kind["CHAIN"]}
        assert set(roots) == set(questions)
        for answer in answers:  # what Phoenix stored is what the system answered and retrieved
            root = roots[answer.question]
            assert root["attributes"]["output.value"] == answer.answer
            retriever = next(s for s in by_kind["RETRIEVER"] if s["context"]["trace_id"] == root["context"]["trace_id"])
            attributes = retriever["attributes"]  # flat, as Phoenix returns them
            documents = [{k.split(".")[-1]: v for k, v in attributes.items()
                          if k.startswith(f"retrieval.documents.{i}.")} for i in range(len(answer.contexts))]
            assert answer.contexts and f"retrieval.documents.{len(answer.contexts)}.document.id" not in attributes
            assert [d["id"] for d in documents] == [c.chunk_id for c in answer.contexts]
            assert [d["score"] for d in documents] == pytest.approx([c.score for c in answer.contexts])
            assert [d["content"] for d in documents] == [c.text for c in answer.contexts]
        generate = by_kind["LLM"][0]["attributes"]
        assert generate["llm.model_name"] == "openai/fake-model" and generate["llm.token_count.prompt"] > 0

        # `python run.py monitor --config docs/examples/phoenix_monitor.yaml`: its project as written
        assert run.main(["monitor", "--config", str(_monitor_config(tmp_path, phoenix))]) == 0
        assert llm.calls == 3  # the monitor evaluated the traced answers without generating any
    out = capsys.readouterr().out
    assert f"project {project}: 3 kept" in out, out
    assert "generator: 0 calls" in out and "wrote the verdict of 3 traces back" in out
    query = "&".join(f"span_ids={s['context']['span_id']}" for s in roots.values())
    annotations = _get(f"{phoenix}/v1/projects/{project}/span_annotations?{query}")["data"]
    assert len(annotations) == 3 and {a["name"] for a in annotations} == {"ragwatch"}
    assert {a["span_id"] for a in annotations} == {s["context"]["span_id"] for s in roots.values()}
    assert all(a["result"]["label"] in {"drift", "no drift", "undecided"} for a in annotations)


SCREENSHOT = ROOT / "docs" / "images" / "phoenix-otlp-export.png"


def _screenshot(url: str, path: Path, *clicks: str) -> str:
    """The page at `url` in headless Chromium, after clicking each text of `clicks` in turn, saved to
    `path`; the page's text. Skips, saying why, without Chromium or Playwright."""
    from ragwatch_zenml.commands.dashboard_browser import chromium_path

    chromium = chromium_path()
    if chromium is None:
        pytest.skip("Chromium is not installed: apt-get install -y --no-install-recommends chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed: pip install -r requirements/dev.txt")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(url, wait_until="networkidle", timeout=120_000)
        for name in clicks:
            page.get_by_text(name).first.click(timeout=60_000)
            page.wait_for_timeout(1500)
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
        text = page.inner_text("body")
        browser.close()
    return text


@pytest.mark.integration
@pytest.mark.slow
def test_an_evaluation_of_phoenix_traces_exports_back_to_them_over_otlp(phoenix, tmp_path, capsys):
    """`run.py evaluate` on the spans of a Phoenix project (a `logs:` block, `format: phoenix`), then
    `run.py export --otlp-endpoint` back to the same Phoenix: the run, its metrics and one span per item,
    each item under the root span of the trace it evaluated, visible through Phoenix's REST API."""
    project = "ragwatch-export"
    sent = subprocess.run([str(PYTHON), str(ROOT / "scripts" / "phoenix_send_traces.py"), str(LOG),
                           "--url", phoenix, "--project", project], capture_output=True, text=True, check=True)
    assert "sent 8 traces" in sent.stdout
    for _ in range(40):  # the traces reach Phoenix's database a moment after the exporter returns
        if len(logged := _spans(phoenix, project)) >= 23:
            break
        time.sleep(0.5)
    roots = {s["context"]["trace_id"]: s for s in logged if s["parent_id"] is None}
    config = tmp_path / "evaluate.yaml"
    config.write_text(yaml.safe_dump({
        "logs": {"format": "phoenix", "phoenix": {"url": phoenix, "project": project}, "feedback_scale": [1, 5]},
        "reports_dir": str(tmp_path / "reports"),
        "evaluate": {"system": {"model_name": "ragwatch-otlp-export-test", "rag": {"kind": "logged"}},
                     "judges": {"enabled": []}, "e2e": {"enabled": False}, "promote": False}}))
    assert run.main(["testset", "--config", str(config)]) == 0  # the project's traces are the evaluation set
    assert run.main(["evaluate", "--config", str(config)]) == 0
    capsys.readouterr()
    assert run.main(["export", "--otlp-endpoint", phoenix, "--project", project]) == 0
    out = capsys.readouterr().out
    assert "7 of them in their logged traces" in out, out  # the trace without a retriever span is not evaluated

    for _ in range(40):
        spans = _spans(phoenix, project)
        if len([s for s in spans if s["name"].startswith("ragwatch item")]) >= 7:
            break
        time.sleep(0.5)
    by_name = {s["name"]: s for s in spans if s["name"].startswith("ragwatch")}
    [run_span] = [s for n, s in by_name.items() if n.startswith("ragwatch evaluation ")]
    attributes = run_span["attributes"]
    assert run_span["parent_id"] is None and run_span["span_kind"] == "EVALUATOR"
    assert attributes["ragwatch.gate.status"] == "promotion_off" and attributes["ragwatch.gate.verdict"]  # promote off
    assert [e["name"] for e in run_span["events"]] == ["gen_ai.evaluation.result"]
    support = by_name["ragwatch metric answer/context_support"]
    assert support["parent_id"] == run_span["context"]["span_id"]
    figures = support["attributes"]
    assert figures["gen_ai.evaluation.name"] == "answer/context_support"
    assert figures["ragwatch.evaluation.ci_low"] <= figures["gen_ai.evaluation.score.value"] \
        <= figures["ragwatch.evaluation.ci_high"]
    assert figures["ragwatch.evaluation.n"] + figures["ragwatch.evaluation.n_failed"] == 7  # 1 empty answer fails
    assert figures["ragwatch.evaluation.ci_method"]
    [event] = support["events"]
    assert event["name"] == "gen_ai.evaluation.result"
    assert event["attributes"]["ragwatch.evaluation.ci_high"] == figures["ragwatch.evaluation.ci_high"]
    items = [s for n, s in by_name.items() if n.startswith("ragwatch item ")]
    assert len(items) == 7
    for item in items:  # each in the trace it evaluated, under that trace's root span
        trace_id = item["context"]["trace_id"]
        assert item["attributes"]["ragwatch.item.id"] == trace_id and item["parent_id"] == roots[trace_id][
            "context"]["span_id"]
        scores = {e["attributes"]["gen_ai.evaluation.name"]: e["attributes"] for e in item["events"]}
        assert "answer/context_support" in scores
        assert all(e["name"] == "gen_ai.evaluation.result" for e in item["events"])
        assert json.loads(item["attributes"]["output.value"]).keys() == scores.keys()

    project_id = next(p["id"] for p in _get(f"{phoenix}/v1/projects")["data"] if p["name"] == project)
    # the item with the most scores, its evaluation events open
    shown = max(items, key=lambda s: sum("gen_ai.evaluation.score.value" in e["attributes"] for e in s["events"]))
    text = _screenshot(f"{phoenix}/projects/{project_id}/traces/{shown['context']['trace_id']}", SCREENSHOT,
                       shown["name"], "Events")
    assert shown["name"] in text and "gen_ai.evaluation.result" in text
