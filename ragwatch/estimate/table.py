"""What a run will cost, as a table: calls, tokens, dollars and wall time per role and stage, and
the same table set against what a run recorded (the usage history).

Example:
    >>> print(format_estimate(estimate))  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ragwatch.estimate.dry import StageCount
from ragwatch.llm.history import StageRecord
from ragwatch.llm.models import is_local
from ragwatch.llm.pricing import call_cost, is_priced
from ragwatch.llm.types import LLMSettings

# The rough default, for a stage this model has no recorded run of (the history's rate replaces it):
HOSTED_LATENCY_S = 0.6  # per call before its reply
HOSTED_TOKENS_PER_S = 80.0  # reply tokens per second of a hosted model, `concurrency` calls at a time
LOCAL_PROMPT_TOKENS_PER_S = 100.0  # the packaged 0.5B on 2 idle cores (docs: OFFLINE_STACK.md); a bigger
LOCAL_REPLY_TOKENS_PER_S = 25.0  # model is slower by its weights' size; calls share the cores, one at a time
LOCAL_REFERENCE_MODEL = "qwen2.5-0.5b-instruct"


class EstimateRow(BaseModel):
    """One stage of one role: what it would send and what that costs."""

    role: str
    stage: str
    model: str
    requests: int
    cached: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    priced: bool
    reply_basis: str
    wall_s: float
    batch: bool = False
    # where wall_s comes from: "history" (this model's earlier runs of the stage on this machine) or
    # "rule of thumb" (no such run yet: fixed token rates, off by a factor of several on a loaded machine)
    time_basis: str = "history"
    time_source: str = ""  # the rate it used and where it comes from, or what the rough default assumes


class Estimate(BaseModel):
    """The estimate of one pipeline run."""

    pipeline: str
    rows: list[EstimateRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0  # how long the estimate took

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.rows)

    @property
    def wall_s(self) -> float:
        return sum(r.wall_s for r in self.rows)

    def role_cost(self, role: str) -> float:
        return sum(r.cost_usd for r in self.rows if r.role == role)


def estimate_row(count: StageCount, settings: LLMSettings) -> EstimateRow:
    """Cost and wall time of one stage's calls at the settings' concurrency and rate limits."""
    batch = bool(getattr(settings, "batch", False))
    prompt, completion = count.prompt_tokens, round(count.completion_tokens)
    cost = call_cost(settings.model, prompt, completion, batch=batch)
    return EstimateRow(role=count.role, stage=count.stage, model=settings.model, requests=count.requests,
                       cached=count.cached, calls=count.calls, prompt_tokens=prompt, completion_tokens=completion,
                       cost_usd=cost, priced=is_priced(settings.model), reply_basis=count.reply_basis,
                       wall_s=wall_time(count, settings), batch=batch,
                       time_basis=time_basis(count, settings), time_source=time_source(count, settings))


def time_basis(count: StageCount, settings: LLMSettings) -> str:
    """"history" when the stage's time comes from this model's recorded runs, else "rule of thumb"."""
    if not count.calls:
        return "history"  # nothing to send: no time to guess
    if getattr(settings, "batch", False):
        return "history" if count.batch_wall_s else "rule of thumb"
    return "history" if count.rate is not None else "rule of thumb"


def time_source(count: StageCount, settings: LLMSettings) -> str:
    """Where the stage's wall time comes from, in words: the recorded rate, or the rough default's rates."""
    if not count.calls:
        return "nothing to send"
    if getattr(settings, "batch", False):
        return ("the last provider batch of this stage" if count.batch_wall_s else
                "no provider batch of this stage recorded: the provider's window decides")
    if count.rate is not None:
        return count.rate.describe()
    if is_local(settings.model):
        return (f"no run recorded: rough default ({LOCAL_PROMPT_TOKENS_PER_S / _local_scale(settings.model):.0f} "
                f"prompt and {LOCAL_REPLY_TOKENS_PER_S / _local_scale(settings.model):.0f} reply tokens/s, "
                "one call at a time, an idle 2-core machine)")
    return (f"no run recorded: rough default ({HOSTED_LATENCY_S:g} s + {HOSTED_TOKENS_PER_S:.0f} reply tokens/s "
            f"per call, {max(1, settings.concurrency)} at a time)")


def wall_time(count: StageCount, settings: LLMSettings) -> float:
    """Seconds for the stage's calls: calls x this model's recorded seconds per call of this stage (the
    stage's wall time over its calls, so concurrency and the local engine's batching are in it), else the
    rough default; never faster than the rpm/tpm quota allows."""
    n = count.calls
    if n == 0:
        return 0.0
    if getattr(settings, "batch", False):  # the provider's queue decides: the last batch of the stage, if any
        return count.batch_wall_s or 0.0
    per_prompt, per_reply = count.prompt_tokens / n, count.completion_tokens / n
    if count.rate is not None:
        seconds = n * count.rate.seconds_per_call
    elif is_local(settings.model):  # the in-process model shares the cores: its calls add up
        scale = _local_scale(settings.model)
        seconds = n * scale * (per_prompt / LOCAL_PROMPT_TOKENS_PER_S + per_reply / LOCAL_REPLY_TOKENS_PER_S)
    else:
        seconds = math.ceil(n / max(1, settings.concurrency)) * (HOSTED_LATENCY_S + per_reply / HOSTED_TOKENS_PER_S)
    if settings.rpm:
        seconds = max(seconds, n / settings.rpm * 60.0)
    if settings.tpm:
        seconds = max(seconds, (count.prompt_tokens + count.completion_tokens) / settings.tpm * 60.0)
    return seconds


def _local_scale(model: str) -> float:
    """How much slower than the reference model a packaged model reads and writes: by its weights' size."""
    from ragwatch.llm.local import packaged

    mine, reference = packaged(model), packaged(LOCAL_REFERENCE_MODEL)
    if mine is None or reference is None:
        return 1.0
    return mine.size / reference.size


