"""Progress off a terminal: a log line about every 10%, none for a handful of items."""

from __future__ import annotations

import logging

from ragwatch.progress import Progress


def test_lines_every_tenth_when_not_a_terminal(caplog):
    now = [0.0]
    progress = Progress(200, "judge x", terminal=False, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="ragwatch.progress"):
        for _ in range(200):
            now[0] += 0.5
            progress.update()
    lines = [r.getMessage() for r in caplog.records if r.name == "ragwatch.progress"]
    assert len(lines) == 10
    assert lines[0] == "judge x: 20/200 (10%) in 10s, about 90s left"
    assert lines[-1] == "judge x: 200/200 done in 100s"


def test_no_lines_for_a_few_items_or_on_a_terminal(caplog):
    with caplog.at_level(logging.INFO, logger="ragwatch.progress"):
        with Progress(5, "tiny", terminal=False) as progress:
            for _ in range(5):
                progress.update()
        with Progress(100, "bar", terminal=True) as progress:
            progress.update(100)
    assert not [r for r in caplog.records if r.name == "ragwatch.progress"]


def test_a_few_slow_items_get_a_line_at_most_every_slow_line_interval(caplog):
    now = [0.0]
    with (caplog.at_level(logging.INFO, logger="ragwatch.progress"),
          Progress(8, "judge faithfulness stage 1", terminal=False, clock=lambda: now[0]) as progress):
        for _ in range(8):
            now[0] += 20.0  # 20 s per item: 160 s in all
            progress.update()
    lines = [r.getMessage() for r in caplog.records if r.name == "ragwatch.progress"]
    assert lines[0] == "judge faithfulness stage 1: 2/8 (25%) in 40s, about 120s left"
    assert len(lines) == 4 and lines[-1] == "judge faithfulness stage 1: 8/8 done in 160s"


def test_lines_pass_a_root_logger_at_warning(monkeypatch):
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    root = logging.getLogger()
    handler = Collect()
    monkeypatch.setattr(root, "level", logging.WARNING)  # as ZenML leaves it with verbosity WARN
    monkeypatch.setattr(logging.getLogger("ragwatch.progress"), "level", logging.NOTSET)
    root.addHandler(handler)
    try:
        progress = Progress(20, "answers", terminal=False)
        progress.update(20)
    finally:
        root.removeHandler(handler)
    assert records == ["answers: 20/20 done in 0s"]
