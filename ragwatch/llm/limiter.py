"""How many LLM calls may be in flight, and when the next one may go: rate-limit aware flow control.

`FlowControl` is the logic, driven by an injectable clock and never sleeping (tests run it in
simulated time); `Limiter` puts it behind an asyncio gate that `LLMClient` awaits before each send.

The rules, after TCP congestion control (a *round* is the next `bound` sends, about one round trip):
- Back off at most once per round, in proportion to the share of 429s in it (DCTCP: a round that is
  all 429s halves the bound, 15% of 429s takes 7.5% off). 429s on requests sent before the last
  decrease arrived at the old rate: they do not decrease again.
- Regrow additively, by a quarter of the configured bound per round of successes (a halved bound is
  back in two rounds: bursts of 429s are common and short), never above the configured bound. As in
  TCP's congestion avoidance each success adds its share (step / round size) at once, so growth does
  not wait for a round's slowest reply. The price: against a sustained limit without Retry-After the
  bound settles high and a share of calls keeps answering 429 (retried; set `rpm`/`tpm` for quotas).
- A Retry-After pauses every new send, not only the item that got it; 429s on requests sent before
  that pause began carry no news and do not extend it.
- A retry goes ahead of every first attempt not yet started (FIFO within each kind).
- Optional `rpm` / `tpm` token buckets for providers with published quotas (a second's worth of
  burst; tokens are estimated at send and settled with the reply's usage).
- Between stages the bound is not carried blindly: idle time counts as quiet rounds and regrows it.

Example:
    >>> limiter = Limiter(32, rpm=600)
    >>> ticket = await limiter.acquire(tokens=900, retry=False)
    >>> ...  # send; then exactly one of
    >>> limiter.release(ticket, "ok", tokens_used=870)   # or "rate_limit" (retry_after=...) or "error"
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["ok", "rate_limit", "error"]
Clock = Callable[[], float]


@dataclass(frozen=True)
class Ticket:
    """One send: its sequence number, the round it belongs to, when it went and the tokens charged."""

    seq: int
    round_start: int
    sent_at: float
    tokens: float


@dataclass
class _Round:
    first_seq: int
    size: int
    sent: int = 0
    pending: int = 0
    ok: int = 0
    rate_limited: int = 0
    errors: int = 0


class TokenBucket:
    """`rate` units per second, at most `capacity` saved up; `take` may drive it below zero (debt)."""

    def __init__(self, rate_per_s: float, capacity: float, now: float) -> None:
        if rate_per_s <= 0:
            raise ValueError(f"a rate limit must be positive, got {rate_per_s}")
        self.rate = rate_per_s
        self.capacity = max(capacity, 1.0)
        self.level = self.capacity
        self._at = now

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self._at) * self.rate)
        self._at = now

    def wait_s(self, amount: float, now: float) -> float:
        """Seconds until `amount` can be taken (a request larger than the bucket waits for a full one)."""
        self._refill(now)
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float, now: float) -> None:
        self._refill(now)
        self.level -= amount

    def give_back(self, amount: float, now: float) -> None:
        self._refill(now)
        self.level = min(self.capacity, self.level + amount)


@dataclass
class FlowStats:
    """What the flow control did: for logs, benchmarks and tests."""

    decreases: int = 0
    pauses: int = 0
    lowest: int = 0
    history: list[tuple[float, int]] = field(default_factory=list)  # (time, bound) at every change


class FlowControl:
    """The bound on calls in flight and the send schedule; pure logic over an injectable clock.

    Call `wait_s(tokens)` (0: send now; a number: try again then; `math.inf`: wait for a release),
    then `send(tokens) -> Ticket`, then `done(ticket, outcome, ...)` once per ticket.
    """

    def __init__(
        self,
        max_limit: int,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.max_limit = max(1, int(max_limit))
        self.clock = clock
        self.limit = float(self.max_limit)
        self.step = max(1.0, self.max_limit / 4)
        self.in_flight = 0
        self.paused_until = -math.inf
        self.srtt: float | None = None  # smoothed seconds per reply, as TCP keeps it
        now = clock()
        self.stats = FlowStats(lowest=self.max_limit, history=[(now, self.max_limit)])
        self._rpm = TokenBucket(rpm / 60, rpm / 60, now) if rpm else None
        self._tpm = TokenBucket(tpm / 60, tpm / 60, now) if tpm else None
        self._next_seq = 0
        self._recover = 0  # sends numbered below this went out before the last decrease
        self._pause_seq = 0  # ... and below this, before the last pause began
        self._round: _Round | None = None
        self._rounds: dict[int, _Round] = {}
        self._last_activity = now

    @property
    def bound(self) -> int:
        """Calls allowed in flight now."""
        return max(1, int(self.limit + 1e-9))  # shares of a step sum to a hair under it

    # ---------------------------------------------------------------------------------- sending
    def wait_s(self, tokens: float = 0.0) -> float:
        if self.in_flight >= self.bound:
            return math.inf
        now = self.clock()
        wait = max(0.0, self.paused_until - now)
        if self._rpm is not None:
            wait = max(wait, self._rpm.wait_s(1.0, now))
        if self._tpm is not None and tokens:
            wait = max(wait, self._tpm.wait_s(tokens, now))
        return wait

    def send(self, tokens: float = 0.0) -> Ticket:
        now = self.clock()
        seq = self._next_seq
        self._next_seq += 1
        current = self._round
        if current is None or current.sent >= current.size:
            current = self._round = self._rounds[seq] = _Round(first_seq=seq, size=self.bound)
        current.sent += 1
        current.pending += 1
        self.in_flight += 1
        if self._rpm is not None:
            self._rpm.take(1.0, now)
        if self._tpm is not None and tokens:
            self._tpm.take(tokens, now)
        self._last_activity = now
        return Ticket(seq=seq, round_start=current.first_seq, sent_at=now, tokens=tokens)

    # ------------------------------------------------------------------------------------ replies
    def done(
        self,
        ticket: Ticket,
        outcome: Outcome,
        *,
        retry_after_s: float | None = None,
        tokens_used: float | None = None,
    ) -> None:
        """Record a reply (or a failure to get one). `tokens_used` settles the tpm estimate."""
        now = self.clock()
        self.in_flight -= 1
        self._last_activity = now
        if outcome != "error":  # a timeout or a dropped connection says nothing about round trips
            sample = now - ticket.sent_at
            self.srtt = sample if self.srtt is None else 0.875 * self.srtt + 0.125 * sample
        if self._tpm is not None and tokens_used is not None and ticket.tokens:
            self._tpm.give_back(ticket.tokens - tokens_used, now)
        if outcome == "rate_limit" and retry_after_s and ticket.seq >= self._pause_seq:
            self.paused_until = max(self.paused_until, now + retry_after_s)
            self._pause_seq = self._next_seq
            self.stats.pauses += 1
        round_ = self._rounds.get(ticket.round_start)  # None: dropped at a stage boundary
        if outcome == "ok":  # a round of successes adds one step, share by share
            self.limit = min(float(self.max_limit), self.limit + self.step / (round_.size if round_ else self.bound))
            self._record(now)
        if round_ is None:
            return
        round_.pending -= 1
        if outcome == "ok":
            round_.ok += 1
        elif outcome == "rate_limit":
            round_.rate_limited += 1
        else:
            round_.errors += 1
        # a round is judged once all its sends are back; a partial one when nothing else is in flight
        if round_.pending == 0 and (round_.sent >= round_.size or self.in_flight == 0):
            self._close(round_, now)

    def _close(self, round_: _Round, now: float) -> None:
        self._rounds.pop(round_.first_seq, None)
        if round_ is self._round:
            self._round = None
        answered = round_.ok + round_.rate_limited
        if not answered:
            return
        if round_.rate_limited and round_.first_seq >= self._recover:
            share = round_.rate_limited / answered
            self.limit = max(1.0, self.limit * (1 - share / 2))
            self._recover = self._next_seq
            self.stats.decreases += 1
            self._record(now)

    def _record(self, now: float) -> None:
        bound = self.bound
        if bound != self.stats.history[-1][1]:
            self.stats.history.append((now, bound))
        self.stats.lowest = min(self.stats.lowest, bound)

    # ------------------------------------------------------------------------------------- stages
    def new_stage(self) -> None:
        """A new stage (one `generate_many`) begins: the quiet time since the last activity counts as
        rounds of successes."""
        if self.in_flight:
            return  # another stage of this client is still running on the same bound
        now = self.clock()
        idle_rounds = (now - self._last_activity) / max(self.srtt or 1.0, 0.05)
        self.limit = min(float(self.max_limit), self.limit + self.step * idle_rounds)
        self._rounds.clear()
        self._round = None
        self._record(now)


class Limiter:
    """An asyncio gate over `FlowControl`: retries first, then first attempts, FIFO within each.

    Example:
        >>> limiter = Limiter(8)
        >>> ticket = await limiter.acquire()
        >>> limiter.release(ticket, "ok")
    """

    def __init__(
        self,
        max_limit: int,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.flow = FlowControl(max_limit, rpm=rpm, tpm=tpm, clock=clock)
        self._waiters: list[tuple[int, int, float, asyncio.Future[Ticket]]] = []
        self._order = itertools.count()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def stats(self) -> FlowStats:
        return self.flow.stats

    async def acquire(self, tokens: float = 0.0, *, retry: bool = False) -> Ticket:
        future: asyncio.Future[Ticket] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (0 if retry else 1, next(self._order), tokens, future))
        self._pump()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted just as the caller gave up
                self.release(future.result(), "error")
            raise

    def release(
        self,
        ticket: Ticket,
        outcome: Outcome,
        *,
        retry_after_s: float | None = None,
        tokens_used: float | None = None,
    ) -> None:
        self.flow.done(ticket, outcome, retry_after_s=retry_after_s, tokens_used=tokens_used)
        self._pump()

    def new_stage(self) -> None:
        self.flow.new_stage()

    def _pump(self) -> None:
        """Grant sends to waiters in priority order while the flow control allows."""
        while self._waiters:
            _, _, tokens, future = self._waiters[0]
            if future.done():  # cancelled while waiting
                heapq.heappop(self._waiters)
                continue
            wait = self.flow.wait_s(tokens)
            if wait == 0.0:
                heapq.heappop(self._waiters)
                future.set_result(self.flow.send(tokens))
                continue
            if math.isfinite(wait) and self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(wait, self._wake)
            return

    def _wake(self) -> None:
        self._timer = None
        self._pump()
