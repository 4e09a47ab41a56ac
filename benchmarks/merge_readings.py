"""Two independent readings of a labelling packet, merged into labelled statements with their agreement.

Each reader writes `{"statement_id", "label": "supported"|"unsupported", "why"}` per line, one file
per batch, in a directory of their own (`READER_DIR/<batch>.jsonl`). The merged rows are the
statements file's rows with `label_reader_1`, `why_reader_1`, `label_reader_2`, `why_reader_2` and
`label` (the common label, `null` where the readings differ, so disagreements are dropped from fitting
and measuring but kept for the record). A statement a reader has not labelled yet is left out and
counted. Cohen's kappa between the readers is printed per system code and in all.

    python benchmarks/merge_readings.py S3.jsonl S4.jsonl --reader-1 labels/reader_a \
        --reader-2 labels/reader_b --out data/judge_dev/rag_statements/more_statements.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ragwatch.statistics.agreement import cohen_kappa

LABELS = ("supported", "unsupported")


def read_readings(directory: Path) -> dict[str, dict[str, str]]:
    """statement_id -> {label, why} over every batch file of one reader (a later line wins)."""
    readings: dict[str, dict[str, str]] = {}
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") not in LABELS:
                raise SystemExit(f"{path}:{number}: label must be one of {LABELS}, got {row.get('label')!r}")
            readings[row["statement_id"]] = {"label": row["label"], "why": row.get("why", "")}
    return readings


def merge(rows: list[dict[str, Any]], first: dict[str, dict[str, str]],
          second: dict[str, dict[str, str]]) -> tuple[list[dict[str, Any]], int]:
    """Rows read by both readers with both readings and the common label; and how many were left out."""
    merged, missing = [], 0
    for row in rows:
        a, b = first.get(row["statement_id"]), second.get(row["statement_id"])
        if a is None or b is None:
            missing += 1
            continue
        merged.append({**row, "label_reader_1": a["label"], "why_reader_1": a["why"],
                       "label_reader_2": b["label"], "why_reader_2": b["why"],
                       "label": a["label"] if a["label"] == b["label"] else None})
    return merged, missing


def agreement_lines(merged: list[dict[str, Any]]) -> list[str]:
    """Per system code and in all: n, agreed, agreed supported/unsupported, Cohen's kappa."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in merged:
        groups[row.get("system", "?")].append(row)
    groups["all"] = merged
    lines = []
    for name, group in groups.items():
        agreed = [r for r in group if r["label"] is not None]
        supported = sum(r["label"] == "supported" for r in agreed)
        kappa = cohen_kappa([r["label_reader_1"] for r in group], [r["label_reader_2"] for r in group])
        lines.append(f"{name}: {len(group)} read twice, {len(agreed)} agreed ({supported} supported / "
                     f"{len(agreed) - supported} unsupported), kappa {kappa:.2f}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("statements", nargs="+", type=Path, help="statements files the packets were made from")
    parser.add_argument("--reader-1", type=Path, required=True)
    parser.add_argument("--reader-2", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = [json.loads(line) for path in args.statements for line in path.read_text().splitlines() if line.strip()]
    merged, missing = merge(rows, read_readings(args.reader_1), read_readings(args.reader_2))
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged))
    print(f"{len(merged)} statements read twice -> {args.out}; {missing} not yet read by both")
    for line in agreement_lines(merged):
        print(line)


if __name__ == "__main__":
    main()
