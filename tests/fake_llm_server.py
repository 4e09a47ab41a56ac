"""A fake OpenAI-compatible chat server on 127.0.0.1 that injects faults, for tests and benchmarks.

It speaks POST /v1/chat/completions and the batch API: POST /v1/files (multipart upload),
GET /v1/files/{id}/content, POST /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel.
A batch is "in_progress" for `batch_delay_s` after it is created, then "completed": each line is
answered as the chat endpoint would answer it (same responder, same usage), except lines whose
first user message contains a key of `batch_failures`, which go to the error file (status 500).
Usage counts words, or tokens of `token_counter(text)` plus the chat format's overhead.

Replies come from `responder(body) -> str | dict` (a dict may carry "content" and "logprobs").
Faults are scripted per request: `script` maps a substring of the first user message (the
item's prompt) to a queue of behaviours consumed one per matching request (repairs of an item
match too); requests with no scripted behaviour left get `default` ("ok").

Unscripted requests may also fail at random (`random_faults={"429": 0.15}`: a seeded draw per request)
or in bursts (`bursts=Bursts(every_s=10, length_s=2, first_at_s=4)`: every request arriving in a
burst gets a 429 whose Retry-After, in whole seconds, is the time left in the burst when it is answered).

Behaviours: "ok", "429" (Retry-After: `retry_after`, no header when None), "500", "503", "401", "400", "hang" (no answer
for `hang_s`), "malformed" (a body that is not JSON), "truncated" (the reply content cut in half),
"invalid" (a JSON reply that misses every schema field), "prose" (the reply as prose, not JSON).

Example:
    >>> with FakeLLMServer(latency_s=0.01, script={"q3": ["429", "500"]}) as server:
    ...     settings = LLMSettings(model="openai/fake", api_base=server.base_url)
    ...     ...
    ...     server.calls, server.peak_in_flight
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]


@dataclass(frozen=True)
class Bursts:
    """Windows of `length_s` every `every_s` seconds, the first at `first_at_s` after the epoch."""

    every_s: float
    length_s: float
    first_at_s: float = 0.0

    def end_of(self, t: float) -> float | None:
        """The end of the burst that time `t` (since the epoch) falls in, or None."""
        if t < self.first_at_s:
            return None
        phase = (t - self.first_at_s) % self.every_s
        return t - phase + self.length_s if phase < self.length_s else None

    def ends(self, until: float) -> list[float]:
        """Every burst end up to `until` seconds after the epoch."""
        n = int(max(0.0, until - self.first_at_s) // self.every_s) + 1
        return [self.first_at_s + i * self.every_s + self.length_s for i in range(n)]


def _words(text: str) -> int:
    return len(text.split())


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def echo_json(body: dict[str, Any]) -> str:
    """Default responder: a JSON object `{"answer": <first user message>}` (stable per prompt)."""
    return json.dumps({"answer": first_user_text(body)})


def _schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks for: in `response_format`, or spelled out in a message (JSON mode)."""
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    if schema:
        return schema
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str) and "JSON schema:" in content:
            try:
                return json.loads(content.rsplit("JSON schema:", 1)[1].strip())
            except ValueError:
                continue
    return None


def _instance(schema: dict[str, Any], root: dict[str, Any], pick: int) -> Any:
    """A value valid under `schema` (enums, bounds, lengths, $refs), varied by `pick`."""
    if "$ref" in schema:
        return _instance(root.get("$defs", {})[schema["$ref"].rsplit("/", 1)[-1]], root, pick)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][pick % len(schema["enum"])]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _instance(options[0], root, pick)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _instance(sub, root, pick + i) for i, (name, sub) in enumerate(props.items())}
    if kind == "array":
        return [_instance(schema.get("items", {}), root, pick + i) for i in range(max(1, schema.get("minItems", 1)))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 4))
        value = low + pick % (int(high - low) + 1)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return pick % 2 == 0
    text = f"fake statement {pick}"
    return text[: schema.get("maxLength", len(text))]


def schema_reply(body: dict[str, Any]) -> str:
    """A reply valid under the requested schema (varied per prompt), or a short answer without one:
    stands in for any judge or generator, whatever its prompts."""
    text = last_user_text(body)
    pick = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    schema = _schema_of(body)
    if schema is None:
        return f"A fake answer to: {text[:80]}"
    return json.dumps(_instance(schema, schema, pick))


