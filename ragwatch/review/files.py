"""The review file: a sample written as CSV and JSONL, a filled one read back and validated.

`write_review_files` writes a `ReviewSample`'s rows as CSV (opens in a spreadsheet) and JSONL.
`read_label_file` reads either format back (line numbers kept), and `validate_labels` checks every
row: unknown item ids, unknown metrics, labels outside the metric's scale (0/1, or yes/no, for
pass/fail metrics), duplicates. Each problem is reported with its line; every valid label is kept.
The review page validates each label it stores with the same function.

Example:
    >>> csv_path, jsonl_path = write_review_files(sample, Path("reviews"), "run-1")  # doctest: +SKIP
    >>> labels, problems = validate_labels(read_label_file(csv_path), metrics)  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragwatch.results import MetricInfo, MetricResult
from ragwatch.review.labels import HumanLabel
from ragwatch.review.sample import BASE_COLUMNS, JUDGE_PREFIX, LABEL_PREFIX, ReviewSample
from ragwatch.rows import read_rows

CONTEXT_SEPARATOR = "\n-----\n"  # between retrieved passages in the CSV's contexts cell
_YES = {"yes", "true", "pass", "passed", "faithful", "supported", "correct"}
_NO = {"no", "false", "fail", "failed", "hallucinated", "unsupported", "incorrect"}


class LabelProblem(BaseModel):
    """One row (or cell) of a label file that could not be used, and why."""

    line: int
    item_id: str | None = None
    metric: str | None = None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" + (f", item {self.item_id}" if self.item_id else "")
        where += f", {self.metric}" if self.metric else ""
        return f"{where}: {self.message}"


def write_review_files(sample: ReviewSample, directory: Path, stem: str) -> tuple[Path, Path]:
    """`<stem>.csv` and `<stem>.jsonl` in `directory`; fill the `label:` columns of either and import it."""
    directory.mkdir(parents=True, exist_ok=True)
    csv_path, jsonl_path = directory / f"{stem}.csv", directory / f"{stem}.jsonl"
    columns = BASE_COLUMNS + [LABEL_PREFIX + m for m in sample.metrics] + [JUDGE_PREFIX + m for m in sample.metrics]
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in sample.rows:
            writer.writerow({**row, "contexts": CONTEXT_SEPARATOR.join(row["contexts"])})
    jsonl_path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in sample.rows),
                          encoding="utf-8")
    return csv_path, jsonl_path


def read_label_file(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """Rows of a filled review file (CSV or JSONL) with the line each starts on."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"label file not found: {path}; pass the CSV or JSONL written by review export")
    if path.suffix.lower() not in (".csv", ".jsonl", ".json"):
        raise ValueError(f"{path}: a label file is .csv or .jsonl (as review export writes them)")
    # a line that is not a row becomes an `__error__` row: validate_labels reports it with its line
    return [(line, {"__error__": row} if isinstance(row, str) else row) for line, row in read_rows(path)]


def parse_value(raw: Any, info: MetricInfo) -> float | None:
    """A label on the metric's scale; None when empty (not labelled). Raises ValueError when invalid."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, bool | int | float):
        value = float(raw)
    else:
        text = str(raw).strip().lower()
        if info.binary and text in _YES | _NO:
            value = 1.0 if text in _YES else 0.0
        else:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{raw!r} is not a number" + (" or yes/no" if info.binary else "")) from None
    if not math.isfinite(value):
        raise ValueError(f"{raw!r} is not a finite number")
    if info.binary and value not in (0.0, 1.0):
        raise ValueError(f"{raw!r} is not a pass/fail label: use 1 or 0 (yes or no)")
    if info.scale is not None and not info.scale[0] <= value <= info.scale[1]:
        raise ValueError(f"{raw!r} is outside the metric's scale {info.scale[0]:g}-{info.scale[1]:g}")
    return value


def validate_labels(
    rows: Sequence[tuple[int, dict[str, Any]]],
    metrics: dict[str, MetricResult],
    *,
    source: str = "",
) -> tuple[list[HumanLabel], list[LabelProblem]]:
    """Every valid label of `rows` and every problem with its line (see the module doc).

    `metrics` are the judged metrics of the run the rows were exported from: they define the known
    item ids and each metric's scale. A duplicate (same item and metric twice) keeps the first.
    """
    known_items = {it.item_id for m in metrics.values() for it in m.items}
    judged_keys = {(name, it.item_id): it.details.get("judged_key") for name, m in metrics.items() for it in m.items}
    labels: list[HumanLabel] = []
    problems: list[LabelProblem] = []
    seen: dict[tuple[str, str], int] = {}
    reported_columns: set[str] = set()
    for line, row in rows:
        if "__error__" in row:
            problems.append(LabelProblem(line=line, message=row["__error__"]))
            continue
        item_id = str(row.get("item_id") or "").strip()
        if not item_id:
            problems.append(LabelProblem(line=line, message="no item_id: keep the item_id column of the export"))
            continue
        if item_id not in known_items:
            problems.append(LabelProblem(line=line, item_id=item_id,
                                         message="unknown item id: not an item of the exported run"))
            continue
        try:
            prob = float(row.get("inclusion_prob") or 1.0)
            if not 0 < prob <= 1:
                raise ValueError
        except (TypeError, ValueError):
            problems.append(LabelProblem(line=line, item_id=item_id,
                                         message=f"inclusion_prob {row.get('inclusion_prob')!r} is not in (0, 1]"))
            continue
        for column, raw in row.items():
            if not isinstance(column, str) or not column.startswith(LABEL_PREFIX):
                continue
            metric = column[len(LABEL_PREFIX):]
            if metric not in metrics:
                if column not in reported_columns:
                    reported_columns.add(column)
                    problems.append(LabelProblem(line=line, metric=metric,
                                                 message=f"unknown metric: the run has {sorted(metrics)}"))
                continue
            try:
                value = parse_value(raw, metrics[metric].info)
            except ValueError as exc:
                problems.append(LabelProblem(line=line, item_id=item_id, metric=metric, message=str(exc)))
                continue
            if value is None:
                continue
            if (item_id, metric) in seen:
                problems.append(LabelProblem(line=line, item_id=item_id, metric=metric,
                                             message=f"duplicate label: line {seen[item_id, metric]} already "
                                                     "labels this item; the first is kept"))
                continue
            seen[item_id, metric] = line
            labels.append(HumanLabel(
                item_id=item_id, metric=metric, value=value, stratum=str(row.get("stratum") or "all"),
                inclusion_prob=prob, source_run=str(row.get("run_id") or "") or None, source=source, line=line,
                reviewer=str(row.get("reviewer") or "") or None, judged_key=judged_keys.get((metric, item_id)),
            ))
    return labels, problems