def _money(value: float, priced: bool = True) -> str:
    return f"${value:.4f}" if priced else "unpriced"


def format_estimate(estimate: Estimate) -> str:
    """The estimate as a fixed-width table with a total line, then its notes."""
    head = f"{'role':<18} {'stage':<34} {'model':<26} {'calls':>6} {'cached':>6} {'in tok':>9} " \
           f"{'out tok':>8} {'cost':>10} {'wall':>8}"
    lines = [f"Estimate for `{estimate.pipeline}` (no LLM call made; {estimate.seconds:.1f} s)", head,
             "-" * len(head)]
    for r in estimate.rows:
        mark = {"max_tokens": "*", "history of another model": "~"}.get(r.reply_basis, "") if r.calls else ""
        out = f"{r.completion_tokens}{mark}"
        stage = r.stage + (" [batch]" if r.batch else "")
        wall = _duration(r.wall_s) + ("?" if r.time_basis != "history" else "")
        lines.append(f"{r.role[:18]:<18} {stage[:34]:<34} {r.model[:26]:<26} {r.calls:>6} {r.cached:>6} "
                     f"{r.prompt_tokens:>9} {out:>8} {_money(r.cost_usd, r.priced):>10} {wall:>8}")
    if not estimate.rows:
        lines.append("(no LLM call in this pipeline)")
    lines.append("-" * len(head))
    for role in dict.fromkeys(r.role for r in estimate.rows):
        lines.append(f"{'':<18} {'total ' + role:<61} {'':>6} {'':>6} {'':>9} {'':>8} "
                     f"{_money(estimate.role_cost(role)):>10}")
    total_calls = sum(r.calls for r in estimate.rows)
    lines.append(f"{'TOTAL':<18} {'':<34} {'':<26} {total_calls:>6} {sum(r.cached for r in estimate.rows):>6} "
                 f"{sum(r.prompt_tokens for r in estimate.rows):>9} "
                 f"{sum(r.completion_tokens for r in estimate.rows):>8} {_money(estimate.cost_usd):>10} "
                 f"{_duration(estimate.wall_s):>8}")
    if any(r.reply_basis == "max_tokens" and r.calls for r in estimate.rows):
        lines.append("* reply tokens at max_tokens (no run history for that stage yet): an upper bound")
    if any(r.reply_basis == "history of another model" and r.calls for r in estimate.rows):
        lines.append("~ reply tokens from another model's run of that stage (none of this model yet)")
    guessed = [r for r in estimate.rows if r.time_basis != "history"]
    if guessed:
        share = sum(r.wall_s for r in guessed) / estimate.wall_s if estimate.wall_s else 1.0
        lines.append(f"? wall time with no history to stand on ({len(guessed)} of {len(estimate.rows)} stages, "
                     f"{share:.0%} of the total): no run of that stage with that model on this machine yet, so "
                     "it is a rough default (fixed token rates) that can be off by a factor of several; "
                     "a run records its times and the next estimate uses them")
    timed = [r for r in estimate.rows if r.calls and r.time_source]
    if timed:
        lines.append("wall time per stage = calls x seconds per call of that stage and model on this machine:")
        lines += [f"  {r.stage}: {_duration(r.wall_s)} = {r.calls} x {r.time_source}"
                  if r.time_basis == "history" and not r.batch else f"  {r.stage}: {_duration(r.wall_s)}, "
                  f"{r.time_source}" for r in timed]
    if (load := machine_load()) is not None:
        lines.append(load)
    lines += [f"note: {n}" for n in estimate.notes]
    return "\n".join(lines)


