"""Bad production logs through `python run.py monitor` (and `testset` with a `logs:` block, which reads
them the same way): each evaluates its good rows and names its bad ones; a log with nothing usable
exits 2 saying why, with the counts, before ZenML starts."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml

from ragwatch_zenml import cli as run


def _rows(days: int = 2, per_day: int = 10) -> list[dict]:
    return [{"trace_id": f"t{d}-{i}", "timestamp": f"2026-11-{20 + d}T{8 + i:02d}:00:00Z",
             "question": f"How do I configure component {i} on day {d}?",
             "answer": f"Configure component {i} with its settings file.",
             "contexts": [f"Component {i} is configured with its settings file, read at start."]}
            for d in range(days) for i in range(per_day)]


def _monitor_config(tmp_path: Path, log: Path, fmt: str = "auto") -> Path:
    config = {"logs": {"path": str(log), "format": fmt}, "window": {"length": "1d", "budget": 50},
              "reports_dir": str(tmp_path / "reports"), "judges": {"enabled": []}}
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _bad_bytes_log(tmp_path: Path) -> Path:
    """20 answers over two days: line 8 holds byte 0xff, line 4 has no `answer` field."""
    rows = _rows()
    del rows[3]["answer"]
    lines = [json.dumps(r).encode() for r in rows]
    lines[7] = lines[7].replace(b"settings file.", b"settings \xff file.", 1)
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.integration
def test_monitor_evaluates_the_good_rows_of_a_log_with_bad_bytes(tmp_path, capsys):
    code = run.main(["monitor", "--config", str(_monitor_config(tmp_path, _bad_bytes_log(tmp_path)))])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = captured.out
    assert "19 kept" in out and "1 malformed" in out and "1 empty answer" in out
    assert "line 8: malformed: undecodable bytes: byte 0xff" in out
    assert "line 4: empty answer: the logged answer is empty: no field 'answer'" in out
    assert "current window 2026-11-21: 10 of 10 answers" in out  # line 8 is of the first day
    assert "vs previous window (2026-11-21 vs 2026-11-20; unpaired" in out
    # a window of 10 (or 9) answers never hears that fewer answers would decide
    for size in re.findall(r"a window of ~([\d,]+) answers would decide", out):
        assert int(size.replace(",", "")) > 10, out


def _no_contexts_csv(tmp_path: Path) -> Path:
    path = tmp_path / "answers.csv"
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=["trace_id", "timestamp", "question", "answer"],
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(_rows())
    return path


def _tabular_rows(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "trace_id"}) + "\n" for r in _rows()))
    return path


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    return path


UNUSABLE = {  # file, format, what the error must say
    "csv without contexts": (_no_contexts_csv, "auto", [
        "20 rows missing contexts: no contexts: no column 'contexts' (columns found: 'trace_id', 'timestamp', "
        "'question', 'answer')", "0 answers kept, 20 missing contexts", "line 2, line 3"]),
    "openinference of the wrong shape": (_tabular_rows, "openinference", [
        "20 rows malformed: a span without context.trace_id", "Expected OpenInference spans",
        "found objects with fields 'timestamp', 'question', 'answer', 'contexts'"]),
    "langfuse of the wrong shape": (_tabular_rows, "langfuse", [
        "0 answers kept, 20 malformed", "a trace without an id", "Expected Langfuse traces"]),
    "empty file": (_empty, "auto", ["no answer to evaluate: an empty log (0 bytes)"]),
}


@pytest.mark.integration
@pytest.mark.parametrize("case", list(UNUSABLE))
def test_monitor_refuses_a_log_with_nothing_usable_saying_why(case, tmp_path, capsys):
    make, fmt, expected = UNUSABLE[case]
    code = run.main(["monitor", "--config", str(_monitor_config(tmp_path, make(tmp_path), fmt))])
    err = capsys.readouterr().err
    assert code == 2
    for words in expected:
        assert words in err, err
    assert "see its bad rows" not in err


def _logged_config(tmp_path: Path, log: Path) -> Path:
    config = {"logs": {"path": str(log)}, "reports_dir": str(tmp_path / "reports"),
              "evaluate": {"system": {"model_name": "ragwatch-bad-log-test", "rag": {"kind": "logged"}},
                           "judges": {"enabled": []}, "promote": False}}
    path = tmp_path / "logged.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.integration
def test_testset_from_a_log_keeps_its_good_rows(tmp_path):
    """The evaluation set made from a log (the same readers): a bad byte costs one row of 20."""
    from zenml.client import Client

    assert run.main(["testset", "--config", str(_logged_config(tmp_path, _bad_bytes_log(tmp_path)))]) == 0
    run_ = Client().list_pipeline_runs(pipeline="testset", sort_by="desc:created")[0]
    eval_set = next(out[0] for step in run_.steps.values() for name, out in step.outputs.items()
                    if name == "eval_set").load()
    assert len(eval_set.samples) == 19


@pytest.mark.integration
@pytest.mark.parametrize("case", ["csv without contexts", "empty file"])
def test_testset_refuses_a_log_with_nothing_usable_saying_why(case, tmp_path, capsys):
    """Before ZenML starts (the preflight reads the log): exit 2 with the same why as `monitor`."""
    make, _, expected = UNUSABLE[case]
    assert run.main(["testset", "--config", str(_logged_config(tmp_path, make(tmp_path)))]) == 2
    err = capsys.readouterr().err
    assert all(words in err for words in expected), err
