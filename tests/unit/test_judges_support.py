"""Test doubles for the judge tests: the real `LLMClient` with a fixed mock reply, and a scripted
OpenAI-compatible server on 127.0.0.1 for per-item replies, repairs and logprobs.

Both keep our own LLM layer (validation, repair, usage) in the loop; only the model is fake.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragwatch.llm.client import LLMClient
from ragwatch.llm.types import LLMSettings
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext

# A script maps the chat messages of one request to the reply text, or to (text, logprobs) where
# logprobs is a list of (token, {alternative: probability}) covering the text.
Script = Callable[[list[dict[str, Any]]], Any]


class MockLLM(LLMClient):
    """The real client; every batch is answered by litellm's `mock_response` with one fixed reply."""

    def __init__(self, reply: str, **settings: Any) -> None:
        super().__init__(LLMSettings(model="openai/mock-judge", cache=False, max_retries=0, **settings))
        self.reply = reply

    def generate_many(self, prompts, **overrides):  # type: ignore[no-untyped-def, override]
        return super().generate_many(prompts, mock_response=self.reply, **overrides)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server: FakeServer = self.server.owner  # type: ignore[attr-defined]
        with server.lock:
            server.requests.append(body)
        reply = server.script(body["messages"])
        text, tokens = reply if isinstance(reply, tuple) else (reply, None)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        if tokens is not None and body.get("logprobs"):
            choice["logprobs"] = {
                "content": [
                    {
                        "token": tok,
                        "logprob": math.log(alts.get(tok, 1.0)),
                        "bytes": None,
                        "top_logprobs": [
                            {"token": t, "logprob": math.log(p), "bytes": None} for t, p in alts.items()
                        ],
                    }
                    for tok, alts in tokens
                ]
            }
        payload = json.dumps(
            {
                "id": "fake",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "fake"),
                "choices": [choice],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class FakeServer:
    """An OpenAI-compatible chat endpoint whose replies come from `script(messages)`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def client(self, **settings: Any) -> LLMClient:
        return LLMClient(
            LLMSettings(
                model="openai/fake-judge", api_base=self.api_base, cache=False, max_retries=0, **settings
            )
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server():
    """`fake_server(script)` starts a scripted server; all are stopped after the test."""
    servers: list[FakeServer] = []

    def start(script: Script) -> FakeServer:
        servers.append(FakeServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def last_user(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def is_repair(messages: list[dict[str, Any]]) -> bool:
    """True when the last turn asks to fix an invalid reply (our client's or Prometheus repair)."""
    text = last_user(messages)
    return "invalid" in text or "did not end with" in text


def sample(i: int, reference: str | None = "Paris is the capital of France.") -> EvalSample:
    return EvalSample(
        id=f"q{i}", question=f"Question {i}: what is the capital of France?", reference_answer=reference
    )


def answer(
    text: str = "Paris is the capital of France.", contexts: list[str] | None = None, error: str | None = None
) -> RagAnswer:
    ctx = ["Paris is the capital and largest city of France."] if contexts is None else contexts
    return RagAnswer(question="q", answer=text, contexts=[RetrievedContext(text=c) for c in ctx], error=error)


def no_nan(result: Any) -> None:
    """Every item is scored with a finite score or failed with a reason; counts add up."""
    for item in result.items:
        if item.ok:
            assert item.score is not None and math.isfinite(item.score)
        else:
            assert item.error and item.score is None
    assert result.n_scored + result.n_failed + result.n_skipped == len(result.items)  # skipped: no reference
    assert result.n_scored == sum(1 for it in result.items if it.ok)
