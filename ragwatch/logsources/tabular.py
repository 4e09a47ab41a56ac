"""JSONL and CSV logs with named columns (`ragwatch.rows.read_rows`), the names configurable.

Columns (defaults; `LogColumns` renames them): `question`, `answer`, `contexts` (a list of strings or of
objects `{text, id, source, score}`; in CSV a JSON-encoded list), `timestamp` (ISO 8601 or epoch
seconds), `trace_id`, and optional `reference_answer`, `feedback` (thumbs or a rating; see
`feedback_parse`), `feedback_scale`, `system_version`, `relevant` (ids or sources of the relevant passages).

Example:
    >>> result = read_tabular("answers.jsonl", LogColumns(question="query"))  # doctest: +SKIP
    >>> print(result.describe())  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ragwatch.logsources.feedback_parse import parse_feedback
from ragwatch.logsources.records import LogContext, LogReadResult, LogRecord, collect, parse_timestamp, string_list
from ragwatch.logsources.settings import LogColumns
from ragwatch.rows import data_suffix, read_rows, text_lines


def read_tabular(path: str | Path, columns: LogColumns | None = None, *, csv_format: bool | None = None,
                 feedback_scale: tuple[float, float] | None = None) -> LogReadResult:
    """Every row of a JSONL or CSV log as a record or a bad row (never raised, never dropped)."""
    columns = columns or LogColumns()
    path = Path(path)
    is_csv = data_suffix(path) == ".csv" if csv_format is None else csv_format
    result = LogReadResult(source=str(path), format="csv" if is_csv else "jsonl", expected=_expected(columns, is_csv))
    fields: list[str] = []  # the first row's columns (fields): the shape found

    def named(line: int, row: dict[str, Any] | str) -> tuple[str, dict[str, Any] | str]:
        if isinstance(row, dict) and not fields:
            fields.extend(map(str, row))
        return f"line {line}", row

    rows = (named(line, row) for line, row in read_rows(path, csv_format=is_csv))
    collect(result, rows, lambda row, where: _record(row, columns, where, feedback_scale, is_csv))
    result.found = _found(path, fields, is_csv)
    return result


def _expected(c: LogColumns, is_csv: bool) -> str:
    kind = "a CSV row" if is_csv else "a JSON object per line"
    return (f"{kind} per answer with {'columns' if is_csv else 'fields'} {c.question!r}, {c.answer!r}, "
            f"{c.contexts!r}, {c.timestamp!r}, {c.trace_id!r} (logs.columns maps other names)")


def _found(path: Path, fields: list[str], is_csv: bool) -> str:
    """The shape the file had: the first row's columns, a header only, blank lines only, or 0 bytes."""
    if fields:
        return f"{'columns' if is_csv else 'fields'} {', '.join(map(repr, fields))}"
    lines = [text for _, text, error in text_lines(path) if error is None and text.strip()]
    if is_csv and lines:
        header = next(csv.reader(lines[:1]), [])
        return f"a header line only (columns {', '.join(map(repr, header))})" if len(lines) == 1 else "no readable row"
    if lines:
        return "no JSON object on any line"
    return "only blank lines" if path.stat().st_size else "0 bytes"


def _absent(row: dict[str, Any], name: str, is_csv: bool) -> str:
    """Why a value is missing: no such column (naming the ones there are), or an empty one."""
    if name in row or _get(row, name) is not None:
        return f"{'column' if is_csv else 'field'} {name!r} is empty"
    what = "column" if is_csv else "field"
    return f"no {what} {name!r} ({what}s found: {', '.join(map(repr, row))})"


def _get(row: dict[str, Any], name: str) -> Any:
    if name in row:
        return row[name]
    value: Any = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _text(row: dict[str, Any], name: str) -> str | None:
    value = _get(row, name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return str(value)


def _record(row: dict[str, Any], c: LogColumns, where: str, feedback_scale: tuple[float, float] | None,
            is_csv: bool = False) -> LogRecord | str:
    question = _text(row, c.question)
    if question is None:
        raise ValueError(f"no question: {_absent(row, c.question, is_csv)}")
    trace_id = _text(row, c.trace_id)
    if trace_id is None:
        raise ValueError(f"no trace id: {_absent(row, c.trace_id, is_csv)}; every logged answer needs its own id")
    raw_time = _get(row, c.timestamp)
    if raw_time in (None, ""):
        raise ValueError(f"no timestamp: {_absent(row, c.timestamp, is_csv)}")
    raw_contexts = _get(row, c.contexts)
    if raw_contexts is None or (isinstance(raw_contexts, str) and not raw_contexts.strip()):
        return (f"no contexts: {_absent(row, c.contexts, is_csv)}: what the system retrieved is unknown, "
                "so its answer cannot be judged against it; log [] for a retrieval that found nothing")
    scale = _get(row, c.feedback_scale)
    answer = _text(row, c.answer)
    record = LogRecord(
        trace_id=trace_id, question=question, answer=answer or "",
        no_answer=None if answer is not None or c.answer in row else _absent(row, c.answer, is_csv),
        contexts=parse_log_contexts(raw_contexts, c), timestamp=parse_timestamp(raw_time),
        reference_answer=_text(row, c.reference_answer),
        feedback=parse_feedback(_get(row, c.feedback), scale if scale not in (None, "") else feedback_scale),
        system_version=_text(row, c.system_version), relevant=string_list(_get(row, c.relevant), "relevant"),
        where=where,
    )
    return record


def parse_log_contexts(raw: Any, c: LogColumns | None = None) -> list[LogContext]:
    """A list (or a JSON-encoded list) of strings or objects -> `LogContext`s; ValueError names the bad one."""
    c = c or LogColumns()
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"contexts is not a JSON list ({exc.msg}); in CSV write it as "
                             '["passage one", "passage two"]') from exc
    if not isinstance(raw, list):
        raise ValueError(f"contexts must be a list of strings or objects, got {type(raw).__name__}")
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            out.append(LogContext(text=item))
        elif isinstance(item, dict):
            text = item.get(c.context_text)
            if not isinstance(text, str):
                raise ValueError(f"context {i} has no text field {c.context_text!r} (fields: {sorted(item)})")
            score = item.get("score")
            out.append(LogContext(text=text, id=_opt(item.get(c.context_id)), source=_opt(item.get(c.context_source)),
                                  score=float(score) if isinstance(score, (int, float)) else None))
        else:
            raise ValueError(f"context {i} is a {type(item).__name__}; expected a string or an object")
    return out


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)

