"""Progress of a long loop: a tqdm bar on a terminal, a log line about every 10% elsewhere.

Output redirected to a file or a CI log gets no bar (it would print nothing useful or thousands of
carriage returns), so there each ~10% step is one line on the `ragwatch.progress` logger, which
writes to stderr unless the application configured handlers for it. A handful of items gets no lines
unless they are slow (a line at most every `SLOW_LINE_S` seconds): a judge stage of 8 items at 20 s
each must not look like a hang.

Example:
    >>> with Progress(5000, "judge correctness") as progress:
    ...     for item in items:
    ...         score(item)
    ...         progress.update()
    # not a terminal: "judge correctness: 500/5000 (10%) in 52s, about 470s left" ... "done in 521s"

Work whose size is learnt on the way (a judge's later stages: only items still undecided go on)
`grow`s one bar instead of starting another, so a judge reads as one sequence of lines with one
total and one estimate; the judge engine shares one bar across a judge's stages and its concurrent
batches (`LLMClient.generate_many(desc=progress)`).
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tqdm.auto import tqdm

log = logging.getLogger("ragwatch.progress")
MIN_TOTAL_FOR_LINES = 20  # a handful of calls needs no progress report, unless it is slow
SLOW_LINE_S = 30.0


def _ensure_handler() -> None:
    """Progress is info and must reach CI logs: under a root logger at WARNING (ZenML's default here)
    this logger still passes info on, and with no handler anywhere it writes to stderr itself.
    `logging.getLogger("ragwatch.progress").setLevel(logging.WARNING)` silences it."""
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        log.addHandler(handler)
        log.propagate = False


class Progress:
    """Counts finished items of a known total; `update()` once per item, from any thread (the judge
    engine runs concurrent batches on a thread pool); `grow(n)` when more work turns up."""

    def __init__(
        self,
        total: int,
        desc: str,
        *,
        terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        unit: str = "",
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = f" {unit}" if unit else ""
        self._lock = threading.Lock()
        self.more_may_come = False  # set by work that may `grow`: reaching the total is not the end
        self._done_said = False
        self.done = 0
        self._clock = clock
        self._started = clock()
        self.terminal = sys.stdout.isatty() if terminal is None else terminal
        self._bar: Any = tqdm(total=total, desc=desc, leave=False, unit=unit or "it") if self.terminal else None
        self._lines = not self.terminal
        self._few = total < MIN_TOTAL_FOR_LINES
        self._last_line = self._started
        self._next_line_at = max(1, math.ceil(total / 10))
        if self._lines:
            _ensure_handler()

    def grow(self, n: int) -> None:
        """`n` more items to do (a later stage of the same work): the same bar, a larger total."""
        with self._lock:
            self.total += n
            self._few = self.total < MIN_TOTAL_FOR_LINES
            if self._bar is not None:
                self._bar.total = self.total
                self._bar.refresh()
            if not self.terminal and self.done < self.total:
                self._lines = True  # lines stopped at a "done" line: the work goes on
                _ensure_handler()

    def update(self, n: int = 1) -> None:
        with self._lock:
            self._update(n)

    def _update(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        if not self._lines or self.done < self._next_line_at:
            return
        now = self._clock()
        if self._few and now - self._last_line < SLOW_LINE_S:
            return
        self._last_line = now
        elapsed = now - self._started
        if self.done >= self.total:
            if not self.more_may_come:
                self._say_done(elapsed)
            return
        left = elapsed / self.done * (self.total - self.done)
        log.info(
            "%s: %d/%d%s (%d%%) in %.0fs, about %.0fs left",
            self.desc, self.done, self.total, self.unit, 100 * self.done // self.total, elapsed, left,
        )
        while self._next_line_at <= self.done:
            self._next_line_at += max(1, math.ceil(self.total / 10))

    def _say_done(self, elapsed: float) -> None:
        log.info("%s: %d/%d%s done in %.0fs", self.desc, self.done, self.total, self.unit, elapsed)
        self._lines = False
        self._done_said = True

    def close(self) -> None:
        """The end: a bar held open for more work (`more_may_come`) says "done" now."""
        with self._lock:
            if (self.more_may_come and not self.terminal and not self._done_said and self.done >= self.total
                    and self.total > 0 and (not self._few or self._clock() - self._started >= SLOW_LINE_S)):
                self._say_done(self._clock() - self._started)
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
