"""The three log formats read into the same records; every bad row has its outcome, place and reason."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ragwatch.logsources.feedback_parse import parse_feedback
from ragwatch.logsources.langfuse import read_langfuse
from ragwatch.logsources.openinference import read_openinference
from ragwatch.logsources.read import read_log
from ragwatch.logsources.settings import LogColumns, LogSettings, parse_duration
from ragwatch.logsources.tabular import read_tabular

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
    assert bad["empty_answer"].where == "line 7" and "kept as a failed answer" in bad["empty_answer"].reason
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


def _answer_rows(n: int = 20) -> list[dict]:
    return [{"trace_id": f"t{i}", "timestamp": f"2026-11-20T{i % 24:02d}:00:00Z", "question": f"question {i}?",
             "answer": f"answer {i}.", "contexts": [f"passage {i}"]} for i in range(n)]


def _spans(n: int) -> list[dict]:
    out = []
    for t in range(n):
        tid = f"tr{t}"
        out.append({"context": {"trace_id": tid, "span_id": f"{tid}-root"}, "parent_id": None, "span_kind": "CHAIN",
                    "start_time": f"2026-11-20T{t:02d}:00:00Z",
                    "attributes": {"input": {"value": f"q{t}?"}, "output": {"value": f"a{t}."}}})
        out.append({"context": {"trace_id": tid, "span_id": f"{tid}-ret"}, "parent_id": f"{tid}-root",
                    "span_kind": "RETRIEVER", "start_time": f"2026-11-20T{t:02d}:00:01Z",
                    "attributes": {"retrieval": {"documents": [{"document": {"content": f"passage {t}"}}]}}})
    return out


def test_undecodable_bytes_and_a_missing_answer_cost_their_row_alone_and_are_named(tmp_path):
    """One row with byte 0xff among 20: 19 answers kept, the bad one named by line and byte; a row with no
    `answer` field is kept as a failed answer and named by line too."""
    rows = _answer_rows()
    del rows[3]["answer"]
    lines = [json.dumps(r).encode() for r in rows]
    lines[7] = lines[7].replace(b"answer 7.", b"answer \xff7.")
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = read_log(LogSettings(path=str(path)))
    assert result.counts == {"kept": 19, "malformed": 1, "duplicate_trace_id": 0, "missing_contexts": 0,
                             "empty_answer": 1}
    bad = {b.where: b for b in result.bad}
    assert bad["line 8"].outcome == "malformed" and "undecodable bytes: byte 0xff" in bad["line 8"].reason
    assert bad["line 4"].outcome == "empty_answer" and "no field 'answer'" in bad["line 4"].reason
    t3 = next(r for r in result.records if r.trace_id == "t3")
    assert "no field 'answer'" in t3.answer_error  # the reason every metric's failed item carries
    text = result.describe()
    assert "line 4: empty answer" in text and "line 8: malformed: undecodable bytes" in text


def test_the_first_twenty_bad_rows_are_named_then_counted(tmp_path):
    rows = _answer_rows(30)
    for row in rows[:25]:
        del row["contexts"]
    rows[27]["timestamp"] = "yesterday"
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = read_tabular(path).describe()
    assert "line 1, line 2," in text and "line 20: missing contexts: no contexts: no field 'contexts'" in text
    assert "line 21" not in text and "... and 6 more: 5 missing contexts, 1 malformed" in text


def test_bytes_that_are_not_utf8_cost_one_trace_in_span_and_langfuse_exports(tmp_path):
    """A span with a bad byte costs its whole trace (not an answer pieced together from the spans left);
    so does a Langfuse trace in a JSON list: the other traces are read."""
    lines = [json.dumps(s).encode() for s in _spans(5)]
    lines[5] = lines[5].replace(b"passage 2", b"passage \xff2")  # trace tr2's retriever span
    spans = tmp_path / "spans.jsonl"
    spans.write_bytes(b"\n".join(lines) + b"\n")
    result = read_openinference(spans)
    assert result.counts["kept"] == 4 and [b.where for b in result.bad] == ["trace tr2"]
    assert result.bad[0].reason.startswith("its span at line 6: undecodable bytes: byte 0xff")
    traces = [{"id": f"lt{t}", "timestamp": f"2026-11-20T0{t}:00:00Z", "input": f"q{t}?", "output": f"a{t}.",
               "observations": [{"id": f"o{t}", "type": "RETRIEVER", "output": [f"passage {t}"]}]} for t in range(4)]
    export = tmp_path / "traces.json"
    export.write_bytes(json.dumps(traces).encode().replace(b"passage 1", b"passage \xfe1"))
    result = read_langfuse(export)
    assert result.counts["kept"] == 3 and [b.where for b in result.bad] == ["trace lt1"]
    assert "byte 0xfe in observations.0.output.0" in result.bad[0].reason


def _refusal(path: Path, fmt: str = "auto") -> str:
    with pytest.raises(ValueError) as err:
        read_log(LogSettings(path=str(path), format=fmt))
    return str(err.value)


def test_a_log_with_nothing_usable_says_why(tmp_path):
    """Empty, a header only, a CSV without a contexts column, spans or Langfuse traces of the wrong
    shape: each refused with why, the counts, and the shape expected beside the shape found."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "no answer to evaluate: an empty log (0 bytes)" in _refusal(empty)
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n")
    assert "an empty log (only blank lines)" in _refusal(blank)
    header = tmp_path / "header.csv"
    header.write_text("trace_id,question\n")
    assert "an empty log (a header line only (columns 'trace_id', 'question'))" in _refusal(header)
    no_contexts = tmp_path / "answers.csv"
    columns = ["trace_id", "timestamp", "question", "answer"]
    with no_contexts.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(_answer_rows())
    message = _refusal(no_contexts)
    assert ("20 rows missing contexts: no contexts: no column 'contexts' (columns found: 'trace_id', 'timestamp', "
            "'question', 'answer')") in message
    assert "Expected a CSV row per answer with columns 'question', 'answer', 'contexts'" in message
    assert "0 answers kept, 20 missing contexts" in message and "line 2, line 3" in message
    tabular = tmp_path / "rows.jsonl"
    tabular.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "trace_id"}) + "\n"
                               for r in _answer_rows()))
    message = _refusal(tabular, "openinference")
    assert "20 rows malformed: a span without context.trace_id" in message
    assert "Expected OpenInference spans" in message and "found objects with fields 'timestamp', 'question'" in message
    message = _refusal(tabular, "langfuse")
    assert "0 answers kept, 20 malformed" in message and "a trace without an id" in message
    assert "Expected Langfuse traces" in message
    broken = tmp_path / "broken.json"
    broken.write_text('[{"id": "a",\n')
    message = _refusal(broken, "langfuse")
    assert "the file: malformed: not valid JSON" in message and "a JSON list that does not parse" in message
