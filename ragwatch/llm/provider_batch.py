"""Provider batch jobs: one way `LLMClient` sends a stage. The stage's uncached calls go out as one
JSONL file through litellm's file and batch functions, at the batch price (half the online one at
OpenAI), answered within the provider's window (24 h at most; minutes when the queue is short).

The client keeps what it does for every call (cache, budget, usage, the online retry); a
`ProviderBatch` only turns requests into a job and the job's replies into generations:
`send(requests)` gives each request's key a priced `Generation`, or the reason it has none, and
`forget()` drops the job's record once the client has cached the replies.

A job is remembered before it is waited for (`<cache root>/batches/<digest of its requests>.json`),
so a killed run picks up the job it had submitted instead of paying for it twice. Replies are
matched by custom id (the request's cache key); a line the provider failed, or whose reply does not
fit the schema, comes back as a reason, which the client retries online.

Example:
    >>> sender = ProviderBatch(settings, cache_root, desc="judge correctness stage 1")  # doctest: +SKIP
    >>> outcome = await sender.send(requests, started=time.perf_counter())  # doctest: +SKIP
    >>> outcome.replies[requests[0].key]  # a Generation, or why the line needs an online call  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragwatch.llm import structured
from ragwatch.llm.backend import load_litellm
from ragwatch.llm.request import Request, token_logprobs
from ragwatch.llm.retry import FatalLLMError, describe
from ragwatch.llm.types import Generation, LLMSettings
from ragwatch.progress import Progress

log = logging.getLogger("ragwatch.progress")
client_log = logging.getLogger("ragwatch.llm")  # a job falling back to online calls is client news
BATCH_PROVIDERS = ("openai", "azure", "vertex_ai", "bedrock", "hosted_vllm", "litellm_proxy", "mistral", "xai")
ENDPOINT = "/v1/chat/completions"
FINISHED = ("completed", "failed", "expired", "cancelled")


class BatchPending(RuntimeError):
    """The job did not finish within `batch_timeout_s`; it stays submitted and a re-run picks it up."""


@dataclass(frozen=True)
class BatchLine:
    key: str  # the custom id: the request's cache key
    body: dict[str, Any]  # the chat completion request


@dataclass(frozen=True)
class BatchReply:
    body: dict[str, Any] | None  # the chat completion, when the line succeeded
    error: str | None = None


@dataclass
class BatchOutcome:
    """What a job gave back: per request key a priced `Generation`, or the reason there is none."""

    replies: dict[str, Generation | str] = field(default_factory=dict)
    pending: bool = False  # still running at the provider: no online retry now, a re-run collects it


def batch_provider(model: str) -> tuple[str, str]:
    """(the provider's model name, the provider) for a model whose provider has a batch API."""
    name, provider, _, _ = load_litellm().get_llm_provider(model=model)
    if provider not in BATCH_PROVIDERS:
        raise ValueError(f"batch: true needs a provider with a batch API ({', '.join(BATCH_PROVIDERS)}); "
                         f"{model!r} is served by {provider!r}: set batch: false for it")
    return name, provider


class ProviderBatch:
    """One stage's requests as one provider batch job: submit (or resume), wait with progress, read back.
    Constructing it checks the provider and the key (a `ValueError` / `FatalLLMError` names the fix)."""

    def __init__(self, settings: LLMSettings, root: Path, desc: str) -> None:
        self.settings = settings
        self.model_name, self.provider = batch_provider(settings.model)
        self.desc = desc
        self.root = root / "batches"
        api_key = batch_api_key(settings)
        self.secret = api_key if settings.api_key_env else None  # scrubbed from error messages
        self.auth: dict[str, Any] = {"custom_llm_provider": self.provider}
        if settings.api_base:
            self.auth["api_base"] = settings.api_base
        if api_key:
            self.auth["api_key"] = api_key
        self.batch_id: str | None = None
        self.resumed = False
        self._lines: list[BatchLine] = []

    # ------------------------------------------------------------------- what the client calls
    async def send(self, requests: Sequence[Request], progress: Progress | None = None, *,
                   started: float | None = None) -> BatchOutcome:
        """Every request (one per cache key) as a line of one job; never raises for the job: a job the
        API refused gives every line its reason. `progress`: a bar shared with other work to advance
        (else one of its own); `started`: when the stage began, for the replies' latency."""
        started = time.perf_counter() if started is None else started
        self._lines = [BatchLine(r.key, {"model": self.model_name, "messages": r.messages, **r.params})
                       for r in requests]
        outcome = BatchOutcome()
        try:
            replies = await self._run(self._lines, progress) if self._lines else {}
        except BatchPending as exc:
            outcome.pending = True
            replies = {ln.key: BatchReply(None, str(exc)) for ln in self._lines}
        except Exception as exc:  # the batch API refused the job: every line goes online
            reason = f"batch not submitted: {describe(exc, self.secret)}"
            client_log.warning("%s: %s; sending its %d calls online", self.desc, reason, len(self._lines))
            replies = {ln.key: BatchReply(None, reason) for ln in self._lines}
        for request in requests:
            reply = replies[request.key]
            gen = reply_generation(self.settings, reply, request, started)
            outcome.replies[request.key] = gen if gen is not None else (reply.error or "an unusable reply")
        return outcome

    def forget(self) -> None:
        """Drop the record of the job (once its replies are cached)."""
        self._state_path(self._lines).unlink(missing_ok=True)

    # --------------------------------------------------------------------------------- the job
    async def _run(self, lines: list[BatchLine], progress: Progress | None) -> dict[str, BatchReply]:
        """Replies by custom id for every line (an error reply for a line the job did not answer)."""
        state = self._state_path(lines)
        batch = await self._resume(state)
        if batch is None:
            batch = await self._submit(lines, state)
        batch = await self._wait(batch, len(lines), progress)
        if batch.status != "completed":
            state.unlink(missing_ok=True)
            return {ln.key: BatchReply(None, f"batch {batch.id} {batch.status}") for ln in lines}
        replies = await self._read(batch)
        for ln in lines:
            replies.setdefault(ln.key, BatchReply(None, f"batch {batch.id} returned no line for this request"))
        return replies

    def _state_path(self, lines: list[BatchLine]) -> Path:
        digest = hashlib.sha256("\n".join(sorted(ln.key for ln in lines)).encode()).hexdigest()[:32]
        return self.root / f"{digest}.json"

    async def _call(self, name: str, **kwargs: Any) -> Any:
        function = getattr(load_litellm(), name)
        return await asyncio.to_thread(function, **kwargs, **self.auth)

    async def _resume(self, state: Path) -> Any:
        if not state.is_file():
            return None
        try:
            batch_id = json.loads(state.read_text(encoding="utf-8"))["batch_id"]
            batch = await self._call("retrieve_batch", batch_id=batch_id)
        except Exception as exc:  # gone at the provider: submit anew
            log.info("%s: stored batch not retrievable (%s); submitting a new one", self.desc,
                     describe(exc, self.auth.get("api_key")))
            return None
        if batch.status in ("failed", "expired", "cancelled"):
            return None
        self.batch_id, self.resumed = batch.id, True
        log.info("%s: resuming batch %s (%s), submitted by an earlier run", self.desc, batch.id, batch.status)
        return batch

    async def _submit(self, lines: list[BatchLine], state: Path) -> Any:
        data = "".join(json.dumps({"custom_id": ln.key, "method": "POST", "url": ENDPOINT, "body": ln.body},
                                  ensure_ascii=False) + "\n" for ln in lines).encode()
        uploaded = await self._call("create_file", file=("ragwatch-batch.jsonl", data), purpose="batch")
        batch = await self._call("create_batch", completion_window="24h", endpoint=ENDPOINT,
                                 input_file_id=uploaded.id, metadata={"ragwatch_stage": self.desc[:500]})
        self.batch_id = batch.id
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"batch_id": batch.id, "input_file_id": uploaded.id, "model": self.settings.model,
                                     "stage": self.desc, "requests": len(lines), "created": time.time()}),
                         encoding="utf-8")
        log.info("%s: submitted batch %s with %d requests", self.desc, batch.id, len(lines))
        return batch

    async def _wait(self, batch: Any, total: int, shared: Progress | None) -> Any:
        started = time.monotonic()
        shown, status = 0, None
        with nullcontext(shared) if shared is not None else Progress(total, f"{self.desc} (batch)") as bar:
            while True:
                counts = batch.request_counts
                done = (getattr(counts, "completed", 0) or 0) + (getattr(counts, "failed", 0) or 0) if counts else 0
                if done > shown:
                    bar.update(done - shown)
                    shown = done
                if batch.status != status:
                    status = batch.status
                    log.info("%s: batch %s %s: %d of %d answered, %d failed", self.desc, batch.id, status,
                             getattr(counts, "completed", 0) or 0, total, getattr(counts, "failed", 0) or 0)
                if batch.status in FINISHED:
                    return batch
                if time.monotonic() - started > self.settings.batch_timeout_s:
                    raise BatchPending(f"batch {batch.id} still {batch.status} after "
                                       f"{self.settings.batch_timeout_s:g} s; a re-run picks it up")
                await asyncio.sleep(self.settings.batch_poll_s)
                batch = await self._call("retrieve_batch", batch_id=batch.id)

    async def _read(self, batch: Any) -> dict[str, BatchReply]:
        replies: dict[str, BatchReply] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self._call("file_content", file_id=file_id)
            for raw in content.content.decode("utf-8").splitlines():
                if raw.strip():
                    key, reply = _parse_line(raw)
                    if key is not None:
                        replies[key] = reply
        return replies


