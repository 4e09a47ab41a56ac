"""The rate-limit flow control in simulated time: no test here sleeps.

`FlowControl` is driven directly with a hand-moved clock; the asyncio `Limiter` runs on an event loop
whose clock jumps to the next timer instead of waiting, against a simulated provider (latency 1 s,
concurrency 32, 320 items) that answers 429 at random or in bursts.
"""

from __future__ import annotations

import asyncio
import math
import random
import selectors
from collections.abc import Callable

import pytest

from ragwatch.llm.limiter import FlowControl, Limiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def send_round(flow: FlowControl, n: int) -> list:
    tickets = []
    for _ in range(n):
        assert flow.wait_s() == 0.0
        tickets.append(flow.send())
    return tickets


# ------------------------------------------------------------------------------- the logic alone
def test_a_round_of_429s_decreases_once_and_stale_429s_do_not_decrease_again():
    clock = FakeClock()
    flow = FlowControl(32, clock=clock)
    first = send_round(flow, 32)
    assert flow.wait_s() == math.inf  # the bound is full
    clock.now = 1.0
    for t in first:
        flow.done(t, "rate_limit")
    assert flow.bound == 16 and flow.stats.decreases == 1  # all 429s: halved, once, not 2**32 times
    # a round sent before that decrease took effect answers 429 too: old news, no second decrease
    second = send_round(flow, 16)
    flow._recover = second[-1].seq + 1  # as if these had gone out before the decrease
    for t in second:
        flow.done(t, "rate_limit")
    assert flow.bound == 16 and flow.stats.decreases == 1


def test_decrease_is_in_proportion_to_the_share_of_429s():
    clock = FakeClock()
    flow = FlowControl(32, clock=clock)
    tickets = send_round(flow, 32)
    for i, t in enumerate(tickets):
        flow.done(t, "rate_limit" if i < 4 else "ok")  # 12.5% 429s
    # 32 * (1 - 0.125 / 2) = 30, where a halving would give 16: random 429s trim, they do not collapse it
    assert flow.bound == 30 and flow.stats.decreases == 1


def test_regrowth_is_additive_per_round_of_successes():
    clock = FakeClock()
    flow = FlowControl(32, clock=clock)
    for t in send_round(flow, 32):
        flow.done(t, "rate_limit")
    bounds = []
    for _ in range(3):
        for t in send_round(flow, flow.bound):
            flow.done(t, "ok")
        bounds.append(flow.bound)
    assert bounds == [24, 32, 32]  # a quarter of 32 per round, capped at the configured 32

    flow = FlowControl(32, clock=clock)
    flow.limit = 16.0
    tickets = send_round(flow, 16)
    for t in tickets[:8]:
        flow.done(t, "ok")
    assert flow.bound == 20  # each success adds its share at once: growth does not wait for the round


def test_retry_after_pauses_every_send_once_and_stale_429s_do_not_extend_it():
    clock = FakeClock()
    flow = FlowControl(8, clock=clock)
    tickets = send_round(flow, 8)
    clock.now = 1.0
    flow.done(tickets[0], "rate_limit", retry_after_s=2.0)
    assert flow.wait_s() == pytest.approx(2.0) and flow.stats.pauses == 1
    clock.now = 1.5
    flow.done(tickets[1], "rate_limit", retry_after_s=2.0)  # sent before the pause: no news
    assert flow.wait_s() == pytest.approx(1.5) and flow.stats.pauses == 1
    clock.now = 3.0
    assert flow.wait_s() == 0.0
    late = flow.send()
    flow.done(late, "rate_limit", retry_after_s=1.0)  # sent after the pause: a new pause
    assert flow.wait_s() == pytest.approx(1.0) and flow.stats.pauses == 2


def test_rpm_and_tpm_buckets_pace_sends():
    clock = FakeClock()
    flow = FlowControl(100, rpm=120, clock=clock)  # 2 per second, a second's worth of burst
    send_round(flow, 2)
    assert flow.wait_s() == pytest.approx(0.5)
    clock.now = 0.5
    assert flow.wait_s() == 0.0

    flow = FlowControl(100, tpm=6000, clock=clock)  # 100 tokens per second
    t = flow.send(100)
    assert flow.wait_s(50) == pytest.approx(0.5)
    flow.done(t, "ok", tokens_used=40)  # the estimate was high: the difference comes back
    assert flow.wait_s(50) == 0.0
    with pytest.raises(ValueError, match="positive"):
        FlowControl(4, rpm=-1, clock=clock)


def test_a_collapsed_bound_regrows_with_idle_time_between_stages():
    clock = FakeClock()
    flow = FlowControl(32, clock=clock)
    for _ in range(4):  # four rounds of all-429s: 32 -> 16 -> 8 -> 4 -> 2
        for t in send_round(flow, flow.bound):
            flow.done(t, "rate_limit")
    assert flow.bound == 2
    clock.now += 2.0  # two quiet round trips (srtt 1 s from the replies) before the next stage
    flow.srtt = 1.0
    flow.new_stage()
    assert flow.bound == 18  # 2 + 2 rounds * 8: neither carried blindly nor forgotten outright


