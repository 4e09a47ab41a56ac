"""The systems under test: built-in (real Index, mocked LLM), callable and HTTP adapters."""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import litellm
import numpy as np
import pytest

from ragwatch.indexing.index import Index
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.rag import (
    DEFAULT_PROMPT_TEMPLATE,
    BuiltinRAG,
    CallableRAG,
    HttpRAG,
    HttpSettings,
    RagSettings,
    RAGSystem,
    build_prompt,
    build_rag,
    format_contexts,
    load_callable,
)
from ragwatch.types import Chunk, RagAnswer, SearchHit

pytestmark = pytest.mark.usefixtures("isolated_cache")  # a fresh LLM cache per test


class HashEmbedder:
    """A deterministic bag-of-words embedder: tests the index/RAG wiring without a model package."""

    identity = "test/hash-256"
    dim = 256
    max_input_tokens = 512

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


DOCS = {
    "guide/stacks.md": "A stack is the configuration of tools: an orchestrator and an artifact store.",
    "guide/pipelines.md": "A pipeline is a sequence of steps; each step produces artifacts.",
    "guide/secrets.md": "Secrets hold credentials; register a secret with the CLI: zenml secret create.",
}


@pytest.fixture(scope="module")
def index() -> Index:
    chunks = [Chunk(id=f"c{i}", document_id=src, source=src, text=text, start=0, end=len(text))
              for i, (src, text) in enumerate(DOCS.items())]
    return Index.build(chunks, HashEmbedder())


def llm(**kw) -> LLMClient:
    kw.setdefault("model", "gpt-4o-mini")
    return LLMClient(LLMSettings(cache=False, max_retries=0, **kw))


class RecordingLLM(LLMClient):
    """Keeps the prompts it was asked, so a test can read what the generator saw."""

    def generate_many(self, prompts, **kw):
        self.prompts = list(prompts)
        return super().generate_many(prompts, **kw)


# ---------------------------------------------------------------- built-in


def test_builtin_answers_with_numbered_contexts_and_timings(index):
    client = RecordingLLM(LLMSettings(model="gpt-4o-mini", cache=False))
    rag = BuiltinRAG(index, HashEmbedder(), client, RagSettings(top_k=2, retrieval_mode="bm25"))
    answers = rag.answer_many(["How do I register a secret?", "What is a stack?"], mock_response="mocked")
    assert [a.answer for a in answers] == ["mocked", "mocked"]
    assert all(a.ok for a in answers)
    assert answers[0].contexts[0].source == "guide/secrets.md"
    assert answers[1].contexts[0].chunk_id == "c0"
    assert len(answers[0].contexts) <= 2
    assert set(answers[0].timings) == {"retrieval_s", "generation_s"}
    prompt = client.prompts[0]
    assert prompt.startswith("Context information is below.")
    assert "[1] source: guide/secrets.md\n```\n" + DOCS["guide/secrets.md"] + "\n```" in prompt
    assert "Query: How do I register a secret?\nAnswer: " in prompt
    assert isinstance(rag, RAGSystem)


def test_builtin_retrieve_many_is_batched_and_modes_work(index):
    rag = BuiltinRAG(index, HashEmbedder(), llm(), RagSettings(top_k=3))
    for mode in ("vector", "bm25", "hybrid"):
        hits = rag.retrieve_many(["pipeline steps artifacts", "secret credentials"], k=1, mode=mode)
        assert [h[0].chunk.source for h in hits] == ["guide/pipelines.md", "guide/secrets.md"], mode
    assert len(rag.retrieve_many(["stack"])[0]) == 3
    assert rag.retrieve_many([]) == []


