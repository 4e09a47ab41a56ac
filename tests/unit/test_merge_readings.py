"""benchmarks/merge_readings.py, run as a user runs it: two readings merged, disagreements kept as null."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "merge_readings.py"


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_two_readings_merge_with_their_agreement(tmp_path: Path) -> None:
    statements = _write(tmp_path / "S9.jsonl", [
        {"statement_id": f"st-{i}", "system": "S9", "statement": f"claim {i}"} for i in range(4)])
    _write(tmp_path / "a" / "S9.jsonl", [
        {"statement_id": "st-0", "label": "supported", "why": "said"},
        {"statement_id": "st-1", "label": "unsupported", "why": "absent"},
        {"statement_id": "st-2", "label": "supported", "why": "said"}])
    _write(tmp_path / "b" / "S9.jsonl", [
        {"statement_id": "st-0", "label": "supported", "why": "said"},
        {"statement_id": "st-1", "label": "supported", "why": "paraphrase"},
        {"statement_id": "st-2", "label": "supported", "why": "said"},
        {"statement_id": "st-3", "label": "unsupported", "why": "absent"}])
    out = tmp_path / "merged.jsonl"
    done = subprocess.run([sys.executable, str(SCRIPT), str(statements), "--reader-1", str(tmp_path / "a"),
                           "--reader-2", str(tmp_path / "b"), "--out", str(out)],
                          capture_output=True, text=True, check=True)
    rows = {r["statement_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"st-0", "st-1", "st-2"}  # st-3 was read once only
    assert rows["st-0"]["label"] == "supported" and rows["st-1"]["label"] is None
    assert rows["st-1"]["why_reader_2"] == "paraphrase"
    assert "1 not yet read by both" in done.stdout
    assert "S9: 3 read twice, 2 agreed (2 supported / 0 unsupported)" in done.stdout


def test_a_label_outside_the_two_is_refused(tmp_path: Path) -> None:
    statements = _write(tmp_path / "S9.jsonl", [{"statement_id": "st-0", "system": "S9"}])
    _write(tmp_path / "a" / "S9.jsonl", [{"statement_id": "st-0", "label": "maybe"}])
    _write(tmp_path / "b" / "S9.jsonl", [{"statement_id": "st-0", "label": "supported"}])
    done = subprocess.run([sys.executable, str(SCRIPT), str(statements), "--reader-1", str(tmp_path / "a"),
                           "--reader-2", str(tmp_path / "b"), "--out", str(tmp_path / "m.jsonl")],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "label must be one of" in done.stderr