def machine_load() -> str | None:
    """A warning when other work shares the machine: the times above assume it is idle."""
    import os

    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
    except (OSError, AttributeError):
        return None
    if load < cores * 0.75:
        return None
    return (f"! the machine is busy (load average {load:.1f} on {cores} cores): local models share it, so the "
            f"run can take several times the wall time above")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


class Actual(BaseModel):
    """What the run recorded for one (model, stage): summed over its history records."""

    model: str
    stage: str
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0


def actuals(records: Sequence[StageRecord]) -> dict[tuple[str, str], Actual]:
    out: dict[tuple[str, str], Actual] = {}
    for r in records:
        a = out.setdefault((r.model, r.stage), Actual(model=r.model, stage=r.stage))
        a.calls += r.calls
        a.cache_hits += r.cache_hits
        a.prompt_tokens += r.prompt_tokens
        a.completion_tokens += r.completion_tokens
        a.cost_usd += r.cost_usd
        a.wall_s += r.wall_s
    return out


def format_comparison(estimate: Estimate, records: Sequence[StageRecord]) -> str:
    """Estimate vs actual per stage (calls, tokens, dollars, wall seconds) and in total."""
    got = actuals(records)
    head = (f"{'stage':<40} {'calls est/act':>14} {'in tok est/act':>20} {'out tok est/act':>18} "
            f"{'cost est/act':>22} {'wall est/act':>14}")
    lines = ["Estimate vs actual (usage history of this run)", head, "-" * len(head)]
    keys = list(dict.fromkeys([(r.model, r.stage) for r in estimate.rows] + list(got)))
    for model, stage in keys:
        rows = [r for r in estimate.rows if (r.model, r.stage) == (model, stage)]
        a = got.get((model, stage), Actual(model=model, stage=stage))
        est = (sum(r.calls for r in rows), sum(r.prompt_tokens for r in rows),
               sum(r.completion_tokens for r in rows), sum(r.cost_usd for r in rows), sum(r.wall_s for r in rows))
        lines.append(f"{stage[:40]:<40} {f'{est[0]}/{a.calls}':>14} {f'{est[1]}/{a.prompt_tokens}':>20} "
                     f"{f'{est[2]}/{a.completion_tokens}':>18} {f'${est[3]:.4f}/${a.cost_usd:.4f}':>22} "
                     f"{f'{_duration(est[4])}/{_duration(a.wall_s)}':>14}")
    est = [sum(getattr(r, f) for r in estimate.rows) for f in ("calls", "prompt_tokens", "completion_tokens")]
    act = [sum(getattr(a, f) for a in got.values()) for f in ("calls", "prompt_tokens", "completion_tokens")]
    total_act = sum(a.cost_usd for a in got.values())
    wall = f"{_duration(estimate.wall_s)}/{_duration(sum(a.wall_s for a in got.values()))}"
    lines.append(f"{'TOTAL':<40} {f'{est[0]}/{act[0]}':>14} {f'{est[1]}/{act[1]}':>20} {f'{est[2]}/{act[2]}':>18} "
                 f"{f'${estimate.cost_usd:.4f}/${total_act:.4f}':>22} {wall:>14}")
    return "\n".join(lines)
