"""The examples the README and docs/your-system.md show work as written: the config passes preflight,
and the HTTP system it configures reads answers and contexts from the tiny server, started here. The
Phoenix pair of docs/monitoring.md loads as `run.py` loads it (the real Phoenix round trip with these
files: tests/integration/test_phoenix.py, which skips where Phoenix is not installed)."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest

from ragwatch.config import FullConfig
from ragwatch.config_loader import load_config
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch.preflight import preflight
from ragwatch.rag.http import HttpRAG

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


@pytest.fixture
def tiny_server():
    spec = importlib.util.spec_from_file_location("tiny_rag_server", EXAMPLES / "tiny_rag_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.make_server(0, ROOT / "data" / "sample" / "zenml_docs")  # port 0: a free one
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/rag"
    server.shutdown()
    server.server_close()


def test_the_example_config_passes_preflight():
    config = preflight("full", EXAMPLES / "ragwatch.yaml")
    assert config.evaluate.system.rag.kind == "http"
    assert config.evaluate.judges.enabled == ["faithfulness", "similarity"]
    assert config.testset.imports[0].path == str(EXAMPLES / "questions.jsonl")


def test_the_http_system_reads_the_tiny_servers_replies(tiny_server):
    settings = load_config(EXAMPLES / "ragwatch.yaml", FullConfig).evaluate.system.rag.http
    system = HttpRAG(settings.model_copy(update={"url": tiny_server}))
    answers = system.answer_many(["How do I find the Tekton UI endpoint?", "Where do config files live?"])
    assert [a.error for a in answers] == [None, None]
    first = answers[0]
    assert "Tekton" in first.answer and first.contexts
    assert first.contexts[0].source == "component-guide/orchestrators/tekton.md"
    assert first.contexts[0].score is not None and first.contexts[0].text.startswith(first.answer)


def test_a_request_without_a_question_gets_a_clear_400(tiny_server):
    import httpx

    reply = httpx.post(tiny_server, json={"query": "x"}, timeout=10)
    assert reply.status_code == 400 and "question" in reply.json()["error"]


def test_the_phoenix_examples_load_and_meet_on_one_server_and_project():
    """`python run.py evaluate --config docs/examples/phoenix_evaluate.yaml` traces the built-in system's
    answers to Phoenix, `python run.py monitor --config docs/examples/phoenix_monitor.yaml` pulls them back:
    both files are valid configs (as run.py reads them), and they name the same server and project."""
    rag = preflight("evaluate", EXAMPLES / "phoenix_evaluate.yaml").evaluate.system.rag
    monitor = load_config(EXAMPLES / "phoenix_monitor.yaml", MonitorConfig)
    assert rag.kind == "builtin" and rag.trace is not None
    assert monitor.logs.format == "phoenix" and monitor.logs.phoenix is not None
    assert rag.trace.project == monitor.logs.phoenix.project == "ragwatch-rag"
    assert rag.trace.otlp_endpoint == monitor.logs.phoenix.url + "/v1/traces"  # Phoenix takes OTLP on its own port
