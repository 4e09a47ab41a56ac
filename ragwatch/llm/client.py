"""`LLMClient`: the one door for every LLM call (structured output, retries, cache, usage, cost).

Example:
    >>> from typing import Literal
    >>> from pydantic import BaseModel
    >>> class Verdict(BaseModel):
    ...     verdict: Literal["yes", "no"]
    >>> client = LLMClient(LLMSettings(model="local/smollm2-135m-instruct"))
    >>> gen = client.generate("Is the sky blue? Answer yes or no.", schema=Verdict)
    >>> gen.parsed.verdict if gen.ok else gen.error
    'yes'
    >>> gens = client.generate_many(["q1", "q2"], schema=Verdict, desc="judge")  # never raises per item
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from collections.abc import Coroutine, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ragwatch.llm import structured
from ragwatch.llm.backend import load_litellm
from ragwatch.llm.budget import Budget
from ragwatch.llm.cache import GenerationCache, cache_key, default_cache_root
from ragwatch.llm.history import StageRecord, record_stage
from ragwatch.llm.limiter import Limiter
from ragwatch.llm.models import is_local, local_name
from ragwatch.llm.retry import (
    FatalLLMError,
    backoff_s,
    classify,
    describe,
    is_auth_error,
    retry_after_s,
)
from ragwatch.llm.types import Generation, LLMSettings, TokenLogprob, Usage
from ragwatch.progress import Progress

log = logging.getLogger("ragwatch.llm")

Prompt = str | Sequence[dict[str, Any]]
StageItem = tuple[Prompt, "type[BaseModel] | None", "str | None", dict[str, Any]]  # prompt, schema, system, options
T = TypeVar("T")

OVERRIDES = frozenset(
    {"temperature", "max_tokens", "seed", "logprobs", "top_logprobs", "top_p", "stop", "mock_response"}
)


@dataclass
class _Request:
    messages: list[dict[str, Any]]
    schema: type[BaseModel] | None
    params: dict[str, Any]
    mock_response: Any
    key: str


@dataclass
class _Batch:
    """State shared by the items of one batch: the flow control and a fatal-error stop."""

    limiter: Limiter
    fatal: list[str] = field(default_factory=list)


class LLMClient:
    """Calls one model (any litellm model string, or `local/<name>` in process) with retries,
    structured output and repair, a persistent cache, bounded concurrency and usage accounting."""

    def __init__(self, settings: LLMSettings | None = None) -> None:
        self.settings = settings or LLMSettings()
        load_litellm()  # its import takes seconds: here, not on the event loop inside the first call
        self.is_local = is_local(self.settings.model)
        if self.is_local:
            from ragwatch.llm import local
            from ragwatch.llm.models import get_model

            name = local_name(self.settings.model)
            get_model(name)  # a typo fails here, naming the choices
            local.register()
            local.reserve(name, self.settings.concurrency)  # the model decodes this many calls together
        self.usage = Usage(model=self.settings.model)
        self._usage_lock = threading.Lock()
        self._cache: GenerationCache | None = None
        self._root = Path(self.settings.cache_dir).expanduser() if self.settings.cache_dir else default_cache_root()
        if self.settings.cache:
            self._cache = GenerationCache(self._root / "llm")
        self.budget = Budget(self.settings.budget_usd) if self.settings.budget_usd else None
        # the in-process model decodes up to `concurrency` calls together (ragwatch/llm/batched.py)
        self.max_concurrency = max(1, self.settings.concurrency)
        # one flow control per event loop, shared by every call of this client on it (a rate limit
        # and the rpm/tpm budget span batches); asyncio futures cannot cross loops
        self._limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Limiter] = weakref.WeakKeyDictionary()
        self.last_limiter: Limiter | None = None  # of the last call or batch, for inspection

    def _limiter(self) -> Limiter:
        loop = asyncio.get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            s = self.settings
            limiter = self._limiters[loop] = Limiter(self.max_concurrency, rpm=s.rpm, tpm=s.tpm)
        self.last_limiter = limiter
        return limiter

    # ----------------------------------------------------------------------------------- public API
    def generate(
        self,
        prompt: Prompt,
        *,
        schema: type[BaseModel] | None = None,
        system: str | None = None,
        stage: str | None = None,
        **overrides: Any,
    ) -> Generation:
        """One call: a `Generation` that is ok, or failed with `error` (and `raw` when a reply came).
        `stage`: a usage-history label (ragwatch/llm/history.py), as for `generate_many`."""
        return _run_sync(self.agenerate(prompt, schema=schema, system=system, stage=stage, **overrides))

    async def agenerate(
        self,
        prompt: Prompt,
        *,
        schema: type[BaseModel] | None = None,
        system: str | None = None,
        stage: str | None = None,
        **overrides: Any,
    ) -> Generation:
        request = self._request(prompt, schema, system, overrides)
        started = time.perf_counter()
        gen = await self._generate(request, _Batch(self._limiter()))
        if stage:
            self._record(stage, [gen], time.perf_counter() - started)
        return gen

    def generate_many(
        self,
        prompts: Sequence[Prompt],
        *,
        schema: type[BaseModel] | None = None,
        desc: str | Progress | None = None,
        system: str | None = None,
        stage: str | None = None,
        **overrides: Any,
    ) -> list[Generation]:
        """Many calls, `settings.concurrency` in flight, results in input order; a failing item
        becomes a failed `Generation`, it never raises. Bad arguments raise before any call.
        `desc`: the progress bar's label, or a `Progress` shared with other batches to advance.
        `stage`: the calls' label in the usage history (default: `desc` when it is a label)."""
        return _run_sync(self.agenerate_many(prompts, schema=schema, desc=desc, system=system, stage=stage,
                                             **overrides))

    async def agenerate_many(
        self,
        prompts: Sequence[Prompt],
        *,
        schema: type[BaseModel] | None = None,
        desc: str | Progress | None = None,
        system: str | None = None,
        stage: str | None = None,
        **overrides: Any,
    ) -> list[Generation]:
        if isinstance(prompts, str):
            raise TypeError("generate_many takes a list of prompts; for one prompt call generate()")
        requests = [self._request(p, schema, system, overrides) for p in prompts]
        return await self._run_requests(requests, desc, stage)

    def generate_stage(
        self, items: Sequence[StageItem], *, desc: str | Progress | None = None, stage: str | None = None
    ) -> list[Generation]:
        """Calls that each carry their own (prompt, schema, system, options), in input order, as
        `generate_many` runs them; with `batch: true` all of them go out as one provider batch."""
        requests = [self._request(prompt, schema, system, dict(options)) for prompt, schema, system, options in items]
        return _run_sync(self._run_requests(requests, desc, stage))

    async def _run_requests(
        self, requests: list[_Request], desc: str | Progress | None, stage: str | None
    ) -> list[Generation]:
        label = stage or (desc if isinstance(desc, str) else None)
        if self.settings.batch and requests and all(r.mock_response is None for r in requests):
            shared = desc if isinstance(desc, Progress) else None
            return await self._generate_as_batch(requests, label or self.settings.model, shared)
        batch = _Batch(self._limiter())
        batch.limiter.new_batch()
        results: list[Generation | None] = [None] * len(requests)
        started = time.perf_counter()
        shared = isinstance(desc, Progress)  # one bar across batches: its owner closes it
        with nullcontext(desc) if shared else Progress(len(requests), desc or self.settings.model) as bar:

            async def one(i: int, request: _Request) -> None:
                try:
                    results[i] = await self._generate(request, batch)
                except Exception as exc:  # a bug must not sink the batch: record it on the item
                    results[i] = self._failed(f"unexpected error: {describe(exc, self._api_key())}", 0.0)
                    self._account(results[i])
                bar.update(1)

            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        done = [r for r in results if r is not None]
        if label:
            self._record(label, done, time.perf_counter() - started)
        return done

    async def _generate_as_batch(
        self, requests: list[_Request], desc: str, progress: Progress | None = None
    ) -> list[Generation]:
        """The requests not in the cache as one provider batch (ragwatch/llm/batch.py); lines the batch
        failed, or whose reply does not fit the schema, are retried online."""
        from ragwatch.llm.batch import BatchJob, BatchPending, BatchReply
        from ragwatch.llm.pricing import call_cost, count_tokens

        started = time.perf_counter()
        out: list[Generation | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            hit = await asyncio.to_thread(self._cache.get, request.key) if self._cache is not None else None
            gen = self._from_cache(hit, request, started) if hit is not None else None
            if gen is not None:
                out[i] = gen
                self._account(gen)
            else:
                todo.setdefault(request.key, []).append(i)
        if todo:
            job = BatchJob(self.settings, self._batch_api_key(), self._root, desc)
            lines, held = [], {}
            for key, where in todo.items():
                request = requests[where[0]]
                if self.budget is not None:
                    projected = call_cost(self.settings.model, count_tokens(self.settings.model, request.messages),
                                          float(request.params.get("max_tokens") or self.settings.max_tokens),
                                          batch=True)
                    held[key] = self.budget.reserve(projected)
                    if held[key] is None:
                        for i in where:
                            out[i] = self._failed(self.budget.reason(), 0.0)
                            self._account(out[i])
                        continue
                lines.append(job.line(key, request.messages, request.params))
            pending = False
            try:
                replies = await job.run(lines, progress) if lines else {}
            except BatchPending as exc:
                pending = True
                replies = {ln.key: BatchReply(None, str(exc)) for ln in lines}
            except Exception as exc:  # the batch API refused the job: every line goes online
                reason = f"batch not submitted: {describe(exc, self._api_key())}"
                log.warning("%s: %s; sending its %d calls online", desc, reason, len(lines))
                replies = {ln.key: BatchReply(None, reason) for ln in lines}
            online = _Batch(self._limiter())

            async def settle(ln: Any) -> None:
                request, where = requests[todo[ln.key][0]], todo[ln.key]
                gen = self._from_batch_reply(replies[ln.key], request, started)
                self._settle(held.get(ln.key), gen.cost_usd if gen is not None else 0.0)
                if gen is not None:
                    if self._cache is not None:
                        await asyncio.to_thread(self._cache.put, request.key,
                                                gen.model_dump(mode="json", exclude={"parsed"}))
                    self._account(gen)
                elif not pending:  # a failed line, or a reply that does not fit the schema: once more online
                    gen = await self._generate(request, online)  # accounts for itself
                else:  # still running at the provider: no second payment now, a re-run picks it up
                    gen = self._failed(replies[ln.key].error or "batch pending", time.perf_counter() - started)
                    self._account(gen)
                out[where[0]] = gen
                for i in where[1:]:  # identical requests: one line served them all
                    out[i] = gen.model_copy(update={"cached": True, "cost_usd": 0.0}) if gen.ok else gen
                    self._account(out[i])

            await asyncio.gather(*(settle(ln) for ln in lines))
            if not pending:
                job.forget(lines)
        done = [g for g in out if g is not None]
        self._record(desc, done, time.perf_counter() - started, batch=True)
        return done

    def _from_batch_reply(self, reply: Any, request: _Request, started: float) -> Generation | None:
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
        return Generation(model=self.settings.model, text=text, parsed=parsed,
                          logprobs=_token_logprobs(choice.get("logprobs")), prompt_tokens=prompt,
                          completion_tokens=completion, latency_s=time.perf_counter() - started,
                          cost_usd=call_cost(self.settings.model, prompt, completion, batch=True))

    def _batch_api_key(self) -> str | None:
        s = self.settings
        if s.api_key_env:
            key = os.environ.get(s.api_key_env)
            if not key:
                raise FatalLLMError(f"no API key for {s.model!r}: set the environment variable named by "
                                    f"api_key_env ({s.api_key_env})")
            return key
        return "not-needed" if s.api_base else None

    def _record(self, stage: str, generations: list[Generation], wall_s: float, batch: bool = False) -> None:
        """One usage-history line for this stage (ragwatch/llm/history.py): what estimates learn from."""
        usage = Usage(model=self.settings.model)
        for gen in generations:
            usage.add(gen)
        record_stage(StageRecord.of(self.settings.model, stage, usage, wall_s, batch))  # one history per machine

    def usage_since(self, mark: Usage) -> Usage:
        """Usage accrued after `mark = client.usage.model_copy()`: the record of one batch."""
        return self.usage.since(mark)

    def perplexity(self, text: str) -> float:
        """Perplexity of `text` under the model (exp of the mean negative token log-likelihood).

        Only the in-process provider can score a given text correctly; API providers cannot.
        """
        if not self.is_local:
            raise NotImplementedError(
                f"perplexity needs a provider that can score a given text; {self.settings.model!r} cannot. "
                "Use a local model, e.g. LLMSettings(model='local/smollm2-135m-instruct')."
            )
        from ragwatch.llm import local

        return local.perplexity(local_name(self.settings.model), text)

    # ------------------------------------------------------------------------------------ requests
    def _request(
        self, prompt: Prompt, schema: type[BaseModel] | None, system: str | None, overrides: dict[str, Any]
    ) -> _Request:
        overrides = dict(overrides)  # shared by every item of a batch: never mutate the caller's
        unknown = set(overrides) - OVERRIDES
        if unknown:
            raise TypeError(f"unknown generation option(s) {sorted(unknown)}; allowed: {sorted(OVERRIDES)}")
        if schema is not None and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(f"schema must be a pydantic BaseModel class, got {schema!r}")
        messages = _messages(prompt)
        s = self.settings
        params: dict[str, Any] = {"temperature": s.temperature, "max_tokens": s.max_tokens}
        if s.seed is not None:
            params["seed"] = s.seed
        if s.logprobs or s.top_logprobs:
            params["logprobs"] = True
            if s.top_logprobs:
                params["top_logprobs"] = s.top_logprobs
        params.update(s.extra)
        mock = overrides.pop("mock_response", None)
        params.update({k: v for k, v in overrides.items() if v is not None})
        if params.get("top_logprobs"):
            params["logprobs"] = True
        if schema is not None:
            mode = structured.output_mode(s.model)
            params["response_format"] = structured.response_format(schema, mode)
            if mode == "json_object":
                hint = structured.schema_hint(schema)
                system = f"{system}\n\n{hint}" if system else hint
        if system:
            messages = [{"role": "system", "content": system}, *messages]
        key = cache_key(
            {
                "model": s.model,
                "api_base": s.api_base,
                "messages": messages,
                "params": params,
                "schema": structured.schema_json(schema) if schema is not None else None,
                # a mocked reply is part of what the "model" said, so it must be part of the key
                "mock_response": repr(mock) if mock is not None else None,
            }
        )
        return _Request(messages, schema, params, mock, key)

    def _api_key(self) -> str | None:
        env = self.settings.api_key_env
        return os.environ.get(env) if env else None

    def _litellm_kwargs(self, messages: list[dict[str, Any]], request: _Request) -> dict[str, Any]:
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            **request.params,
            "num_retries": 0,
            "max_retries": 0,
        }  # retries are ours, not litellm's
        if not self.is_local:
            kwargs["timeout"] = s.timeout_s
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if request.mock_response is not None:
            kwargs["mock_response"] = request.mock_response
            return kwargs
        if s.api_key_env:
            key = os.environ.get(s.api_key_env)
            if not key:
                raise FatalLLMError(
                    f"no API key for {s.model!r}: set the environment variable named by api_key_env "
                    f"({s.api_key_env}) or a ZenML secret that exports it"
                )
            kwargs["api_key"] = key
        elif s.api_base and not self.is_local:
            kwargs["api_key"] = "not-needed"  # OpenAI-compatible local servers take any key
        return kwargs

    # --------------------------------------------------------------------------------- one item
    async def _generate(self, request: _Request, batch: _Batch) -> Generation:
        started = time.perf_counter()
        if self._cache is not None:
            hit = await asyncio.to_thread(self._cache.get, request.key)  # keep the event loop free
            if hit is not None:
                gen = self._from_cache(hit, request, started)
                if gen is not None:
                    self._account(gen)
                    return gen
        gen = await self._call_and_validate(request, batch, started)
        if gen.ok and self._cache is not None:
            await asyncio.to_thread(self._cache.put, request.key, gen.model_dump(mode="json", exclude={"parsed"}))
        self._account(gen)
        return gen

    def _from_cache(self, hit: dict[str, Any], request: _Request, started: float) -> Generation | None:
        gen = Generation.model_validate(hit)
        if request.schema is not None:
            parsed, problem = structured.parse_reply(gen.text, request.schema)
            if problem is not None:  # the schema changed shape under the same name: ask again
                return None
            gen.parsed = parsed
        gen.cached = True
        gen.cost_usd = 0.0
        gen.latency_s = time.perf_counter() - started
        return gen

    async def _call_and_validate(self, request: _Request, batch: _Batch, started: float) -> Generation:
        messages = list(request.messages)
        totals = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "retries": 0, "sent": 0}
        repairs = 0
        while True:
            response, error = await self._call_with_retries(messages, request, batch, totals)
            if error is not None:
                return self._failed(error, time.perf_counter() - started, repairs=repairs, **totals)
            text, logprobs, finish = _reply(response)
            if request.schema is None:
                return self._ok(text, None, logprobs, started, repairs, totals)
            parsed, problem = structured.parse_reply(text, request.schema)
            if problem is None:
                return self._ok(text, parsed, logprobs, started, repairs, totals)
            if finish == "length":
                problem += " (the reply was cut at max_tokens; raise max_tokens or bound the schema)"
            if repairs >= self.settings.max_repairs:
                return self._failed(
                    f"invalid structured output after {repairs} repair(s): {problem}",
                    time.perf_counter() - started,
                    raw=text,
                    repairs=repairs,
                    **totals,
                )
            repairs += 1
            messages = messages + structured.repair_messages(text, problem)

    async def _call_with_retries(
        self, messages: list[dict[str, Any]], request: _Request, batch: _Batch, totals: dict[str, Any]
    ) -> tuple[Any, str | None]:
        s = self.settings
        secret = self._api_key()
        tokens = _token_estimate(messages, request.params) if s.tpm else 0.0
        # a repair continues an item already under way: like a retry, it goes ahead of new items
        continuing = len(messages) > len(request.messages)
        for attempt in range(s.max_retries + 1):
            ticket = held = None
            try:
                kwargs = self._litellm_kwargs(messages, request)
                ticket = await batch.limiter.acquire(tokens, retry=continuing or attempt > 0)
                # checked after the wait for a slot: items queued behind a fatal one are not sent
                if batch.fatal:
                    batch.limiter.release(ticket, "error", tokens_used=0)
                    return None, f"not attempted: an earlier item failed fatally ({batch.fatal[0]})"
                if self.budget is not None:
                    held = self.budget.reserve(self._projected_cost(messages, request))
                    if held is None:
                        batch.limiter.release(ticket, "error", tokens_used=0)
                        return None, self.budget.reason()
                totals["sent"] += 1
                response = await self._acompletion(kwargs)
            except asyncio.CancelledError:
                if ticket is not None:
                    batch.limiter.release(ticket, "error")
                self._settle(held, 0.0)
                raise
            except Exception as exc:
                self._settle(held, 0.0)
                kind = classify(exc)
                reason = describe(exc, secret)
                wait = retry_after_s(exc)
                if ticket is not None:
                    outcome = "rate_limit" if kind == "rate_limit" else "error"
                    batch.limiter.release(ticket, outcome, retry_after_s=wait)
                if kind == "fatal":
                    if is_auth_error(exc):
                        reason = (
                            f"authentication failed for {s.model!r}: set the environment variable named "
                            f"by api_key_env ({s.api_key_env or 'unset in the LLM settings'}) to a valid "
                            f"key. {reason}"
                        )
                    if request.mock_response is None:  # a mocked error must not stop real items
                        batch.fatal.append(reason)
                    return None, f"failed without retry: {reason}"
                if attempt >= s.max_retries:
                    return None, f"gave up after {attempt + 1} attempt(s): {reason}"
                delay = backoff_s(attempt, s.retry_base_s, s.retry_max_s)
                delay = max(delay, wait) if wait is not None else delay
                log.info("%s: retry %d in %.2fs after %s", s.model, attempt + 1, delay, reason)
                totals["retries"] += 1
                await asyncio.sleep(delay)
                continue
            usage = getattr(response, "usage", None)
            used = int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)
            batch.limiter.release(ticket, "ok", tokens_used=sum(used) if any(used) else None)
            totals["prompt_tokens"] += used[0]
            totals["completion_tokens"] += used[1]
            cost = self._cost(response)
            self._settle(held, cost)
            totals["cost_usd"] += cost
            return response, None
        raise AssertionError("unreachable")  # the loop always returns

    def _projected_cost(self, messages: list[dict[str, Any]], request: _Request) -> float:
        """The most a call can cost: its prompt with the model's tokenizer plus `max_tokens` of reply."""
        from ragwatch.llm.pricing import call_cost, count_tokens

        if self.is_local:
            return 0.0
        max_tokens = float(request.params.get("max_tokens") or self.settings.max_tokens)
        return call_cost(self.settings.model, count_tokens(self.settings.model, messages), max_tokens)

    def _settle(self, held: float | None, cost: float) -> None:
        if self.budget is not None and held is not None:
            self.budget.settle(held, cost)

    async def _acompletion(self, kwargs: dict[str, Any]) -> Any:
        litellm = load_litellm()
        if self.is_local:  # the thread behind it cannot be interrupted; generation is bounded by max_tokens
            return await litellm.acompletion(**kwargs)
        # litellm's own timeout covers the HTTP call; this bounds anything else that could hang
        return await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=self.settings.timeout_s + 5.0)

    def _cost(self, response: Any) -> float:
        if self.is_local:
            return 0.0
        # litellm already priced the response for its own logging: reuse it, pricing twice costs ~5 ms
        known = getattr(response, "_hidden_params", {}).get("response_cost")
        if known is not None:
            return float(known)
        try:
            return float(load_litellm().completion_cost(completion_response=response) or 0.0)
        except Exception:  # models absent from litellm's price map cost "unknown", counted as 0
            return 0.0

    # ------------------------------------------------------------------------------ bookkeeping
    def _ok(
        self,
        text: str,
        parsed: Any,
        logprobs: list[TokenLogprob] | None,
        started: float,
        repairs: int,
        totals: dict[str, Any],
    ) -> Generation:
        return Generation(
            model=self.settings.model,
            text=text,
            parsed=parsed,
            logprobs=logprobs,
            prompt_tokens=totals["prompt_tokens"],
            completion_tokens=totals["completion_tokens"],
            latency_s=time.perf_counter() - started,
            cost_usd=totals["cost_usd"],
            attempts=1 + totals["retries"],
            repairs=repairs,
        )

    def _failed(
        self,
        error: str,
        latency_s: float,
        *,
        raw: str | None = None,
        repairs: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float = 0.0,
        retries: int = 0,
        sent: int = 0,
    ) -> Generation:
        return Generation(
            model=self.settings.model,
            error=error,
            raw=raw,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency_s,
            cost_usd=cost_usd,
            attempts=(1 + retries) if sent else 0,
            repairs=repairs,
        )

    def _account(self, gen: Generation) -> None:
        with self._usage_lock:
            self.usage.add(gen)
        if self.budget is not None and gen.ok:
            self.budget.item_done()


