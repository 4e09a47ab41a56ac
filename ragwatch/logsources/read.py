"""One entry to every log format: `read_log(settings) -> LogReadResult`."""

from __future__ import annotations

from pathlib import Path

from ragwatch.logsources.langfuse import read_langfuse
from ragwatch.logsources.openinference import read_openinference
from ragwatch.logsources.records import LogReadResult
from ragwatch.logsources.settings import LogSettings
from ragwatch.logsources.tabular import read_tabular
from ragwatch.rows import data_suffix


def read_log(settings: LogSettings) -> LogReadResult:
    """The records and bad rows of the configured log; FileNotFoundError / ValueError say what to fix,
    also a log with no answer to evaluate (why: empty, or each kind of bad row with its count, and the
    shape expected beside the shape found)."""
    return _read(settings).require_answers()


def _read(settings: LogSettings) -> LogReadResult:
    if settings.format == "phoenix":
        from ragwatch.logsources.phoenix import pull_spans

        assert settings.phoenix is not None  # set by LogSettings
        return pull_spans(settings.phoenix)
    path = Path(settings.path)
    if not path.is_file():
        raise FileNotFoundError(f"logs.path: {path} is not a file")
    fmt = settings.format
    if fmt == "auto":
        fmt = "csv" if data_suffix(path) == ".csv" else "jsonl"
    if fmt in ("jsonl", "csv"):
        return read_tabular(path, settings.columns, csv_format=fmt == "csv", feedback_scale=settings.feedback_scale)
    if fmt == "openinference":
        return read_openinference(path)
    return read_langfuse(path, feedback_scores=settings.feedback_scores, feedback_scale=settings.feedback_scale)