def test_builtin_answers_many_with_one_batched_search_and_the_contexts_of_single_search(index):
    """One `search_many` for the whole batch; every answer shows the contexts one search would give."""
    questions = ["How do I register a secret?", "What is a stack?", "pipeline steps artifacts", "zzz"]
    calls: list[int] = []

    class CountingIndex:  # the real index, counting batched searches
        def __getattr__(self, name):
            return getattr(index, name)

        def search_many(self, queries, *args, **kw):
            calls.append(len(queries))
            return index.search_many(queries, *args, **kw)

    for mode in ("vector", "bm25", "hybrid"):
        settings = RagSettings(top_k=2, retrieval_mode=mode, max_context_chars=90)
        calls.clear()
        rag = BuiltinRAG(CountingIndex(), HashEmbedder(), llm(), settings)
        answers = rag.answer_many(questions, mock_response="ok")
        assert calls == [len(questions)], mode
        for question, answer in zip(questions, answers, strict=True):
            hits = index.search(question, k=2, mode=mode, embedder=HashEmbedder())
            assert answer.contexts == format_contexts(hits, 90)[1], (mode, question)


def test_builtin_generation_failure_is_an_item_error(index):
    rag = BuiltinRAG(index, HashEmbedder(), llm(), RagSettings(retrieval_mode="bm25"))
    exc = litellm.BadRequestError("context window exceeded", model="gpt-4o-mini", llm_provider="openai")
    [answer] = rag.answer_many(["What is a stack?"], mock_response=exc)
    assert not answer.ok and answer.error.startswith("generation failed:") and answer.answer == ""
    assert answer.contexts  # what was retrieved is still reported


def test_builtin_needs_embedder_for_vector_modes(index):
    with pytest.raises(ValueError, match="needs an embedder"):
        BuiltinRAG(index, None, llm(), RagSettings(retrieval_mode="hybrid"))
    assert BuiltinRAG(index, None, llm(), RagSettings(retrieval_mode="bm25"))
    with pytest.raises(ValueError, match="index="):
        build_rag(RagSettings())


def test_builtin_fingerprint_is_stable_and_covers_the_configuration(index):
    def fp(settings=None, **kw):
        return BuiltinRAG(index, HashEmbedder(), llm(**kw), settings or RagSettings()).fingerprint()

    base = fp()
    assert base == fp() and len(base) == 64
    assert fp(RagSettings(top_k=3)) != base
    assert fp(RagSettings(retrieval_mode="vector")) != base
    assert fp(RagSettings(prompt_template="Q: {question}\n{context}")) != base
    assert fp(model="gpt-4o") != base
    describe = BuiltinRAG(index, HashEmbedder(), llm(), RagSettings()).describe()
    assert describe["embedding"] == "test/hash-256" and describe["index"] == index.fingerprint


def test_context_budget_and_fences():
    text = "x" * 50 + "\n```python\ncode\n```\n"
    hits = [SearchHit(chunk=Chunk(id=f"c{i}", document_id="d", source=f"s{i}.md", text=text, start=0,
                                  end=len(text)), score=1.0, rank=i + 1) for i in range(5)]
    context, used = format_contexts(hits, max_chars=100)
    assert len(used) == 2 and len(used[1].text) == 100 - len(text)  # second one cut, rest left out
    assert "[1] source: s0.md\n````\n" in context  # fence longer than the chunk's own ``` run
    assert build_prompt("{question}|{context}|{json}", "q", "ctx {x}") == "q|ctx {x}|{json}"


def test_settings_validation_names_the_problem():
    with pytest.raises(ValueError, match="extra"):
        RagSettings(top_kk=3)
    with pytest.raises(ValueError, match=r"\{context\}"):
        RagSettings(prompt_template="Q: {question}")
    with pytest.raises(ValueError, match="module:function"):
        RagSettings(kind="callable")
    with pytest.raises(ValueError, match="http block"):
        RagSettings(kind="http")
    with pytest.raises(ValueError, match="http://"):
        HttpSettings(url="localhost:8000")
    assert "{context}" in DEFAULT_PROMPT_TEMPLATE


# ---------------------------------------------------------------- callable

