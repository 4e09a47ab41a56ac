"""The one reader of record files (CSV, JSONL): every row with its line, a bad line as its reason.

A row comes back as `(line, dict)`, with the line it starts on (a quoted CSV cell may span lines);
a line that cannot be a row comes back as `(line, reason)`, never dropped and never raised here, so
each caller decides what a bad line means: the dataset import and the review labels skip it and report
it, a calibration set refuses the file naming it. CSV cells are strings; a row with more cells than
the header is a bad line. Each line is decoded on its own (`text_lines`): bytes that are not UTF-8
cost their row alone, named with the byte and where it sits. A UTF-8 byte-order mark (spreadsheet
exports) is read past. A gzip-compressed file (`answers.jsonl.gz`, as rotated logs are) is read as the
file it holds (`open_text`, `data_suffix`); one cut short keeps the rows before the cut, and the cut is
a bad line.

Example:
    >>> for line, row in read_rows("labels.csv"):  # doctest: +SKIP
    ...     if isinstance(row, str):
    ...         print(f"line {line}: {row}")
"""

from __future__ import annotations

import codecs
import csv
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

CSV_SUFFIXES = (".csv",)
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")

Row = tuple[int, dict[str, Any] | str]


def data_suffix(path: str | Path) -> str:
    """The suffix of the data inside: `.jsonl` for `answers.jsonl` and for `answers.jsonl.gz`."""
    path = Path(path)
    if path.suffix.lower() == ".gz":
        path = path.with_suffix("")
    return path.suffix.lower()


def open_text(path: str | Path, newline: str | None = None) -> IO[str]:
    """The file as text (UTF-8, a byte-order mark read past), decompressed when it ends in `.gz`."""
    path = Path(path)
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline=newline)
    return path.open(encoding="utf-8-sig", newline=newline)


def open_bytes(path: str | Path) -> IO[bytes]:
    """The file's bytes, decompressed when it ends in `.gz`."""
    path = Path(path)
    return gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb")


def read_rows(path: str | Path, *, csv_format: bool | None = None) -> Iterator[Row]:
    """The rows of a CSV or JSONL file (by its suffix, unless `csv_format` says), in file order.

    Blank JSONL lines are skipped. Raises ValueError for a suffix that is neither.
    """
    path = Path(path)
    if csv_format is None:
        suffix = data_suffix(path)
        if suffix not in CSV_SUFFIXES + JSONL_SUFFIXES:
            raise ValueError(f"{path}: expected a .csv or .jsonl file, not {suffix or 'no extension'}")
        csv_format = suffix in CSV_SUFFIXES
    return _csv_rows(path) if csv_format else _jsonl_rows(path)


def text_lines(path: str | Path) -> Iterator[tuple[int, str, str | None]]:
    """Every line of the file as `(number, text, error)`, decoded one at a time (line endings kept):
    `error` says why a line is not UTF-8 (its text then holds each bad byte as a lone surrogate, so a
    reader can still find whose line it was) or that a gzip file ends early (its last item, with empty
    text); None for a good line."""
    path = Path(path)
    number = 0
    try:
        with open_bytes(path) as handle:
            for chunk in handle:
                for raw in chunk.splitlines(keepends=True):  # a lone \r ends a line too, as in text mode
                    number += 1
                    if number == 1 and raw.startswith(codecs.BOM_UTF8):
                        raw = raw[len(codecs.BOM_UTF8):]
                    try:
                        yield number, raw.decode("utf-8"), None
                    except UnicodeDecodeError as exc:
                        yield number, raw.decode("utf-8", errors="surrogateescape"), _undecodable(exc)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        yield number + 1, "", (f"not a gzip file, or a broken one ({exc})" if not number else
                               f"the gzip file breaks off here ({exc}): the {number} lines before it are read, "
                               "what follows is lost")


def _undecodable(exc: UnicodeDecodeError) -> str:
    byte = exc.object[exc.start]
    return (f"undecodable bytes: byte 0x{byte:02x} at position {exc.start + 1} of the line is not UTF-8 "
            "(save the file as UTF-8)")


def _jsonl_rows(path: Path) -> Iterator[Row]:
    for number, line, error in text_lines(path):
        if error is not None:
            yield number, error
            continue
        if line.strip():
            yield number, json_object(line)


def json_object(line: str) -> dict[str, Any] | str:
    """One JSONL line as an object, or why it is not one."""
    try:
        row = json.loads(line.rstrip("\r\n"))  # without its newline, a cut line's column is where it stops
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    return row if isinstance(row, dict) else f"expected a JSON object, got {type(row).__name__}"


def _csv_rows(path: Path) -> Iterator[Row]:
    errors: dict[int, str] = {}  # line -> why it could not be decoded; a row holding one is a bad row

    def lines() -> Iterator[str]:
        for number, line, error in text_lines(path):
            if error is not None:
                errors[number] = error
            yield line

    reader = csv.DictReader(lines())
    try:
        reader.fieldnames  # noqa: B018 (reads the header line)
    except csv.Error as exc:
        yield 1, f"not a CSV header ({exc})"
        return
    if 1 in errors:
        yield 1, f"the header: {errors[1]}"
    start = 2  # line 1 is the header
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            yield start, f"not a CSV row ({exc})"
            start = reader.line_num + 1
            continue
        number, start = start, reader.line_num + 1  # a quoted cell may span lines
        bad = next((n for n in range(number, start) if n in errors), None)
        if bad is not None:  # a quoted cell may span lines: say which one holds the bad bytes
            yield number, errors[bad] if bad == number else f"its line {bad}: {errors[bad]}"
            continue
        if None in row:  # DictReader files surplus cells under the key None
            yield number, f"more cells than the {len(reader.fieldnames or [])} header columns"
            continue
        yield number, row
    yield from ((n, error) for n, error in sorted(errors.items()) if n >= start)  # after the last row: a cut
