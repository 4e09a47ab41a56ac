"""The usage history: one JSON line per stage of calls (`LLMClient.generate_many` with a `desc`),
so an estimate can learn reply lengths and latencies from earlier runs and a run can be set against
its estimate.

The file is `<cache root>/usage/history.jsonl` (`$RAGWATCH_CACHE_DIR`, else `~/.cache/ragwatch`).
It holds counts, tokens, dollars and seconds only: no prompt, reply or key.

Runs that overlap stay apart: every record carries the id of the run that made it (`run_id`, from
`$RAGWATCH_RUN_ID`, which `start_run()` sets for the process and the steps it runs), so a run's
"estimate vs actual" reads `read_history(since=..., run_id=...)`: its own calls only, not those of
another process on the same machine writing to the same file.

Example:
    >>> since = time.time(); client.generate_many(prompts, desc="rag answers")  # doctest: +SKIP
    >>> read_history(since=since)[0].stage  # doctest: +SKIP
    'rag answers'
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from ragwatch.llm.cache import default_cache_root
from ragwatch.llm.types import Usage

_lock = threading.Lock()
RUN_ID_ENV = "RAGWATCH_RUN_ID"
MAX_BYTES = 5_000_000  # past this the file keeps its newest half


class StageRecord(BaseModel):
    """The usage of one stage (one `generate_many`) of one model."""

    time: float
    model: str
    stage: str
    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    # summed over the calls, each from its start (its wait for a free slot included) to its reply: with
    # `concurrency` slots it grows with the stage, so an estimate reads times from `wall_s` (`stage_rate`)
    latency_s: float = 0.0
    wall_s: float = 0.0
    batch: bool = False  # sent as a provider batch job
    run_id: str | None = None  # the run that made the calls (`start_run`); None in records from before

    @classmethod
    def of(cls, model: str, stage: str, usage: Usage, wall_s: float, batch: bool = False) -> StageRecord:
        return cls(time=time.time(), model=model, stage=stage, requests=usage.requests, calls=usage.calls,
                   cache_hits=usage.cache_hits, failures=usage.failures, prompt_tokens=usage.prompt_tokens,
                   completion_tokens=usage.completion_tokens, cost_usd=usage.cost_usd,
                   latency_s=usage.latency_s, wall_s=wall_s, batch=batch, run_id=current_run())


def start_run() -> str:
    """A new run id for this process (and the steps it runs): its usage records carry it."""
    run_id = uuid.uuid4().hex
    os.environ[RUN_ID_ENV] = run_id
    return run_id


def current_run() -> str | None:
    return os.environ.get(RUN_ID_ENV) or None


def history_path(root: Path | None = None) -> Path:
    return (root or default_cache_root()) / "usage" / "history.jsonl"


def record_stage(record: StageRecord, root: Path | None = None) -> None:
    """Append one record (best effort: a read-only disk never fails a run)."""
    path = history_path(root)
    try:
        with _lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as out:
                out.write(record.model_dump_json() + "\n")
            if path.stat().st_size > MAX_BYTES:
                lines = path.read_text(encoding="utf-8").splitlines()
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text("\n".join(lines[len(lines) // 2:]) + "\n", encoding="utf-8")
                tmp.replace(path)
    except OSError:
        pass


def read_history(since: float | None = None, root: Path | None = None, run_id: str | None = None, *,
                 path: Path | None = None) -> list[StageRecord]:
    """Every record (at or after `since`, a `time.time()`; of run `run_id` when given), oldest first;
    unreadable lines skipped. `path`: another history file (a copy from another machine)."""
    path = path or history_path(root)
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = StageRecord.model_validate_json(line)
        except ValueError:
            continue
        if (since is None or record.time >= since) and (run_id is None or record.run_id == run_id):
            out.append(record)
    return out


class Typical(BaseModel):
    """Per provider call of one (model, stage), from the newest records that sent calls."""

    completion_tokens: float
    prompt_tokens: float
    calls: int


def typical(records: Iterable[StageRecord], model: str | None, stage: str, last: int = 3) -> Typical | None:
    """Mean reply and prompt tokens per call over the `last` records that sent calls; `model=None`: of
    any model (the same prompts' reply lengths under another model). Times are `stage_rate`'s."""
    sent = [r for r in records if (model is None or r.model == model) and r.stage == stage and r.calls > 0]
    sent = sent[-last:]
    calls = sum(r.calls for r in sent)
    if not calls:
        return None
    return Typical(completion_tokens=sum(r.completion_tokens for r in sent) / calls,
                   prompt_tokens=sum(r.prompt_tokens for r in sent) / calls, calls=calls)


# How a stage's time is read from the history (one room for these choices):
RATE_RUNS = 10  # the newest runs of the stage: an old run on other code or hardware says little
# The run a quarter of the way up from the fastest: load only ever slows a run, so the slow side of the
# spread is other work on the machine; the very fastest may be noise, or a run with lighter calls.
RATE_QUANTILE = 0.25
RATE_MAX_FAILED = 0.1  # a run whose calls failed fast (a refused connection) says nothing of their time
# a run whose calls read more than this many times fewer or more prompt tokens (a test's tiny prompts, another
# config's) is not a rate for these calls, while a run of alike calls exists
RATE_ALIKE = 2.0


class StageRate(BaseModel):
    """Seconds of a stage's wall time per call sent, as this machine ran it: the `quantile` of the
    per-run figures of the newest `runs` runs of one (model, stage)."""

    model: str
    stage: str
    seconds_per_call: float
    runs: int  # runs it was read from
    calls: int  # calls in those runs
    first: float  # time of the oldest record read
    last: float  # time of the newest
    fastest: float  # per-call seconds of the fastest and the slowest of those runs
    slowest: float
    quantile: float = RATE_QUANTILE
    unlike: bool = False  # no run had calls alike these (prompt tokens per call): read from all runs

    def describe(self) -> str:
        """Which figure it is and where it comes from: "<s>/call: the 0.25 quantile of <n> runs (<calls>
        calls, <first> to <last> UTC; the runs took <fastest>-<slowest> s/call)"."""
        when = f"{_when(self.first)} to {_when(self.last)} UTC" if self.runs > 1 else f"{_when(self.last)} UTC"
        pick = "that run" if self.runs == 1 else f"the {self.quantile:.2f} quantile of {self.runs} runs"
        spread = f"; the runs took {self.fastest:.2f}-{self.slowest:.2f} s/call" if self.runs > 1 else ""
        unlike = "; their calls' prompts differ from these by more than 2x" if self.unlike else ""
        return f"{self.seconds_per_call:.2f} s/call: {pick} ({self.calls:,} calls, {when}{spread}{unlike})"