USER_MODULE = '''
from ragwatch.types import RagAnswer, RetrievedContext

def as_string(question):
    return "string answer to " + question

def as_dict(question):
    if "boom" in question:
        raise RuntimeError("backend down")
    return {"answer": "dict answer", "contexts": ["plain", {"text": "obj", "id": "k1", "source": "a.md",
                                                          "score": 0.5}]}

def as_model(question):
    return RagAnswer(question="ignored", answer="model answer",
                     contexts=[RetrievedContext(text="t", source="b.md")])

def as_wrong(question):
    return 42

class Holder:
    @staticmethod
    def answer(question):
        return "held"
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_rag_under_test.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_rag_under_test"


def test_callable_return_shapes(user_module):
    assert CallableRAG(f"{user_module}:as_string").answer("q").answer == "string answer to q"
    a = CallableRAG(f"{user_module}:as_dict").answer("q")
    assert a.answer == "dict answer" and [c.text for c in a.contexts] == ["plain", "obj"]
    assert a.contexts[1].chunk_id == "k1" and a.contexts[1].score == 0.5 and "total_s" in a.timings
    m = CallableRAG(f"{user_module}:as_model").answer("real question")
    assert m.question == "real question" and m.contexts[0].source == "b.md"
    held = build_rag(RagSettings(kind="callable", callable=f"{user_module}:Holder.answer"))
    assert held.answer("q").answer == "held"


def test_callable_errors_are_per_item(user_module):
    rag = CallableRAG(f"{user_module}:as_dict")
    answers = rag.answer_many(["ok", "boom", "ok again"])
    assert [a.ok for a in answers] == [True, False, True]
    assert "RuntimeError: backend down" in answers[1].error
    wrong = CallableRAG(f"{user_module}:as_wrong").answer("q")
    assert "return a RagAnswer" in wrong.error


def test_callable_fingerprint_covers_target_and_source(user_module):
    a, b = CallableRAG(f"{user_module}:as_dict"), CallableRAG(f"{user_module}:as_string")
    assert a.fingerprint() == CallableRAG(f"{user_module}:as_dict").fingerprint() != b.fingerprint()
    assert a.describe()["source_sha256"]
    assert CallableRAG(lambda q: q).answer("echo").answer == "echo"


def test_load_callable_errors_say_what_to_do(user_module):
    with pytest.raises(ValueError, match=r"package\.module:function"):
        load_callable("no_colon")
    with pytest.raises(ValueError, match="PYTHONPATH"):
        load_callable("surely_missing_module_xyz:f")
    with pytest.raises(ValueError, match="no attribute"):
        load_callable(f"{user_module}:nope")


# ---------------------------------------------------------------- HTTP


class _Handler(BaseHTTPRequestHandler):
    counts: ClassVar[dict[str, int]] = {}
    lock: ClassVar[threading.Lock] = threading.Lock()
    in_flight: ClassVar[list[int]] = [0, 0]  # now, peak

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status: int, body: str | bytes, headers: dict[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        path = self.path
        q = body.get("question") or body.get("query", "")
        with self.lock:
            key = f"{path}|{q}"
            self.counts[key] = self.counts.get(key, 0) + 1
            n = self.counts[key]
        if path == "/ok":
            with self.lock:
                self.in_flight[0] += 1
                self.in_flight[1] = max(self.in_flight)
            time.sleep(0.1 if q.endswith("0") else 0.02)  # out-of-order completion
            with self.lock:
                self.in_flight[0] -= 1
            ctx = [{"text": f"ctx for {q}", "id": "k", "source": "a.md", "score": 0.9}, "plain"]
            self._send(200, json.dumps({"answer": f"A:{q}", "contexts": ctx,
                                        "auth": self.headers.get("Authorization")}))
        elif path == "/nested":
            self._send(200, json.dumps({"data": {"reply": f"N:{q}", "extra": body.get("mode"),
                                                 "docs": [{"content": "c", "url": "u"}]}}))
        elif path == "/flaky":
            if n == 1:
                self._send(503, "busy")
            elif n == 2:
                self._send(429, "slow down", {"Retry-After": "0"})
            else:
                self._send(200, json.dumps({"answer": "finally"}))
        elif path == "/mixed":
            if "bad" in q:
                self._send(500, "internal error")
            else:
                self._send(200, json.dumps({"answer": q}))
        elif path == "/badjson":
            self._send(200, "<html>not json</html>")
        elif path == "/missing":
            self._send(200, json.dumps({"text": "no answer field"}))
        elif path == "/forbidden":
            self._send(403, "no access")
        elif path == "/slow":
            time.sleep(1.0)
            self._send(200, json.dumps({"answer": "too late"}))
        else:
            self._send(404, "unknown path")


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def http(url: str, **kw) -> HttpRAG:
    kw.setdefault("backoff_s", 0.01)
    return HttpRAG(HttpSettings(url=url, **kw))


def test_http_answers_in_order_with_contexts_and_env_headers(server, monkeypatch):
    monkeypatch.setenv("RAG_TEST_TOKEN", "Bearer t0k3n")
    rag = http(f"{server}/ok", concurrency=4, headers_env={"Authorization": "RAG_TEST_TOKEN"})
    questions = [f"q{i}" for i in range(12)]
    answers = rag.answer_many(questions)
    assert [a.answer for a in answers] == [f"A:q{i}" for i in range(12)]
    assert 1 < _Handler.in_flight[1] <= 4  # concurrent, but bounded
    assert answers[0].contexts[0].chunk_id == "k" and answers[0].contexts[1].text == "plain"
    assert "t0k3n" not in json.dumps(rag.describe()) and "t0k3n" not in rag.fingerprint()
    assert rag.describe()["headers_env"] == ["Authorization"]


def test_http_custom_mapping_and_extra_body(server):
    rag = http(f"{server}/nested", question_field="query", extra_body={"mode": "fast"},
               answer_field="data.reply", contexts_field="data.docs", context_text_field="content",
               context_source_field="url")
    [a] = rag.answer_many(["hello"])
    assert a.answer == "N:hello" and a.contexts[0].text == "c" and a.contexts[0].source == "u"


def test_http_retries_5xx_and_429_then_succeeds(server):
    [a] = http(f"{server}/flaky", max_retries=3).answer_many(["retry me"])
    assert a.ok and a.answer == "finally"


def test_http_failures_are_per_item_with_reasons(server):
    answers = http(f"{server}/mixed", max_retries=1).answer_many(["good", "bad one", "good too"])
    assert [a.ok for a in answers] == [True, False, True]
    assert "after 2 attempts" in answers[1].error and "HTTP 500" in answers[1].error
    [bad] = http(f"{server}/badjson").answer_many(["q"])
    assert "not JSON" in bad.error
    [missing] = http(f"{server}/missing").answer_many(["q"])
    assert "no field 'answer'" in missing.error and "text" in missing.error
    [forbidden] = http(f"{server}/forbidden", max_retries=3).answer_many(["q"])
    assert "HTTP 403" in forbidden.error


def test_http_timeout_and_dead_endpoint(server):
    started = time.perf_counter()
    [slow] = http(f"{server}/slow", timeout_s=0.2, max_retries=1).answer_many(["q"])
    assert "timed out after 0.2 s" in slow.error and time.perf_counter() - started < 0.9
    [dead] = http("http://127.0.0.1:9", timeout_s=0.5, max_retries=1).answer_many(["q"])
    assert not dead.ok and "connection failed" in dead.error


def test_http_fingerprint_ignores_transport_knobs(server, monkeypatch):
    a = http(f"{server}/ok").fingerprint()
    assert a == http(f"{server}/ok", timeout_s=5, concurrency=2).fingerprint()
    assert a != http(f"{server}/ok", answer_field="reply").fingerprint()
    monkeypatch.delenv("ABSENT_RAG_TOKEN", raising=False)
    with pytest.raises(ValueError, match="ABSENT_RAG_TOKEN"):
        http(f"{server}/ok", headers_env={"X-Key": "ABSENT_RAG_TOKEN"})


def test_answers_are_rag_answers(server):
    [a] = build_rag(RagSettings(kind="http", http=HttpSettings(url=f"{server}/ok"))).answer_many(["z"])
    assert isinstance(a, RagAnswer) and "total_s" in a.timings


# ---------------------------------------------------------------- calls, cache key, target


def test_http_counts_every_attempt_retry_error_and_timeout(server):
    rag = http(f"{server}/flaky", max_retries=3)
    rag.answer_many(["count me"])  # 503, 429, then 200
    calls = rag.calls()
    assert (calls.calls, calls.retries, calls.errors, calls.timeouts) == (3, 2, 2, 0)
    assert (calls.questions, calls.answered, calls.failed) == (1, 1, 0)
    assert calls.line() == "3 requests for 1 questions, 2 errors (2 retries), 1 answered"

    slow = http(f"{server}/slow", timeout_s=0.2, max_retries=1)
    slow.answer_many(["late"])
    calls = slow.calls()
    assert (calls.calls, calls.timeouts, calls.errors, calls.failures) == (2, 2, 0, {"unreachable": 1})
    dead = http("http://127.0.0.1:9", timeout_s=0.5, max_retries=2)
    dead.answer_many(["a", "b"])
    calls = dead.calls()
    assert (calls.calls, calls.errors, calls.failed, calls.failures) == (6, 6, 2, {"unreachable": 2})
    assert calls.line().startswith("6 requests for 2 questions, 6 errors (4 retries), 0 answered, 2 failed")
    # an answering endpoint that errs is reachable: its failures are the system's own errors
    mixed = http(f"{server}/mixed", max_retries=1)
    mixed.answer_many(["good", "bad"])
    assert mixed.calls().failures == {"error": 1} and mixed.calls().calls == 3
    mixed.answer_many(["good"])  # counts are per answer_many: one run's calls
    assert mixed.calls().calls == 1


def test_callable_counts_calls_and_exceptions(user_module):
    rag = CallableRAG(f"{user_module}:as_dict")
    rag.answer_many(["ok", "boom", "ok again"])
    calls = rag.calls()
    assert (calls.calls, calls.errors, calls.answered, calls.failed) == (3, 1, 2, 1)
    assert calls.failures == {"error": 1} and calls.line().startswith("3 calls for 3 questions, 1 errors")

    def down(question):
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    unreachable = CallableRAG(down)
    unreachable.answer_many(["q"])
    assert unreachable.calls().failures == {"unreachable": 1}


def test_builtin_counts_generations_and_failures(index):
    rag = BuiltinRAG(index, HashEmbedder(), llm(), RagSettings(retrieval_mode="bm25"))
    exc = litellm.BadRequestError("context window exceeded", model="gpt-4o-mini", llm_provider="openai")
    rag.answer_many(["What is a stack?"], mock_response=exc)
    calls = rag.calls()
    assert (calls.calls, calls.failed, calls.failures) == (1, 1, {"error": 1})


def test_cache_key_and_target():
    assert not RagSettings().asked_every_run and RagSettings().target == "builtin"
    own = RagSettings(kind="http", http=HttpSettings(url="http://127.0.0.1:8000/ask"))
    assert own.asked_every_run and own.target == "http http://127.0.0.1:8000/ask"
    versioned = own.model_copy(update={"cache_key": "v2025-11-26"})
    assert not versioned.asked_every_run and versioned.target == own.target
    assert RagSettings(kind="callable", callable="m:f").target == "callable m:f"
    with pytest.raises(ValueError, match="cache_key is for a system of your own"):
        RagSettings(cache_key="v1")
    with pytest.raises(ValueError, match="cache_key is empty"):
        RagSettings(kind="callable", callable="m:f", cache_key=" ")
