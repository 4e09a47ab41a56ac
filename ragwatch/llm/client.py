"""`LLMClient`: the one door for every LLM call (structured output, retries, cache, usage, cost).

Its job is sending: each request from the cache or through flow control, the budget, retries and
schema repair to a `Generation`, counted in `usage`. What a request and a reply look like on the wire
is `request.py`; a stage with `batch: true` goes out as one provider batch job (`provider_batch.py`,
which the client asks for replies and nothing else); blocking over async is `sync.py`.

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
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragwatch.llm import structured
from ragwatch.llm.backend import load_litellm
from ragwatch.llm.budget import Budget
from ragwatch.llm.cache import GenerationCache, default_cache_root
from ragwatch.llm.errors import explain
from ragwatch.llm.history import StageRecord, record_stage
from ragwatch.llm.limiter import Limiter
from ragwatch.llm.models import is_local, local_name
from ragwatch.llm.provider_batch import ProviderBatch
from ragwatch.llm.request import Prompt, Request, build_request, litellm_kwargs, parse_reply, token_estimate
from ragwatch.llm.retry import (
    backoff_s,
    classify,
    describe,
    is_auth_error,
    retry_after_s,
)
from ragwatch.llm.sync import run_sync
from ragwatch.llm.types import Generation, LLMSettings, TokenLogprob, Usage
from ragwatch.progress import Progress

log = logging.getLogger("ragwatch.llm")

StageItem = tuple[Prompt, "type[BaseModel] | None", "str | None", dict[str, Any]]  # prompt, schema, system, options


@dataclass
class _SendState:
    """What the calls of one `generate_many` share: the flow control and a fatal-error stop."""

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

            name = local_name(self.settings.model)
            local.get_model(name)  # a typo fails here, naming the choices
            local.register()
            local.reserve(name, self.settings.concurrency)  # the model decodes this many calls together
        self.usage = Usage(model=self.settings.model)
        self._usage_lock = threading.Lock()
        self._cache: GenerationCache | None = None
        self._root = Path(self.settings.cache_dir).expanduser() if self.settings.cache_dir else default_cache_root()
        if self.settings.cache:
            self._cache = GenerationCache(self._root / "llm")
        self.budget = Budget(self.settings.budget_usd) if self.settings.budget_usd else None
        # the in-process model decodes up to `concurrency` calls together (its decode engine)
        self.max_concurrency = max(1, self.settings.concurrency)
        # one flow control per event loop, shared by every call of this client on it (a rate limit
        # and the rpm/tpm budget span stages); asyncio futures cannot cross loops
        self._limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Limiter] = weakref.WeakKeyDictionary()
        self.last_limiter: Limiter | None = None  # of the last call or stage, for inspection

    def _limiter(self) -> Limiter:
        loop = asyncio.get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            s = self.settings
            limiter = self._limiters[loop] = Limiter(self.max_concurrency, rpm=s.rpm, tpm=s.tpm)
        self.last_limiter = limiter
        return limiter

    def _send_state(self) -> _SendState:
        """A new state shared by the items sent together (this loop's flow control, a fatal stop)."""
        return _SendState(self._limiter())

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
        return run_sync(self.agenerate(prompt, schema=schema, system=system, stage=stage, **overrides))

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
        gen = await self._generate(request, self._send_state())
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
        `desc`: the progress bar's label, or a `Progress` shared with other stages to advance.
        `stage`: the calls' label in the usage history (default: `desc` when it is a label)."""
        return run_sync(self.agenerate_many(prompts, schema=schema, desc=desc, system=system, stage=stage,
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
        `generate_many` runs them; with `batch: true` all of them go out as one provider batch job."""
        requests = [self._request(prompt, schema, system, dict(options)) for prompt, schema, system, options in items]
        return run_sync(self._run_requests(requests, desc, stage))

    async def _run_requests(
        self, requests: list[Request], desc: str | Progress | None, stage: str | None
    ) -> list[Generation]:
        label = stage or (desc if isinstance(desc, str) else None)
        if self.settings.batch and requests and all(r.mock_response is None for r in requests):
            shared = desc if isinstance(desc, Progress) else None
            return await self._send_as_batch(requests, label or self.settings.model, shared)
        sending = self._send_state()
        sending.limiter.new_stage()
        results: list[Generation | None] = [None] * len(requests)
        started = time.perf_counter()
        shared = isinstance(desc, Progress)  # one bar across stages: its owner closes it
        with nullcontext(desc) if shared else Progress(len(requests), desc or self.settings.model) as bar:

            async def one(i: int, request: Request) -> None:
                try:
                    results[i] = await self._generate(request, sending)
                except Exception as exc:  # a bug must not sink the other calls: record it on the item
                    results[i] = self._failed(f"unexpected error: {describe(exc, self._api_key())}", 0.0)
                    self._account(results[i])
                bar.update(1)

            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        done = [r for r in results if r is not None]
        if label:
            self._record(label, done, time.perf_counter() - started)
        return done

    def _record(self, stage: str, generations: list[Generation], wall_s: float, batch: bool = False) -> None:
        """One usage-history line for this stage (ragwatch/llm/history.py): what estimates learn from."""
        usage = Usage(model=self.settings.model)
        for gen in generations:
            usage.add(gen)
        record_stage(StageRecord.of(self.settings.model, stage, usage, wall_s, batch))  # one history per machine

    def usage_since(self, mark: Usage) -> Usage:
        """Usage accrued after `mark = client.usage.model_copy()`: the record of one stage."""
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

    # ------------------------------------------------------------------------ provider batch
    async def _send_as_batch(self, requests: list[Request], desc: str, progress: Progress | None) -> list[Generation]:
        """The requests not in the cache as one provider batch job, within the budget (held at batch
        prices) and counted in `usage`; lines the job failed, or whose reply does not fit the schema,
        are sent again online."""
        started = time.perf_counter()
        out: list[Generation | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}  # identical requests share one line
        for i, request in enumerate(requests):
            gen = await self._cached(request)
            if gen is not None:
                self._account(gen)
                out[i] = gen
            else:
                todo.setdefault(request.key, []).append(i)
        if todo:
            sender = ProviderBatch(self.settings, self._root, desc)
            lines: list[Request] = []
            held: dict[str, float | None] = {}
            for key, where in todo.items():
                request = requests[where[0]]
                if self.budget is not None:
                    held[key] = self.budget.reserve(self._projected_cost(request.messages, request, batch=True))
                    if held[key] is None:
                        for i in where:
                            out[i] = self._refused(self.budget.reason())
                        continue
                lines.append(request)
            outcome = await sender.send(lines, progress, started=started)

            async def settle(request: Request) -> None:
                where, reply = todo[request.key], outcome.replies[request.key]
                gen = reply if isinstance(reply, Generation) else None
                self._settle(held.get(request.key), gen.cost_usd if gen is not None else 0.0)
                if gen is not None:
                    await self._keep(request, gen)
                    self._account(gen)
                elif not outcome.pending:  # a failed line, or a reply that does not fit: once more online
                    gen = await self._generate(request, self._send_state())  # counts itself
                else:  # still running at the provider: no second payment now, a re-run picks it up
                    gen = self._refused(str(reply), time.perf_counter() - started)
                out[where[0]] = gen
                for i in where[1:]:  # identical requests: one line served them all
                    out[i] = gen.model_copy(update={"cached": True, "cost_usd": 0.0}) if gen.ok else gen
                    self._account(out[i])

            await asyncio.gather(*(settle(r) for r in lines))
            if not outcome.pending:
                sender.forget()
        done = [g for g in out if g is not None]
        self._record(desc, done, time.perf_counter() - started, batch=True)
        return done

    # ------------------------------------------------------------------------------------ requests
    def _request(
        self, prompt: Prompt, schema: type[BaseModel] | None, system: str | None, overrides: dict[str, Any]
    ) -> Request:
        return build_request(self.settings, prompt, schema, system, overrides)

    def _api_key(self) -> str | None:
        env = self.settings.api_key_env
        return os.environ.get(env) if env else None

    # --------------------------------------------------------------------------------- one item
    async def _generate(self, request: Request, sending: _SendState) -> Generation:
        started = time.perf_counter()
        gen = await self._cached(request)
        if gen is not None:
            self._account(gen)
            return gen
        gen = await self._call_and_validate(request, sending, started)
        await self._keep(request, gen)
        self._account(gen)
        return gen

    async def _cached(self, request: Request) -> Generation | None:
        """`request`'s reply from the cache (free, `cached=True`), else None; not yet counted."""
        if self._cache is None:
            return None
        started = time.perf_counter()
        hit = await asyncio.to_thread(self._cache.get, request.key)  # keep the event loop free
        return self._from_cache(hit, request, started) if hit is not None else None

    async def _keep(self, request: Request, gen: Generation) -> None:
        """Cache an ok reply (errors are never cached)."""
        if gen.ok and self._cache is not None:
            await asyncio.to_thread(self._cache.put, request.key, gen.model_dump(mode="json", exclude={"parsed"}))

    def _from_cache(self, hit: dict[str, Any], request: Request, started: float) -> Generation | None:
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

    async def _call_and_validate(self, request: Request, sending: _SendState, started: float) -> Generation:
        messages = list(request.messages)
        totals = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "retries": 0, "sent": 0}
        repairs = 0
        while True:
            response, error = await self._call_with_retries(messages, request, sending, totals)
            if error is not None:
                return self._failed(error, time.perf_counter() - started, repairs=repairs, **totals)
            text, logprobs, finish = parse_reply(response)
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
        self, messages: list[dict[str, Any]], request: Request, sending: _SendState, totals: dict[str, Any]
    ) -> tuple[Any, str | None]:
        s = self.settings
        secret = self._api_key()
        tokens = token_estimate(messages, request.params) if s.tpm else 0.0
        # a repair continues an item already under way: like a retry, it goes ahead of new items
        continuing = len(messages) > len(request.messages)
        for attempt in range(s.max_retries + 1):
            ticket = held = None
            try:
                kwargs = litellm_kwargs(self.settings, messages, request)
                ticket = await sending.limiter.acquire(tokens, retry=continuing or attempt > 0)
                # checked after the wait for a slot: items queued behind a fatal one are not sent
                if sending.fatal:
                    sending.limiter.release(ticket, "error", tokens_used=0)
                    return None, f"not attempted: an earlier item failed fatally ({sending.fatal[0]})"
                if self.budget is not None:
                    held = self.budget.reserve(self._projected_cost(messages, request))
                    if held is None:
                        sending.limiter.release(ticket, "error", tokens_used=0)
                        return None, self.budget.reason()
                totals["sent"] += 1
                response = await self._acompletion(kwargs)
            except asyncio.CancelledError:
                if ticket is not None:
                    sending.limiter.release(ticket, "error")
                self._settle(held, 0.0)
                raise
            except Exception as exc:
                self._settle(held, 0.0)
                kind = classify(exc)
                # the kind and the address ("connection refused: http://..."), not litellm's wrapper class
                reason = explain(exc, secret=secret, address=s.api_base,
                                 timeout_s=None if self.is_local else s.timeout_s)
                wait = retry_after_s(exc)
                if ticket is not None:
                    outcome = "rate_limit" if kind == "rate_limit" else "error"
                    sending.limiter.release(ticket, outcome, retry_after_s=wait)
                if kind == "fatal":
                    if is_auth_error(exc):
                        reason = (
                            f"authentication failed for {s.model!r}: set the environment variable named "
                            f"by api_key_env ({s.api_key_env or 'unset in the LLM settings'}) to a valid "
                            f"key. {reason}"
                        )
                    if request.mock_response is None:  # a mocked error must not stop real items
                        sending.fatal.append(reason)
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
            sending.limiter.release(ticket, "ok", tokens_used=sum(used) if any(used) else None)
            totals["prompt_tokens"] += used[0]
            totals["completion_tokens"] += used[1]
            cost = self._cost(response)
            self._settle(held, cost)
            totals["cost_usd"] += cost
            return response, None
        raise AssertionError("unreachable")  # the loop always returns

    def _projected_cost(self, messages: list[dict[str, Any]], request: Request, *, batch: bool = False) -> float:
        """The most a call can cost: its prompt with the model's tokenizer plus `max_tokens` of reply
        (at batch prices for a provider batch job)."""
        from ragwatch.llm.pricing import call_cost, count_tokens

        if self.is_local:
            return 0.0
        max_tokens = float(request.params.get("max_tokens") or self.settings.max_tokens)
        return call_cost(self.settings.model, count_tokens(self.settings.model, messages), max_tokens, batch=batch)

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

    def _refused(self, reason: str, latency_s: float = 0.0) -> Generation:
        """A call that was not sent, failed with `reason` and counted."""
        gen = self._failed(reason, latency_s)
        self._account(gen)
        return gen

    def _account(self, gen: Generation) -> None:
        with self._usage_lock:
            self.usage.add(gen)
        if self.budget is not None and gen.ok:
            self.budget.item_done()

