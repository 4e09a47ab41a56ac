"""Provider batch APIs through litellm's file and batch functions: one stage's calls go out as one
JSONL file, at the batch price (half the online one at OpenAI), answered within the provider's
window (24 h at most; minutes when the queue is short).

A job is remembered before it is waited for (`<cache root>/batches/<digest of its requests>.json`),
so a killed run picks up the batch it had submitted instead of paying for it twice; the record is
dropped once the replies are read (and cached by the client). Replies are matched by custom id (the
request's cache key); a line the provider failed comes back as an error, which the client retries
online. `generate_as_batch` is what `LLMClient` runs for a stage with `batch: true`: cache hits first,
the budget held per line, the job, then each reply priced, cached and counted like an online call.

Example:
    >>> job = BatchJob(settings, api_key, root, desc="judge correctness stage 1")  # doctest: +SKIP
    >>> replies = await job.run([BatchLine(key, body), ...])  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ragwatch.llm import structured
from ragwatch.llm.backend import load_litellm
from ragwatch.llm.budget import Budget
from ragwatch.llm.request import Request, token_logprobs
from ragwatch.llm.retry import FatalLLMError, describe
from ragwatch.llm.types import Generation, LLMSettings
from ragwatch.progress import Progress

log = logging.getLogger("ragwatch.progress")
client_log = logging.getLogger("ragwatch.llm")  # a batch falling back to online calls is client news
BATCH_PROVIDERS = ("openai", "azure", "vertex_ai", "bedrock", "hosted_vllm", "litellm_proxy", "mistral", "xai")
ENDPOINT = "/v1/chat/completions"
FINISHED = ("completed", "failed", "expired", "cancelled")


class BatchPending(RuntimeError):
    """The batch did not finish within `batch_timeout_s`; it stays submitted and a re-run picks it up."""


@dataclass(frozen=True)
class BatchLine:
    key: str  # the custom id: the request's cache key
    body: dict[str, Any]  # the chat completion request


@dataclass(frozen=True)
class BatchReply:
    body: dict[str, Any] | None  # the chat completion, when the line succeeded
    error: str | None = None


class BatchHost(Protocol):
    """What a batch needs of the client that sends it: `LLMClient`'s public surface for batches."""

    settings: LLMSettings
    budget: Budget | None

    @property
    def cache_root(self) -> Path: ...
    def secret(self) -> str | None: ...
    async def cached(self, request: Request) -> Generation | None: ...
    async def keep(self, request: Request, gen: Generation) -> None: ...
    def count(self, gen: Generation) -> None: ...
    def refuse(self, reason: str, latency_s: float = 0.0) -> Generation: ...
    async def send(self, request: Request) -> Generation: ...
    def settle(self, held: float | None, cost: float) -> None: ...
    def record(self, stage: str, generations: list[Generation], wall_s: float, *, batch: bool = False) -> None: ...


def batch_provider(model: str) -> tuple[str, str]:
    """(the provider's model name, the provider) for a model whose provider has a batch API."""
    name, provider, _, _ = load_litellm().get_llm_provider(model=model)
    if provider not in BATCH_PROVIDERS:
        raise ValueError(f"batch: true needs a provider with a batch API ({', '.join(BATCH_PROVIDERS)}); "
                         f"{model!r} is served by {provider!r}: set batch: false for it")
    return name, provider