def _parse_line(raw: str) -> tuple[str | None, BatchReply]:
    try:
        line = json.loads(raw)
    except ValueError:
        return None, BatchReply(None, "unreadable line")
    response = line.get("response") or {}
    body = response.get("body")
    if line.get("error") or response.get("status_code") != 200 or not isinstance(body, dict):
        problem = line.get("error") or (body.get("error") if isinstance(body, dict) else None)
        message = (problem or {}).get("message") if isinstance(problem, dict) else problem
        return line.get("custom_id"), BatchReply(None, f"batch line failed ({response.get('status_code')}): "
                                                       f"{message or 'no reply'}")
    return line.get("custom_id"), BatchReply(body)


def reply_generation(settings: LLMSettings, reply: BatchReply, request: Request, started: float) -> Generation | None:
    """A generation from one job line, priced at the batch rate; None when it needs an online retry."""
    from ragwatch.llm.pricing import call_cost

    if reply.body is None:
        return None
    try:
        choice = reply.body["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
    except (KeyError, IndexError, TypeError):
        return None
    parsed = None
    if request.schema is not None:
        parsed, problem = structured.parse_reply(text, request.schema)
        if problem is not None:
            return None
    usage = reply.body.get("usage") or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return Generation(model=settings.model, text=text, parsed=parsed,
                      logprobs=token_logprobs(choice.get("logprobs")), prompt_tokens=prompt,
                      completion_tokens=completion, latency_s=time.perf_counter() - started,
                      cost_usd=call_cost(settings.model, prompt, completion, batch=True))


def batch_api_key(settings: LLMSettings) -> str | None:
    """The key a job sends: from `api_key_env`, a placeholder for a keyless server, else litellm's own."""
    s = settings
    if s.api_key_env:
        key = os.environ.get(s.api_key_env)
        if not key:
            raise FatalLLMError(f"no API key for {s.model!r}: set the environment variable named by "
                                f"api_key_env ({s.api_key_env})")
        return key
    return "not-needed" if s.api_base else None
