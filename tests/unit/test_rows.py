"""The one record reader: rows with their lines, a bad line as its reason, for CSV and JSONL alike."""

from __future__ import annotations

import pytest

from ragwatch.rows import read_rows


def test_jsonl_bad_lines_come_back_with_their_reason(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('\ufeff{"a": 1}\n\n{"a": 3\n[1, 2]\n{"a": 2}\n', encoding="utf-8")
    rows = list(read_rows(path))
    assert rows[0] == (1, {"a": 1}) and rows[-1] == (5, {"a": 2})  # byte-order mark read past, blank skipped
    assert rows[1] == (3, "not valid JSON (Expecting ',' delimiter at column 8)")  # where the cut line stops
    assert rows[2] == (4, "expected a JSON object, got list")


def test_csv_rows_keep_the_line_they_start_on(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text('\ufeffq,a\n"two\nlines",x\ntoo,many,cells\nlast,y\n', encoding="utf-8")
    rows = list(read_rows(path))
    assert rows[0] == (2, {"q": "two\nlines", "a": "x"})
    assert rows[1] == (4, "more cells than the 2 header columns") and rows[2] == (5, {"q": "last", "a": "y"})


def test_an_unknown_suffix_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"\.csv or \.jsonl"):
        read_rows(tmp_path / "rows.xlsx")


def test_gzip_files_read_as_the_file_they_hold(tmp_path):
    import gzip

    from ragwatch.rows import data_suffix

    for name, text in (("rows.jsonl.gz", '{"a": 1}\n{bad\n'), ("rows.csv.gz", "a,b\n1,2\n")):
        path = tmp_path / name
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(text)
        rows = list(read_rows(path))
        assert rows[0] in ((1, {"a": 1}), (2, {"a": "1", "b": "2"})), rows
    suffixes = (data_suffix("x/answers.CSV.gz"), data_suffix("spans.jsonl"), data_suffix("log.gz"))
    assert suffixes == (".csv", ".jsonl", "")