# --------------------------------------------------------------------- the gate, in virtual time
class _VirtualSelector(selectors.DefaultSelector):
    """Never blocks: a wait for the next timer moves the loop's clock there instead."""

    loop: VirtualTimeLoop

    def select(self, timeout: float | None = None):  # type: ignore[override]
        events = super().select(0)
        if not events and timeout:
            self.loop.virtual_now += timeout
        return events


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        selector = _VirtualSelector()
        super().__init__(selector)
        selector.loop = self
        self.virtual_now = 0.0

    def time(self) -> float:
        return self.virtual_now


Behaviour = Callable[[float, random.Random], "tuple[bool, float | None]"]


def simulate(behaviour: Behaviour, *, n: int = 320, latency: float = 1.0, concurrency: int = 32):
    """n items through a `Limiter` against a provider answering after `latency`; a 429 is retried
    after max(its Retry-After, a jittered backoff), up to 6 attempts. Returns the loop time at the end,
    the limiter, the item outcomes and the send log."""
    loop = VirtualTimeLoop()
    rng = random.Random(7)
    limiter = Limiter(concurrency, clock=loop.time)
    sends: list[tuple[float, int, bool]] = []  # (time, item, is a retry)
    outcomes: dict[int, str] = {}
    retry_waits: list[float] = []

    async def item(i: int) -> None:
        retry = False
        for attempt in range(6):
            ticket = await limiter.acquire(retry=retry)
            sends.append((loop.time(), i, retry))
            limited, retry_after = behaviour(loop.time(), rng)  # decided on arrival, answered later
            await asyncio.sleep(latency)
            if not limited:
                limiter.release(ticket, "ok")
                outcomes[i] = "ok"
                return
            limiter.release(ticket, "rate_limit", retry_after_s=retry_after)
            delay = max(retry_after or 0.0, rng.uniform(0.25, 0.5 * 2**attempt))
            await asyncio.sleep(delay)
            ready = loop.time()
            retry = True
            retry_waits.append(ready)
        outcomes[i] = "failed"

    async def main() -> float:
        start = loop.time()
        await asyncio.gather(*(item(i) for i in range(n)))
        return loop.time() - start

    try:
        wall = loop.run_until_complete(main())
    finally:
        loop.close()
    return wall, limiter, outcomes, sends


def clean(t: float, rng: random.Random) -> tuple[bool, float | None]:
    return False, None


def random_429s(t: float, rng: random.Random) -> tuple[bool, float | None]:
    return rng.random() < 0.15, None


def bursts(t: float, rng: random.Random) -> tuple[bool, float | None]:
    """Every request for 2 s every 10 s (from t=4), each told (when answered, 1 s later) to come
    back when the burst ends, in whole seconds."""
    phase = (t - 4.0) % 10.0 if t >= 4.0 else 99.0
    if phase >= 2.0:
        return False, None
    return True, (math.ceil(2.0 - phase - 1.0) or None)


def test_simulated_clean_run_keeps_full_concurrency():
    wall, limiter, outcomes, _ = simulate(clean)
    assert wall == pytest.approx(10.0, abs=0.01)  # 320 items / 32 in flight * 1 s
    assert limiter.stats.decreases == 0 and set(outcomes.values()) == {"ok"}


def test_simulated_random_429s_cost_at_most_twice_the_clean_time():
    wall, limiter, outcomes, _ = simulate(random_429s)
    assert set(outcomes.values()) == {"ok"}
    assert wall <= 2 * 10.0
    # 15% of 429s per round trims the bound (the last small rounds of retries trim more), never collapses it
    assert limiter.stats.lowest >= 20


def test_simulated_bursts_pause_everyone_and_the_bound_recovers_within_5_s():
    wall, limiter, outcomes, sends = simulate(bursts)
    assert set(outcomes.values()) == {"ok"} and wall <= 2 * 10.0
    # nothing is sent during a burst once its first 429 came back (at 5 s): everyone paused
    assert not [t for t, _, _ in sends if 5.0 + 1e-9 < t < 6.0 - 1e-9]
    history = limiter.stats.history
    assert limiter.stats.lowest <= 16  # it did back off
    for burst_end in (6.0, 16.0):
        if burst_end > wall:
            break
        dropped = [t for t, b in history if burst_end - 2 <= t and b < 32]
        if dropped:
            back = min(t for t, b in history if t >= dropped[0] and b == 32)
            assert back - burst_end <= 5.0, history


def test_simulated_retries_go_ahead_of_first_attempts():
    _, _, _, sends = simulate(random_429s)
    first_retry = next(i for i, (_, _, retry) in enumerate(sends) if retry)
    last_first_attempt = max(i for i, (_, _, retry) in enumerate(sends) if not retry)
    assert first_retry < last_first_attempt  # retries did not queue behind the 320 first attempts
    t_first_retry = sends[first_retry][0]
    assert t_first_retry < 3.0  # re-sent within a round trip or two, not after every first attempt
