"""Time windows of a log and the seeded sample of each that is evaluated.

A window is `[start, end)`. The evaluated window ends at `at` (default: the end of the UTC day of the
newest record); the previous window is the one before it; the reference window starts at `reference`
(default: the first window of the log, aligned on the same grid). The budget is about LLM calls: the
metrics that need none (retrieval, lexical) are measured on every answer of the window (`all_records`,
inclusion probability 1); the judges score a sample of `budget` answers (`records`), drawn by simple
random sampling without replacement (seeded by the seed, the window's start and its label), so every
answer of a window had the same chance, `inclusion_prob = n / N`, and the sample mean is unbiased for
the window's mean.

Example:
    >>> windows = select_windows(result.records, WindowSettings(length="1d", budget=150))  # doctest: +SKIP
    >>> windows.current.n_population, windows.current.inclusion_prob  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from ragwatch.log_settings import parse_duration
from ragwatch.logs.records import LogRecord, parse_timestamp
from ragwatch.logs.settings import WindowSettings


class LogWindow(BaseModel):
    """The sampled answers of one window, with how they were drawn."""

    label: str  # "current", "previous", "reference", or a system version
    start: datetime
    end: datetime
    records: list[LogRecord] = Field(default_factory=list)  # the sample the judges score
    unsampled: list[LogRecord] = Field(default_factory=list)  # the window's other answers (costless metrics only)
    n_population: int = 0  # answers logged in the window
    seed: int = 0

    @property
    def all_records(self) -> list[LogRecord]:
        """Every answer of the window, in time order."""
        return sorted([*self.records, *self.unsampled], key=lambda r: (r.timestamp, r.trace_id))

    @property
    def inclusion_prob(self) -> float:
        return len(self.records) / self.n_population if self.n_population else 0.0

    @property
    def name(self) -> str:
        day = timedelta(days=1)
        if self.end - self.start == day and self.start.time() == datetime.min.time():
            return self.start.date().isoformat()
        return f"{self.start.isoformat(timespec='minutes')} to {self.end.isoformat(timespec='minutes')}"

    def describe(self) -> str:
        return (f"{self.label} window {self.name}: {len(self.records)} of {self.n_population} answers sampled for "
                f"the judges (inclusion probability {self.inclusion_prob:.3g}); the metrics that need no LLM call "
                f"on all {self.n_population}")


class Windows(BaseModel):
    current: LogWindow
    previous: LogWindow
    reference: LogWindow


def _day_start(moment: datetime) -> datetime:
    return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)


def _moment(text: str) -> datetime:
    moment = parse_timestamp(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def window_of(records: Sequence[LogRecord], label: str, start: datetime, end: datetime, budget: int,
              seed: int) -> LogWindow:
    """The records in `[start, end)`, sampled to `budget` (seeded by `seed` and `start`)."""
    inside = sorted((r for r in records if start <= r.timestamp < end), key=lambda r: (r.timestamp, r.trace_id))
    key = hashlib.sha256(f"{seed}|{start.isoformat()}|{label}".encode()).hexdigest()
    chosen = inside if len(inside) <= budget else random.Random(int(key[:16], 16)).sample(inside, budget)
    chosen.sort(key=lambda r: (r.timestamp, r.trace_id))
    picked = {r.trace_id for r in chosen}
    return LogWindow(label=label, start=start, end=end, records=chosen, n_population=len(inside), seed=seed,
                     unsampled=[r for r in inside if r.trace_id not in picked])


def select_windows(records: Sequence[LogRecord], settings: WindowSettings, at: str | None = None,
                   length: str | None = None) -> Windows:
    """The current, previous and reference windows (`at` / `length` override the settings, as the
    command line does). ValueError when the log has no record."""
    if not records:
        raise ValueError("the log has no answer to evaluate (see its bad rows)")
    span = parse_duration(length or settings.length)
    at_text = at or settings.at
    end = _moment(at_text) if at_text else _day_start(max(r.timestamp for r in records)) + timedelta(days=1)
    start = end - span
    first = min(r.timestamp for r in records)
    if settings.reference:
        ref_start = _moment(settings.reference)
    else:  # the first window of the log on the grid of the current one
        steps = (start - first) // span + (1 if (start - first) % span else 0)
        ref_start = start - steps * span
    budget, seed = settings.budget, settings.seed
    return Windows(
        current=window_of(records, "current", start, end, budget, seed),
        previous=window_of(records, "previous", start - span, start, budget, seed),
        reference=window_of(records, "reference", ref_start, ref_start + span, budget, seed),
    )


def by_version(window: LogWindow) -> dict[str, LogWindow]:
    """The window split by `system_version` (records without one under "unversioned"): each version's
    sampled and unsampled answers (a simple random sample of the window is one of each version too)."""
    def split(records: list[LogRecord]) -> dict[str, list[LogRecord]]:
        groups: dict[str, list[LogRecord]] = {}
        for record in records:
            groups.setdefault(record.system_version or "unversioned", []).append(record)
        return groups

    sampled, unsampled = split(window.records), split(window.unsampled)
    return {version: window.model_copy(update={
        "label": f"version {version}", "records": sampled.get(version, []), "unsampled": unsampled.get(version, []),
        "n_population": len(sampled.get(version, [])) + len(unsampled.get(version, []))})
        for version in dict.fromkeys([*sampled, *unsampled])}
