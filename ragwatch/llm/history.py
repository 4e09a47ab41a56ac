"""The usage history: one JSON line per batch of calls (`LLMClient.generate_many` with a `desc`),
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
    latency_s: float = 0.0  # summed over the provider's calls
    wall_s: float = 0.0
    batch: bool = False
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


def read_history(since: float | None = None, root: Path | None = None, run_id: str | None = None
                 ) -> list[StageRecord]:
    """Every record (at or after `since`, a `time.time()`; of run `run_id` when given), oldest first;
    unreadable lines skipped."""
    path = history_path(root)
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
    latency_s: float | None  # online calls only (a batch's calls wait in the provider's queue)
    calls: int


def typical(records: Iterable[StageRecord], model: str | None, stage: str, last: int = 3) -> Typical | None:
    """Mean reply tokens, prompt tokens and latency per call over the `last` records that sent calls;
    `model=None`: of any model (the same prompts' reply lengths under another model)."""
    sent = [r for r in records if (model is None or r.model == model) and r.stage == stage and r.calls > 0]
    sent = sent[-last:]
    calls = sum(r.calls for r in sent)
    if not calls:
        return None
    online = [r for r in sent if not r.batch]
    online_calls = sum(r.calls for r in online)
    return Typical(completion_tokens=sum(r.completion_tokens for r in sent) / calls,
                   prompt_tokens=sum(r.prompt_tokens for r in sent) / calls,
                   latency_s=sum(r.latency_s for r in online) / online_calls if online_calls else None,
                   calls=calls)