class FakeLLMServer:
    """Threaded fake server; use as a context manager or call start()/stop().

    It shuts itself down after `lifetime_s` even if a test forgets to stop it.
    """

    def __init__(
        self,
        *,
        responder: Responder = echo_json,
        latency_s: float = 0.0,
        script: dict[str, Iterable[str]] | None = None,
        default: str = "ok",
        retry_after: str | None = "1",
        hang_s: float = 30.0,
        lifetime_s: float = 600.0,
        random_faults: dict[str, float] | None = None,
        bursts: Bursts | None = None,
        seed: int = 0,
        token_counter: Callable[[str], int] | None = None,
        batch_delay_s: float = 0.0,
        batch_failures: Iterable[str] = (),
    ) -> None:
        self.responder = responder
        self.latency_s = latency_s
        self.default = default
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.lifetime_s = lifetime_s
        self.random_faults = dict(random_faults or {})
        self.bursts = bursts
        self._rng = random.Random(seed)
        self.epoch = time.monotonic()  # bursts are timed from here; reset_counts() restarts it
        self._script: dict[str, deque[str]] = {k: deque(v) for k, v in (script or {}).items()}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.calls = 0  # requests received
        self.behaviours: Counter[str] = Counter()
        self.calls_by_prompt: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.request_times: dict[str, list[float]] = defaultdict(list)
        self.in_flight = 0
        self.peak_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None
        # usage counts: words by default; a real tokenizer (e.g. tiktoken's) for realistic token counts
        self.token_counter = token_counter
        self.batch_delay_s = batch_delay_s
        self.batch_failures = list(batch_failures)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_lines = 0  # lines answered through batches

    # ----------------------------------------------------------------------------------- control
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeLLMServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)  # port 0: a free port
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        self._stopped.set()  # releases hanging handlers
        if self._timer is not None:
            self._timer.cancel()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def add_script(self, key: str, behaviours: Iterable[str]) -> None:
        with self._lock:
            self._script.setdefault(key, deque()).extend(behaviours)

    def reset_counts(self) -> None:
        with self._lock:
            self.calls = 0
            self.behaviours.clear()
            self.calls_by_prompt.clear()
            self.bodies.clear()
            self.auth_headers.clear()
            self.request_times.clear()
            self.peak_in_flight = 0
            self.epoch = time.monotonic()

    # ---------------------------------------------------------------------------------- internals
    def _next_behaviour(self, body: dict[str, Any]) -> tuple[str, float | None]:
        """The behaviour for this request and, for a burst 429, when its burst ends (monotonic)."""
        text = first_user_text(body)  # the item's prompt: repairs of that item match too
        now = time.monotonic()
        with self._lock:
            self.calls += 1
            self.bodies.append(body)
            self.calls_by_prompt[first_user_text(body)] += 1
            self.request_times[first_user_text(body)].append(now)
            burst_end = None
            for key, queue in self._script.items():
                if key in text and queue:
                    behaviour = queue.popleft()
                    break
            else:
                behaviour = self.default
                end = self.bursts.end_of(now - self.epoch) if self.bursts else None
                draw = self._rng.random()
                if end is not None:
                    behaviour, burst_end = "429", self.epoch + end
                else:
                    for fault, probability in self.random_faults.items():
                        if draw < probability:
                            behaviour = fault
                            break
                        draw -= probability
            self.behaviours[behaviour] += 1
            return behaviour, burst_end

    def _reply(self, body: dict[str, Any], behaviour: str) -> dict[str, Any]:
        out = self.responder(body)
        content, logprobs = (out.get("content", ""), out.get("logprobs")) if isinstance(out, dict) else (out, None)
        finish = "stop"
        if behaviour == "truncated":
            content, finish = content[: max(1, len(content) // 2)], "length"
        elif behaviour == "invalid":
            content = json.dumps({"unexpected": True})
        elif behaviour == "prose":
            content = f"Sure! Here is my answer: {content}"
        count = self.token_counter
        if count is None:
            prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
            count = _words
        else:  # OpenAI's chat format: about 4 tokens per message (role, separators) and 3 to prime the reply
            prompt_words = sum(count(str(m.get("content", ""))) + 4 for m in body.get("messages", [])) + 3
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": finish,
            "message": {"role": "assistant", "content": content},
        }
        if body.get("logprobs") and logprobs is not None:
            choice["logprobs"] = logprobs
        return {
            "id": f"fake-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_words,
                "completion_tokens": count(content),
                "total_tokens": prompt_words + count(content),
            },
        }

    # ------------------------------------------------------------------------------- batch API
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{len(self.files) + len(self.batches)}-{time.monotonic_ns() % 10**9}"

    def create_file(self, content: bytes, filename: str) -> dict[str, Any]:
        with self._lock:
            file_id = self._new_id("file")
            self.files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": filename, "purpose": "batch", "status": "processed"}

    def create_batch(self, request: dict[str, Any]) -> dict[str, Any]:
        content = self.files.get(request.get("input_file_id", ""))
        if content is None:
            raise KeyError(f"no file {request.get('input_file_id')}")
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        with self._lock:
            batch_id = self._new_id("batch")
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": request.get("endpoint"), "errors": None,
                "input_file_id": request["input_file_id"], "completion_window": request.get("completion_window"),
                "status": "in_progress", "output_file_id": None, "error_file_id": None,
                "created_at": int(time.time()), "metadata": request.get("metadata"),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_lines": lines, "_started": time.monotonic(),
            }
        return self.batch_view(batch_id)

    def batch_view(self, batch_id: str) -> dict[str, Any]:
        """The batch as the API shows it now; it completes (answers every line) once its delay passed."""
        with self._lock:
            batch = self.batches[batch_id]
            if batch["status"] == "in_progress":
                share = (time.monotonic() - batch["_started"]) / self.batch_delay_s if self.batch_delay_s else 1.0
                counts = batch["request_counts"]
                if share >= 1.0:
                    self._complete(batch)
                else:
                    counts["completed"] = int(counts["total"] * share)
            return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _complete(self, batch: dict[str, Any]) -> None:
        out, errors = [], []
        for line in batch["_lines"]:
            body = line["body"]
            request_id = f"req-{len(out) + len(errors)}"
            if any(key in first_user_text(body) for key in self.batch_failures):
                errors.append({"id": request_id, "custom_id": line["custom_id"], "response": {
                    "status_code": 500, "request_id": request_id,
                    "body": {"error": {"message": "the server had an error", "type": "server_error"}}},
                    "error": None})
                continue
            self.calls_by_prompt[first_user_text(body)] += 1
            out.append({"id": request_id, "custom_id": line["custom_id"], "error": None,
                        "response": {"status_code": 200, "request_id": request_id, "body": self._reply(body, "ok")}})
        self.batch_lines += len(out)
        batch["status"] = "completed"
        batch["request_counts"] = {"total": len(batch["_lines"]), "completed": len(out), "failed": len(errors)}
        for key, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                file_id = self._new_id("file")
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[key] = file_id

    def cancel_batch(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self.batches[batch_id]
            if batch["status"] == "in_progress":
                batch["status"] = "cancelled"
        return self.batch_view(batch_id)


def _multipart_file(content_type: str, body: bytes) -> tuple[bytes, str]:
    """The `file` part of a multipart/form-data upload: (its bytes, its file name)."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_payload(decode=True) or b"", part.get_filename() or "batch.jsonl"
    raise ValueError("no file part in the upload")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLMServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> None:
        body = {"error": {"message": message, "type": kind, "code": str(status)}}
        self._send(status, json.dumps(body).encode(), headers)

    def _json(self, payload: dict[str, Any]) -> None:
        self._send(200, json.dumps(payload).encode())

    def do_GET(self) -> None:
        fake, path = self.fake, self.path.split("?")[0].rstrip("/")
        parts = path.split("/")
        try:
            if "/batches/" in path:
                self._json(fake.batch_view(parts[-1]))
            elif path.endswith("/content") and "/files/" in path:
                content = fake.files[parts[-2]]
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            elif "/files/" in path:
                file_id = parts[-1]
                self._json({"id": file_id, "object": "file", "bytes": len(fake.files[file_id]),
                            "created_at": int(time.time()), "filename": "batch.jsonl", "purpose": "batch",
                            "status": "processed"})
            else:
                self._error(404, f"no route {self.path}", "not_found")
        except KeyError as exc:
            self._error(404, f"not found: {exc}", "not_found")

    def _batch_post(self, path: str, raw: bytes) -> None:
        fake = self.fake
        try:
            if path.endswith("/files"):
                content, name = _multipart_file(self.headers.get("Content-Type", ""), raw)
                self._json(fake.create_file(content, name))
            elif path.endswith("/cancel"):
                self._json(fake.cancel_batch(path.split("/")[-2]))
            else:
                self._json(fake.create_batch(json.loads(raw or b"{}")))
        except (KeyError, ValueError) as exc:
            self._error(400, f"bad request: {exc}", "invalid_request_error")

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/files") or "/batches" in path:
            self._batch_post(path, raw)
            return
        body = json.loads(raw or b"{}")
        if not path.endswith("/chat/completions"):
            self._error(404, f"no route {self.path}", "not_found")
            return
        behaviour, burst_end = fake._next_behaviour(body)
        with fake._lock:
            fake.auth_headers.append(self.headers.get("Authorization"))
            fake.in_flight += 1
            fake.peak_in_flight = max(fake.peak_in_flight, fake.in_flight)
        try:
            if fake.latency_s:
                fake._stopped.wait(fake.latency_s)
            if behaviour == "429":
                retry_after = fake.retry_after
                if burst_end is not None:  # the time left in the burst now, as a provider's quota reset
                    left = math.ceil(burst_end - time.monotonic())
                    retry_after = str(left) if left > 0 else None
                headers = {"Retry-After": retry_after} if retry_after is not None else None
                self._error(429, "rate limited", "rate_limit_exceeded", headers)
            elif behaviour in ("500", "503"):
                self._error(int(behaviour), "the server had an error", "server_error")
            elif behaviour == "401":
                self._error(401, "Incorrect API key provided", "invalid_request_error")
            elif behaviour == "400":
                self._error(400, "bad request", "invalid_request_error")
            elif behaviour == "hang":
                fake._stopped.wait(fake.hang_s)
                self._error(504, "hung", "timeout")
            elif behaviour == "malformed":
                self._send(200, b'{"id": "x", "choices": [{"message": {"content": "unterminated')
            else:
                self._send(200, json.dumps(fake._reply(body, behaviour)).encode())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer
        finally:
            with fake._lock:
                fake.in_flight -= 1
