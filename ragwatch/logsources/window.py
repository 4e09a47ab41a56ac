"""The window of a log that is evaluated, and the seeded sample of it the judges score: the one window
model (`WindowSettings`), read by the monitor's `window:` block and by a pipeline config's `logs.window:`.

A window is `[start, end)`: the `length` ending at `at` (default: the end of the UTC day of the newest
record), or the whole log when `length` is null. The budget is about LLM calls: the metrics that need
none (retrieval, lexical) can be measured on every answer of the window (`all_records`, inclusion
probability 1); the judges score a sample of `budget` answers (`records`), drawn by simple random
sampling without replacement (seeded by the seed, the window's start and its label), so every answer
of a window had the same chance, `inclusion_prob = n / N`, and the sample mean is unbiased for the
window's mean.

Example:
    >>> window = last_window(result.records, WindowSettings(length="1d", budget=150))  # doctest: +SKIP
    >>> window.n_population, window.inclusion_prob  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragwatch.logsources.records import LogRecord, parse_timestamp
from ragwatch.logsources.settings import parse_duration


class WindowSettings(BaseModel):
    """Which answers of a log are evaluated: the window of `length` ending at `at`, a seeded sample of
    `budget` of them judged. The monitor's `window:` block (which adds the windows it compares with) and
    a pipeline config's `logs.window:` are this model, with these defaults."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    length: str | None = "1d"
    """The window's length: a number and a unit (s, m, h, d, w), e.g. 1d or 12h (`--window` overrides it);
    null: the whole log (a pipeline config's `logs.window` only: the monitor compares windows of a length)."""
    at: str | None = None
    """When the window ends, an ISO date or time (null: the end of the last logged day, UTC; the whole
    log: just after its newest answer)."""
    budget: int | None = 200
    """Answers sampled from the window for the judges, seeded (null: every answer). The monitor measures
    what needs no LLM call on every answer of the window; a log's evaluation set is the sample."""
    seed: int = 0
    """The sampling seed."""

    @field_validator("length")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("budget")
    @classmethod
    def _enough(cls, value: int | None) -> int | None:
        if value is not None and value < 2:
            raise ValueError(f"window.budget must be at least 2 (an interval needs two answers), got {value}")
        return value


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


def _day_start(moment: datetime) -> datetime:
    return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)


def moment(text: str) -> datetime:
    """An ISO date or time as a UTC-aware moment (a naive one is read as UTC)."""
    value = parse_timestamp(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def window_of(records: Sequence[LogRecord], label: str, start: datetime, end: datetime, budget: int | None,
              seed: int) -> LogWindow:
    """The records in `[start, end)`, sampled to `budget` (None: all; seeded by `seed`, `start` and `label`)."""
    inside = sorted((r for r in records if start <= r.timestamp < end), key=lambda r: (r.timestamp, r.trace_id))
    key = hashlib.sha256(f"{seed}|{start.isoformat()}|{label}".encode()).hexdigest()
    if budget is None or len(inside) <= budget:
        chosen = list(inside)
    else:
        chosen = random.Random(int(key[:16], 16)).sample(inside, budget)
    chosen.sort(key=lambda r: (r.timestamp, r.trace_id))
    picked = {r.trace_id for r in chosen}
    return LogWindow(label=label, start=start, end=end, records=chosen, n_population=len(inside), seed=seed,
                     unsampled=[r for r in inside if r.trace_id not in picked])


def window_end(records: Sequence[LogRecord], at: str | None) -> datetime:
    """Where the window ends: `at`, or the end of the UTC day of the newest record."""
    return moment(at) if at else _day_start(max(r.timestamp for r in records)) + timedelta(days=1)


def last_window(records: Sequence[LogRecord], settings: WindowSettings) -> LogWindow:
    """The window `settings` name, sampled: the `length` ending at `at` ("current"), or the whole log
    ("log") up to `at` when `length` is null. ValueError when the log has no record."""
    if not records:
        raise ValueError("the log has no answer to evaluate (see its bad rows)")
    if settings.length is not None:
        end = window_end(records, settings.at)
        return window_of(records, "current", end - parse_duration(settings.length), end, settings.budget,
                         settings.seed)
    times = [r.timestamp for r in records]
    end = moment(settings.at) if settings.at else max(times) + timedelta(seconds=1)
    return window_of(records, "log", min(times), end, settings.budget, settings.seed)
