"""The one reader of record files (CSV, JSONL): every row with its line, a bad line as its reason.

A row comes back as `(line, dict)`, with the line it starts on (a quoted CSV cell may span lines);
a line that cannot be a row comes back as `(line, reason)`, never dropped and never raised here, so
each caller decides what a bad line means: the dataset import and the review labels skip it and report
it, a calibration set refuses the file naming it. CSV cells are strings; a row with more cells than
the header is a bad line. A UTF-8 byte-order mark (spreadsheet exports) is read past. A gzip-compressed
file (`answers.jsonl.gz`, as rotated logs are) is read as the file it holds (`open_text`, `data_suffix`).

Example:
    >>> for line, row in read_rows("labels.csv"):  # doctest: +SKIP
    ...     if isinstance(row, str):
    ...         print(f"line {line}: {row}")
"""

from __future__ import annotations

import csv
import gzip
import json
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


def _jsonl_rows(path: Path) -> Iterator[Row]:
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line.rstrip("\n"))  # without its newline, a cut line's column is where it stops
            except json.JSONDecodeError as exc:
                yield number, f"not valid JSON ({exc.msg} at column {exc.colno})"
                continue
            yield number, row if isinstance(row, dict) else f"expected a JSON object, got {type(row).__name__}"


def _csv_rows(path: Path) -> Iterator[Row]:
    with open_text(path, newline="") as handle:
        reader = csv.DictReader(handle)
        start = 2  # line 1 is the header
        for row in reader:
            number, start = start, reader.line_num + 1  # a quoted cell may span lines
            if None in row:  # DictReader files surplus cells under the key None
                yield number, f"more cells than the {len(reader.fieldnames or [])} header columns"
                continue
            yield number, row