def _messages(prompt: Prompt) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("the prompt is empty; pass the text to send to the model")
        return [{"role": "user", "content": prompt}]
    messages = list(prompt)
    if not messages or not all(isinstance(m, dict) and "role" in m and "content" in m for m in messages):
        raise ValueError(
            "a prompt is a string or a non-empty list of chat messages like [{'role': 'user', 'content': '...'}]"
        )
    return [dict(m) for m in messages]


def _token_estimate(messages: list[dict[str, Any]], params: dict[str, Any]) -> float:
    """Tokens a call may use, for a tpm budget: ~4 characters per prompt token plus the reply's cap
    (providers reserve max_tokens against the quota); settled with the reply's usage."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return chars / 4 + float(params.get("max_tokens") or 0)


def _reply(response: Any) -> tuple[str, list[TokenLogprob] | None, str | None]:
    choice = response.choices[0]
    text = getattr(choice.message, "content", None) or ""
    return text, _token_logprobs(getattr(choice, "logprobs", None)), getattr(choice, "finish_reason", None)


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _token_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """OpenAI-style `logprobs.content` (token, logprob, top_logprobs) as `TokenLogprob`s."""
    content = _get(raw, "content") if raw is not None else None
    if not content:
        return None
    tokens = []
    for item in content:
        top = {str(_get(t, "token")): float(_get(t, "logprob")) for t in (_get(item, "top_logprobs") or [])}
        tokens.append(TokenLogprob(token=str(_get(item, "token")), logprob=float(_get(item, "logprob")), top=top))
    return tokens


# ---------------------------------------------------------------------------- sync over async
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """One long-lived event loop on a daemon thread serves every sync call: litellm caches async
    HTTP clients per loop, so a fresh `asyncio.run` per call would strand them; and it also works
    when the caller already runs a loop (notebooks)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="ragwatch-llm-loop", daemon=True).start()
        return _loop


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    loop = _background_loop()
    if threading.current_thread().name == "ragwatch-llm-loop":
        coro.close()
        raise RuntimeError("generate()/generate_many() block; inside async code await agenerate()/agenerate_many()")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()
