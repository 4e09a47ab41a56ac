"""The windows a monitor run compares: the evaluated window, the one before it, and the reference
window (default: the first window of the log, aligned on the same grid), each sampled to the budget
(`ragwatch.logsources.window`); and a window split by system version.

Example:
    >>> windows = select_windows(result.records, MonitorWindow(length="1d", budget=150))  # doctest: +SKIP
    >>> windows.current.n_population, windows.current.inclusion_prob  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from ragwatch.logsources.records import LogRecord
from ragwatch.logsources.settings import parse_duration
from ragwatch.logsources.window import LogWindow, moment, window_end, window_of
from ragwatch.monitoring.settings import MonitorWindow


class Windows(BaseModel):
    current: LogWindow
    previous: LogWindow
    reference: LogWindow


def select_windows(records: Sequence[LogRecord], settings: MonitorWindow, at: str | None = None,
                   length: str | None = None) -> Windows:
    """The current, previous and reference windows (`at` / `length` override the settings, as the
    command line does). ValueError when the log has no record."""
    if not records:
        raise ValueError("the log has no answer to evaluate (see its bad rows)")
    span = parse_duration(length or settings.length or "")
    end = window_end(records, at or settings.at)
    start = end - span
    first = min(r.timestamp for r in records)
    if settings.reference:
        ref_start = moment(settings.reference)
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
