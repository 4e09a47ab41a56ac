"""The durable store of the review page's labels: an append-only JSONL log, replayed.

`LabelLog` holds one JSON line per event (`label`, `undo`, `skip`, `session`), fsynced before a
request is answered, appended under an exclusive file lock so that two tabs (or two servers) never
interleave. The current labels are `replay(events)`: a later label of the same item and metric
wins; an undo restores the label it replaced; the writer's `check` (run under the lock) can record
what a label replaced when the writer had not seen it (another tab).

Example:
    >>> log = LabelLog(path)  # doctest: +SKIP
    >>> log.append(LabelEvent(kind="skip", tab="t1", item_id="q1"))  # doctest: +SKIP
    >>> replay(log.events()).skipped  # doctest: +SKIP
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from ragwatch.review.labels import now

EventKind = Literal["session", "label", "undo", "skip"]


class LabelEvent(BaseModel):
    """One line of the log. `seq` is its line number (1-based), assigned under the file lock."""

    seq: int = 0
    at: str = ""
    kind: EventKind
    tab: str = ""
    item_id: str = ""
    metric: str = ""
    value: float | None = None
    statements: list[int] | None = None
    stratum: str = ""
    inclusion_prob: float | None = None
    reviewer: str | None = None
    previous: int | None = None  # seq of the label this one replaced (undo restores it)
    replaced: dict[str, Any] | None = None  # set when it replaced a label the writer had not seen
    undoes: int | None = None
    params: dict[str, Any] | None = None  # a session header: run, metrics, n, seed

    @property
    def key(self) -> tuple[str, str]:
        return (self.item_id, self.metric)


class LabelLog:
    """An append-only JSONL file of `LabelEvent`s; safe across threads and processes (flock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)
        self._lock = threading.Lock()
        self._events: list[LabelEvent] = []
        self._offset = 0
        self._lines = 0
        self.skipped_lines: list[int] = []  # a line cut short by a kill mid-write is ignored, not fatal

    def _read_new(self, handle: Any) -> None:
        handle.seek(self._offset)
        data = handle.read()
        end = data.rfind(b"\n") + 1  # only whole lines: a writer may be mid-line in another process
        for raw in data[:end].split(b"\n")[:-1]:
            self._lines += 1
            try:
                event = LabelEvent.model_validate_json(raw)
            except ValueError:
                self.skipped_lines.append(self._lines)
                continue
            self._events.append(event.model_copy(update={"seq": self._lines}))
        self._offset += end

    def events(self) -> list[LabelEvent]:
        """Every event so far, including those other processes appended."""
        with self._lock, self.path.open("rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            try:
                self._read_new(handle)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
            return list(self._events)

    def append(self, event: LabelEvent, check: Any = None) -> LabelEvent:
        """Write `event` (seq and time assigned) durably; `check(events)` runs under the lock first
        and may return an updated event (e.g. filled with what it replaces) or raise."""
        with self._lock, self.path.open("a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self._read_new(handle)
                if check is not None:
                    event = check(list(self._events)) or event
                event = event.model_copy(update={"at": event.at or now()})
                # seq is not written: it is the line number, assigned on reading
                line = (event.model_dump_json(exclude_defaults=True, exclude={"seq"}) + "\n").encode()
                if not self._ends_with_newline(handle):
                    line = b"\n" + line  # a line torn by a kill mid-write stays a line of its own
                handle.seek(0, os.SEEK_END)
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
                self._read_new(handle)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
            return self._events[-1]

    def _ends_with_newline(self, handle: Any) -> bool:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return True
        handle.seek(size - 1)
        return handle.read(1) == b"\n"


@dataclass
class LabelState:
    """The log replayed: the current label per (item, metric), skipped items, the last header."""

    current: dict[tuple[str, str], LabelEvent] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # item -> seq of its last skip
    params: dict[str, Any] | None = None
    last_seq: int = 0


def replay(events: Sequence[LabelEvent]) -> LabelState:
    by_seq = {e.seq: e for e in events}
    state = LabelState()
    for event in events:
        state.last_seq = event.seq
        if event.kind == "session":
            state.params = event.params
        elif event.kind == "skip":
            state.skipped[event.item_id] = event.seq
        elif event.kind == "label":
            state.current[event.key] = event
            state.skipped.pop(event.item_id, None)
        elif event.kind == "undo":
            now = state.current.get(event.key)
            if now is None or now.seq != event.undoes:
                continue  # already replaced by a later label: nothing of this tab's left to undo
            before = by_seq.get(now.previous) if now.previous else None
            if before is not None and before.kind == "label":
                state.current[event.key] = before
            else:
                state.current.pop(event.key)
    return state
