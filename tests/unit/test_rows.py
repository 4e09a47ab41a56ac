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


def test_undecodable_bytes_cost_their_row_alone(tmp_path):
    """A byte that is not UTF-8 (a Latin-1 'é', a stray 0xff) is a bad line naming the byte and where it
    sits; the rows around it are read, in JSONL and in CSV (also inside a cell spanning lines)."""
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_bytes(b'{"a": 1}\n{"a": "caf\xff"}\r\n{"a": 3}\r\n')
    rows = list(read_rows(jsonl))
    assert rows[0] == (1, {"a": 1}) and rows[2] == (3, {"a": 3})
    assert rows[1][0] == 2 and "undecodable bytes: byte 0xff at position 11" in rows[1][1]
    csv_path = tmp_path / "rows.csv"
    csv_path.write_bytes(b'q,a\r\n1,caf\xe9\r\n"two\nli\xffnes",2\r\n3,4\r\n')
    rows = list(read_rows(csv_path))
    assert [line for line, _ in rows] == [2, 3, 5] and rows[2] == (5, {"q": "3", "a": "4"})
    assert "byte 0xe9" in rows[0][1] and rows[1][1].startswith("its line 4: undecodable bytes: byte 0xff")


def test_a_cut_gzip_file_keeps_the_rows_before_the_cut(tmp_path):
    import gzip

    whole = gzip.compress(b"".join(b'{"a": %d}\n' % i for i in range(200)))
    path = tmp_path / "rows.jsonl.gz"
    path.write_bytes(whole[: len(whole) - 40])
    rows = list(read_rows(path))
    good = [row for _, row in rows if isinstance(row, dict)]
    assert good and good == [{"a": i} for i in range(len(good))]
    assert isinstance(rows[-1][1], str) and "breaks off here" in rows[-1][1]
    path.write_bytes(b"not gzip\n")
    assert [(line, "not a gzip file" in reason) for line, reason in read_rows(path)] == [(1, True)]


def test_old_mac_line_endings_and_bad_csv_rows_are_read_line_by_line(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_bytes(b'q,a\r1,2\r3,4\r')
    assert list(read_rows(path)) == [(2, {"q": "1", "a": "2"}), (3, {"q": "3", "a": "4"})]
