"""The three log formats read into the same records; every bad row has its outcome, place and reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragwatch.log_settings import LogColumns, LogSettings, parse_duration
from ragwatch.logs.feedback_parse import parse_feedback
from ragwatch.logs.langfuse import read_langfuse
from ragwatch.logs.openinference import read_openinference
from ragwatch.logs.read import read_log
from ragwatch.logs.tabular import read_tabular

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"


def _essentials(result):
    return [(r.question, r.answer, [(c.text, c.id, c.source) for c in r.contexts], r.timestamp.isoformat(),
             r.system_version, None if r.feedback is None else (r.feedback.kind, r.feedback.share))
            for r in sorted(result.records, key=lambda r: r.timestamp)]


def test_jsonl_outcomes_each_counted_with_line_and_reason():
    result = read_tabular(LOGS / "answers.jsonl")
    assert result.counts == {"kept": 6, "malformed": 1, "duplicate_trace_id": 1, "missing_contexts": 1,
                             "empty_answer": 1}
    bad = {b.outcome: b for b in result.bad}
    assert bad["malformed"].where == "line 3" and "not valid JSON" in bad["malformed"].reason
    assert "first read at line 1" in bad["duplicate_trace_id"].reason
    assert "no contexts" in bad["missing_contexts"].reason
    assert [r.trace_id for r in result.records if r.answer_error] == ["t6"]
    text = result.describe()
    assert "6 answers kept" in text and "1 missing contexts" in text


def test_csv_reads_json_encoded_contexts_and_rating_scales():
    result = read_tabular(LOGS / "answers.csv")
    assert result.counts["kept"] == 6 and result.counts["missing_contexts"] == 1
    assert [b.where for b in result.bad if b.outcome == "malformed"] == ["line 9"]
    assert "not ISO 8601" in next(b.reason for b in result.bad if b.outcome == "malformed")
    t4 = next(r for r in result.records if r.trace_id == "t4")
    assert t4.feedback.kind == "rating" and t4.feedback.scale == (1.0, 5.0) and t4.feedback.share == 0.75


def test_three_formats_give_the_same_records():
    jsonl = read_tabular(LOGS / "answers.jsonl")
    spans = read_openinference(LOGS / "spans.jsonl")
    langfuse = read_langfuse(LOGS / "langfuse.json", feedback_scale=(1, 5))
    assert _essentials(spans) == _essentials(jsonl)
    assert _essentials(langfuse) == _essentials(jsonl)


def test_span_tree_without_retriever_and_bad_span_line():
    result = read_openinference(LOGS / "spans.jsonl")
    assert result.counts["missing_contexts"] == 1 and result.counts["malformed"] == 1
    missing = next(b for b in result.bad if b.outcome == "missing_contexts")
    assert "without a retriever span" in missing.reason and "CHAIN, LLM" in missing.reason


def test_nested_openinference_attributes(tmp_path):
    span = {"context": {"trace_id": "abc", "span_id": "r"}, "parent_id": None, "span_kind": "RETRIEVER",
            "start_time": "2026-11-20T10:00:00+00:00",
            "attributes": {"input": {"value": "q?"}, "output": {"value": "a."},
                           "retrieval": {"documents": [{"document": {"content": "ctx", "id": 7, "score": 0.5}}]}}}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(span) + "\n")
    result = read_openinference(path)
    assert result.records[0].contexts[0].text == "ctx" and result.records[0].contexts[0].id == "7"


def test_langfuse_trace_without_retriever_is_missing_contexts():
    result = read_langfuse(LOGS / "langfuse.json", feedback_scale=(1, 5))
    missing = [b for b in result.bad if b.outcome == "missing_contexts"]
    assert [b.where for b in missing] == ["trace t7"] and "no retriever observation" in missing[0].reason


def test_column_mapping(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "x", "query": "q?", "response": "r.", "docs": ["d"], "ts": 1763640000,
                                "meta": {"version": "v9"}}) + "\n")
    columns = LogColumns(trace_id="id", question="query", answer="response", contexts="docs", timestamp="ts",
                         system_version="meta.version")
    result = read_tabular(path, columns)
    assert result.records[0].system_version == "v9" and result.records[0].contexts[0].text == "d"


@pytest.mark.parametrize(("value", "scale", "kind", "share"), [
    ("up", None, "thumbs", 1.0), (False, None, "thumbs", 0.0), (-1, None, "thumbs", 0.0), ("👍", None, "thumbs", 1.0),
    ("4", (1, 5), "rating", 0.75), ({"rating": 8, "scale": [0, 10]}, None, "rating", 0.8),
])
def test_feedback_forms(value, scale, kind, share):
    feedback = parse_feedback(value, scale)
    assert feedback.kind == kind and feedback.share == pytest.approx(share)


def test_feedback_errors_say_what_is_accepted():
    with pytest.raises(ValueError, match="without a scale"):
        parse_feedback(4)
    with pytest.raises(ValueError, match="outside its scale"):
        parse_feedback(9, (1, 5))
    with pytest.raises(ValueError, match="neither thumbs"):
        parse_feedback("meh")


def test_settings_and_durations(tmp_path):
    with pytest.raises(ValueError, match="set format"):
        LogSettings(path="traces.json")
    assert parse_duration("12h").total_seconds() == 43200
    with pytest.raises(ValueError, match="number and a unit"):
        parse_duration("a day")
    with pytest.raises(FileNotFoundError, match="not a file"):
        read_log(LogSettings(path=str(tmp_path / "none.jsonl")))


def test_the_committed_sample_log_is_the_same_in_every_format():
    """data/sample/logs (gzip, read as is): 540 answers over 6 days; relevance and references travel in
    the trace formats' metadata, so every format yields the same records."""
    sample = LOGS.parents[2] / "data" / "sample" / "logs"
    jsonl = read_log(LogSettings(path=str(sample / "answers.jsonl.gz")))
    assert jsonl.counts["kept"] == 540 and len({r.timestamp.date() for r in jsonl.records}) == 6
    assert all(r.relevant and r.reference_answer for r in jsonl.records)

    def rows(result):  # trace ids differ: OpenInference's are hex
        return sorted((r.question, r.answer, r.reference_answer, tuple(r.relevant), r.system_version, r.timestamp,
                       tuple((c.text, c.id, c.source) for c in r.contexts), r.feedback) for r in result.records)

    formats = (("answers.csv.gz", "auto"), ("spans.jsonl.gz", "openinference"), ("langfuse.json.gz", "langfuse"))
    for name, fmt in formats:
        other = read_log(LogSettings(path=str(sample / name), format=fmt))
        assert other.counts["kept"] == 540, (name, other.counts)
        assert rows(other) == rows(jsonl), name