def stage_rate(records: Iterable[StageRecord], model: str, stage: str, *, prompt_tokens: float | None = None,
               runs: int = RATE_RUNS, quantile: float = RATE_QUANTILE) -> StageRate | None:
    """The stage's seconds per call sent: per run (records of one `run_id` summed: wall over calls), the
    newest `runs` runs, the `quantile` of their figures (an observed run's, not an interpolation); None
    when no online run of this model sent calls in this stage. Records without a run id count as runs of
    their own; provider batch records are left out (a provider queue's wait is not a rate). With `prompt_tokens`
    (per call of the calls to time) only runs whose calls read within `RATE_ALIKE`x as many count, while
    there is one."""
    groups: dict[str, list[StageRecord]] = {}
    for k, r in enumerate(records):
        if r.model == model and r.stage == stage and not r.batch and r.calls > 0 and r.wall_s > 0:
            groups.setdefault(r.run_id or f"record {k}", []).append(r)
    usable = []
    for group in groups.values():
        calls = sum(r.calls for r in group)
        if sum(r.failures for r in group) <= RATE_MAX_FAILED * calls:
            usable.append((max(r.time for r in group), min(r.time for r in group), calls,
                           sum(r.wall_s for r in group) / calls, sum(r.prompt_tokens for r in group) / calls))
    alike = [u for u in usable if not prompt_tokens or not u[4]
             or 1 / RATE_ALIKE <= u[4] / prompt_tokens <= RATE_ALIKE]
    unlike = bool(usable) and not alike
    usable = sorted(alike or usable)[-runs:]  # the newest runs, by their last record
    if not usable:
        return None
    per_call = sorted(u[3] for u in usable)
    return StageRate(model=model, stage=stage, seconds_per_call=per_call[int(quantile * (len(per_call) - 1))],
                     runs=len(usable), calls=sum(u[2] for u in usable), first=min(u[1] for u in usable),
                     last=max(u[0] for u in usable), fastest=per_call[0], slowest=per_call[-1], quantile=quantile,
                     unlike=unlike)


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))