class BatchJob:
    """One stage's requests as one provider batch: submit (or resume), wait with progress, read back."""

    def __init__(self, settings: LLMSettings, api_key: str | None, root: Path, desc: str) -> None:
        self.settings = settings
        self.model_name, self.provider = batch_provider(settings.model)
        self.desc = desc
        self.root = root / "batches"
        self.auth: dict[str, Any] = {"custom_llm_provider": self.provider}
        if settings.api_base:
            self.auth["api_base"] = settings.api_base
        if api_key:
            self.auth["api_key"] = api_key
        self.batch_id: str | None = None
        self.resumed = False

    def line(self, key: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> BatchLine:
        return BatchLine(key, {"model": self.model_name, "messages": messages, **params})

    # ------------------------------------------------------------------------------------- run
    async def run(self, lines: list[BatchLine], progress: Progress | None = None) -> dict[str, BatchReply]:
        """Replies by custom id for every line (an error reply for a line the batch did not answer);
        `progress`: a bar shared with other work to advance (else one of its own)."""
        state = self._state_path(lines)
        batch = await self._resume(state)
        if batch is None:
            batch = await self._submit(lines, state)
        batch = await self._wait(batch, len(lines), progress)
        if batch.status != "completed":
            self.forget(lines)
            return {ln.key: BatchReply(None, f"batch {batch.id} {batch.status}") for ln in lines}
        replies = await self._read(batch)
        for ln in lines:
            replies.setdefault(ln.key, BatchReply(None, f"batch {batch.id} returned no line for this request"))
        return replies

    def forget(self, lines: list[BatchLine]) -> None:
        """Drop the record of the job (after its replies are cached)."""
        self._state_path(lines).unlink(missing_ok=True)

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


async def generate_as_batch(
    client: BatchHost, requests: list[Request], desc: str, progress: Progress | None = None
) -> list[Generation]:
    """`client`'s requests not in its cache as one provider batch, within its budget and counted in its
    usage; lines the batch failed, or whose reply does not fit the schema, are retried online."""
    from ragwatch.llm.pricing import call_cost, count_tokens

    started = time.perf_counter()
    settings = client.settings
    out: list[Generation | None] = [None] * len(requests)
    todo: dict[str, list[int]] = {}
    for i, request in enumerate(requests):
        gen = await client.cached(request)
        if gen is not None:
            out[i] = gen
        else:
            todo.setdefault(request.key, []).append(i)
    if todo:
        job = BatchJob(settings, batch_api_key(settings), client.cache_root, desc)
        lines, held = [], {}
        for key, where in todo.items():
            request = requests[where[0]]
            if client.budget is not None:
                projected = call_cost(settings.model, count_tokens(settings.model, request.messages),
                                      float(request.params.get("max_tokens") or settings.max_tokens), batch=True)
                held[key] = client.budget.reserve(projected)
                if held[key] is None:
                    for i in where:
                        out[i] = client.refuse(client.budget.reason())
                    continue
            lines.append(job.line(key, request.messages, request.params))
        pending = False
        try:
            replies = await job.run(lines, progress) if lines else {}
        except BatchPending as exc:
            pending = True
            replies = {ln.key: BatchReply(None, str(exc)) for ln in lines}
        except Exception as exc:  # the batch API refused the job: every line goes online
            reason = f"batch not submitted: {describe(exc, client.secret())}"
            client_log.warning("%s: %s; sending its %d calls online", desc, reason, len(lines))
            replies = {ln.key: BatchReply(None, reason) for ln in lines}

        async def settle(ln: Any) -> None:
            request, where = requests[todo[ln.key][0]], todo[ln.key]
            gen = reply_generation(settings, replies[ln.key], request, started)
            client.settle(held.get(ln.key), gen.cost_usd if gen is not None else 0.0)
            if gen is not None:
                await client.keep(request, gen)
                client.count(gen)
            elif not pending:  # a failed line, or a reply that does not fit the schema: once more online
                gen = await client.send(request)  # counts itself
            else:  # still running at the provider: no second payment now, a re-run picks it up
                gen = client.refuse(replies[ln.key].error or "batch pending", time.perf_counter() - started)
            out[where[0]] = gen
            for i in where[1:]:  # identical requests: one line served them all
                out[i] = gen.model_copy(update={"cached": True, "cost_usd": 0.0}) if gen.ok else gen
                client.count(out[i])

        await asyncio.gather(*(settle(ln) for ln in lines))
        if not pending:
            job.forget(lines)
    done = [g for g in out if g is not None]
    client.record(desc, done, time.perf_counter() - started, batch=True)
    return done


def reply_generation(settings: LLMSettings, reply: BatchReply, request: Request, started: float) -> Generation | None:
    """A generation from one batch line, priced at the batch rate; None when it needs an online retry."""
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
    """The key a batch job sends: from `api_key_env`, a placeholder for a keyless server, else litellm's own."""
    s = settings
    if s.api_key_env:
        key = os.environ.get(s.api_key_env)
        if not key:
            raise FatalLLMError(f"no API key for {s.model!r}: set the environment variable named by "
                                f"api_key_env ({s.api_key_env})")
        return key
    return "not-needed" if s.api_base else None
