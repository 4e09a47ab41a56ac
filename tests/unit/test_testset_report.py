"""What `testset` says it made and dropped, and the fingerprint `evaluate` checks an evaluation set against."""

from __future__ import annotations

import json
from pathlib import Path

from ragwatch.config import FullConfig, evalset_fingerprint
from ragwatch.evalset.assemble import EvalSetConfig, import_labelled_samples
from ragwatch.evalset.imported import ColumnMap, ImportSettings, import_dataset, reason_kind
from ragwatch.evalset.report import evalset_report
from ragwatch.evalset.synthetic import Testset
from ragwatch.types import EvalSample

ROWS = [
    {"query": "What is the default orchestrator?", "reference_answer": "The local one.", "id": "a"},
    {"reference_answer": "an answer without its question", "id": "b"},
    {"query": "Where do artifacts live?", "id": "c"},  # no reference answer: kept
    "not json at all",
    {"query": "", "reference_answer": "empty question", "id": "d"},
    {"query": "What is the default orchestrator?", "reference_answer": "again", "id": "a"},  # duplicate id
    {"query": "What is a stack?", "reference_answer": "Its components.", "id": "e"},
]


def _labelled(path: Path, rows=ROWS) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _settings(path: Path) -> ImportSettings:
    return ImportSettings(format="jsonl", path=str(path), columns=ColumnMap(question="query"))


def test_import_counts_dropped_rows_by_reason_and_keeps_their_lines(tmp_path: Path) -> None:
    report = import_dataset(_settings(_labelled(tmp_path / "qa.jsonl")))
    assert [s.id for s in report.samples] == ["a", "c", "e"] and report.without_reference == 1
    assert [line for line, _ in report.skipped] == [2, 4, 5, 6]
    counts = report.skipped_by_reason()
    assert counts["no question (column 'query' missing or empty)"] == 2 and counts["duplicate id"] == 1
    assert sum(counts.values()) == 4
    assert reason_kind("invalid JSON at line 3 column 17: Expecting value") == \
        "invalid JSON at line N column N: Expecting value"


def test_testset_report_says_what_was_dropped_and_what_has_no_reference(tmp_path: Path) -> None:
    path = _labelled(tmp_path / "qa.jsonl")
    samples, imports = import_labelled_samples(EvalSetConfig(synthetic=False, imports=[_settings(path)]))
    lines = evalset_report(samples, imports, None)
    assert lines[0] == "evaluation set: 3 items (0 synthetic, 3 imported)"
    head = lines[1]
    assert f"jsonl:{path}: 3 of 7 rows imported, 4 dropped: " in head
    assert "no question (column 'query' missing or empty) x2" in head and "duplicate id x1" in head
    assert "1 kept without a reference answer" in head
    assert lines[2] == "    line 2: no question (column 'query' missing or empty)"
    assert any(line.startswith("    line 6: duplicate id 'a' (first at line 1)") for line in lines)
    assert lines[-1].startswith("  1 of 3 items have no reference answer")


def test_testset_report_names_filtered_synthetic_pairs() -> None:
    from ragwatch.evalset.filters import FilterReport

    pairs = [EvalSample(id=f"s{i}", question=f"q{i}?", reference_answer="a") for i in range(4)]
    synthetic = Testset(samples=pairs, filters=[FilterReport(name="near_duplicate", description="", removed=2),
                                                FilterReport(name="answer_length", description="", removed=0)])
    lines = evalset_report(pairs, {}, synthetic)
    assert lines == ["evaluation set: 4 items (4 synthetic, 0 imported)",
                     "  synthetic: 4 pairs kept; removed by filters: near_duplicate 2"]


def _config(path: Path, **testset) -> FullConfig:
    return FullConfig.model_validate({"testset": {"synthetic": False, "imports": [
        {"format": "jsonl", "path": str(path), "columns": {"question": "query"}}], **testset}})


def test_fingerprint_follows_the_config_and_the_files_content_not_their_path(tmp_path: Path) -> None:
    path = _labelled(tmp_path / "qa.jsonl")
    base = evalset_fingerprint(_config(path))
    assert base == evalset_fingerprint(_config(path))  # stable
    copy = _labelled(tmp_path / "elsewhere.jsonl")
    assert evalset_fingerprint(_config(copy)) == base  # same content at another path
    # settings that cannot change the set do not change it
    assert evalset_fingerprint(_config(path, generator={"concurrency": 1, "timeout_s": 5})) == base
    changed_config = evalset_fingerprint(_config(path, synthetic=True))
    assert changed_config["config"] != base["config"] and changed_config["inputs"] == base["inputs"]
    assert changed_config["testset"] != base["testset"]
    _labelled(path, ROWS[:3])
    edited = evalset_fingerprint(_config(path))
    assert edited["inputs"] != base["inputs"] and edited["config"] == base["config"]
    assert edited["testset"] != base["testset"]
