"""Provider batch APIs through litellm's file and batch functions: one stage's calls go out as one
JSONL file, at the batch price (half the online one at OpenAI), answered within the provider's
window (24 h at most; minutes when the queue is short).

A job is remembered before it is waited for (`<cache root>/batches/<digest of its requests>.json`),
so a killed run picks up the batch it had submitted instead of paying for it twice; the record is
dropped once the replies are read (and cached by the client). Replies are matched by custom id (the
request's cache key); a line the provider failed comes back as an error, which the client retries
online.

Example:
    >>> job = BatchJob(settings, api_key, root, desc="judge correctness stage 1")  # doctest: +SKIP
    >>> replies = await job.run([BatchLine(key, body), ...])  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragwatch.llm.backend import load_litellm
from ragwatch.llm.retry import describe
from ragwatch.llm.types import LLMSettings
from ragwatch.progress import Progress

log = logging.getLogger("ragwatch.progress")
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
