"""HTML and DOCX loading, files that lie about their type, symbolic links, and files that look wrong."""

from __future__ import annotations

import os
from pathlib import Path

import docx
import pytest

from ragwatch.corpus.chunking import ChunkingSettings, chunk_documents, chunk_spread
from ragwatch.corpus.documents import LONG_LINE_CHARS, load_document, load_documents
from ragwatch.corpus.markup import html_to_markdown

PAGE = b"""<!doctype html><html><head><title>Install guide</title><style>p {color: red}</style>
<script>var tracking = "do not index me";</script></head>
<body><nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<header>Site banner</header>
<main><h1>Installing ragwatch</h1><p>Run   <code>pip install ragwatch</code>
in a fresh   virtualenv.</p>
<h2>Requirements</h2><ul><li>Python 3.11</li><li>Two <b>cores</b></li></ul>
<pre>make run
make test</pre>
<table><tr><th>os</th><th>status</th></tr><tr><td>Linux</td><td>tested</td></tr></table>
<div hidden>secret draft</div></main>
<footer>Copyright 2026</footer></body></html>"""


def reasons(result) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


def make_docx(path: Path, *, title: str | None = None) -> None:
    document = docx.Document()
    if title:
        document.core_properties.title = title
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Revenue grew in every region.")
    document.add_heading("Details", level=2)
    document.add_paragraph("First point", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for (r, c), value in {(0, 0): "region", (0, 1): "growth", (1, 0): "EMEA", (1, 1): "4%"}.items():
        table.cell(r, c).text = value
    document.add_paragraph("Closing words.")
    document.save(path)


def test_html_keeps_main_text_and_headings_drops_furniture() -> None:
    text, title = html_to_markdown(PAGE)
    assert title == "Install guide"
    assert text.split("\n\n") == [
        "# Installing ragwatch",
        "Run pip install ragwatch in a fresh virtualenv.",
        "## Requirements",
        "- Python 3.11",
        "- Two cores",
        "```\nmake run\nmake test\n```",
        "os | status\nLinux | tested",
    ]
    for furniture in ("Home", "Site banner", "tracking", "color", "Copyright", "secret draft"):
        assert furniture not in text


def test_html_without_main_uses_body_and_first_heading_as_title(tmp_path: Path) -> None:
    (tmp_path / "page.htm").write_bytes(b"<body><h2>Only heading</h2><p>Body text here.</p></body>")
    doc = load_document(tmp_path / "page.htm")
    assert doc.format == "html" and doc.metadata["title"] == "Only heading"
    assert doc.text == "## Only heading\n\nBody text here."


def test_html_and_docx_chunks_carry_their_heading_path(tmp_path: Path) -> None:
    (tmp_path / "guide.html").write_bytes(PAGE)
    make_docx(tmp_path / "report.docx")
    docs = load_documents([tmp_path]).documents
    chunks = chunk_documents(docs, ChunkingSettings(max_tokens=12, overlap_tokens=0), lambda t: len(t.split()))
    by_text = {c.text: c.metadata for c in chunks}
    requirements = next(m for t, m in by_text.items() if "Python 3.11" in t)
    assert requirements["headings"] == ["Installing ragwatch", "Requirements"]
    details = next(m for t, m in by_text.items() if "First point" in t)
    assert details["headings"] == ["Quarterly report", "Details"] and details["title"] == "Quarterly report"


def test_docx_paragraphs_lists_tables_in_order(tmp_path: Path) -> None:
    make_docx(tmp_path / "r.docx", title="Q3")
    doc = load_document(tmp_path / "r.docx")
    assert doc.format == "docx" and doc.metadata["title"] == "Q3"
    assert doc.text.split("\n\n") == [
        "# Quarterly report",
        "Revenue grew in every region.",
        "## Details",
        "- First point",
        "region | growth\nEMEA | 4%",
        "Closing words.",
    ]


def test_bad_html_and_docx_are_skipped_with_reasons(tmp_path: Path) -> None:
    (tmp_path / "ok.html").write_bytes(b"<p>fine</p>")
    (tmp_path / "empty.html").write_bytes(b"   ")
    (tmp_path / "scripts-only.html").write_bytes(b"<html><script>x()</script><nav>menu</nav></html>")
    (tmp_path / "image.html").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "zip.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (tmp_path / "text.docx").write_text("plain text, not a docx", encoding="utf-8")
    (tmp_path / "legacy.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64)
    (tmp_path / "blank.docx").write_bytes(b"")
    result = load_documents([tmp_path])
    assert [d.source for d in result.documents] == ["ok.html"]
    why = reasons(result)
    assert "empty" in why["empty.html"] and "empty" in why["blank.docx"]
    assert "no text in this HTML file" in why["scripts-only.html"]
    assert "not an HTML page" in why["image.html"] and "an image" in why["image.html"]
    assert "corrupt DOCX" in why["zip.docx"] and "re-save" in why["zip.docx"]
    assert "not a DOCX" in why["text.docx"]
    assert "password-protected" in why["legacy.docx"] and "legacy .doc" in why["legacy.docx"]


def test_a_file_that_is_not_a_pdf_is_called_that(tmp_path: Path) -> None:
    (tmp_path / "page.pdf").write_bytes(b"<!doctype html><html><body>saved the login page</body></html>\n%%EOF")
    (tmp_path / "word.pdf").write_bytes(b"PK\x03\x04" + b"\0" * 100)
    (tmp_path / "keep.txt").write_text("something to load", encoding="utf-8")
    why = reasons(load_documents([tmp_path]))
    assert why["page.pdf"].startswith("not a PDF") and "HTML" in why["page.pdf"]
    assert "truncated" not in why["page.pdf"]
    assert why["word.pdf"].startswith("not a PDF") and "ZIP" in why["word.pdf"]


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
def test_symlinks_followed_once_loops_and_dangling_links_reported(tmp_path: Path) -> None:
    corpus, elsewhere = tmp_path / "corpus", tmp_path / "elsewhere"
    (corpus / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (corpus / "a.txt").write_text("alpha text", encoding="utf-8")
    (elsewhere / "b.txt").write_text("beta text", encoding="utf-8")
    (corpus / "linked").symlink_to(elsewhere, target_is_directory=True)  # followed
    (corpus / "sub" / "loop").symlink_to(corpus, target_is_directory=True)  # back to the top
    (corpus / "gone.txt").symlink_to(tmp_path / "missing.txt")  # dangling
    (corpus / "again.txt").symlink_to(corpus / "a.txt")  # the same file twice
    result = load_documents([corpus, tmp_path / "nowhere-link"])
    assert sorted(d.source for d in result.documents) == ["a.txt", "linked/b.txt"]
    why = reasons(result)
    assert "symbolic link loop" in why[str(corpus / "sub" / "loop")]
    assert "dangling symbolic link" in why[str(corpus / "gone.txt")]
    assert "already loaded" in why["again.txt"] or "already loaded" in why["a.txt"]
    assert "no such file" in why[str(tmp_path / "nowhere-link")]


def test_dangling_link_named_directly(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("text", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(tmp_path / "missing.md")
    result = load_documents([tmp_path / "ok.txt", tmp_path / "link.md"])
    assert "dangling symbolic link" in reasons(result)[str(tmp_path / "link.md")]


def test_a_very_long_line_is_a_warning_not_a_skip(tmp_path: Path) -> None:
    (tmp_path / "dump.txt").write_text("x" * (LONG_LINE_CHARS + 1), encoding="utf-8")
    (tmp_path / "prose.txt").write_text("A normal sentence.\n" * 50, encoding="utf-8")
    result = load_documents([tmp_path])
    assert len(result.documents) == 2
    assert [w.path for w in result.warnings] == ["dump.txt"]
    assert "characters" in result.warnings[0].message


def test_chunk_spread_names_a_dominating_document(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"small{i}.txt").write_text(f"Short note number {i}.", encoding="utf-8")
    (tmp_path / "huge.txt").write_text("\n\n".join(f"Paragraph {i} of the dump." for i in range(40)), encoding="utf-8")
    docs = load_documents([tmp_path]).documents
    chunks = chunk_documents(docs, ChunkingSettings(max_tokens=6, overlap_tokens=0), lambda t: len(t.split()))
    spread = chunk_spread(chunks, max_share=0.5)
    assert spread.top[0] == ("huge.txt", len(chunks) - 5)
    assert len(spread.top) == 6 and all(n == 1 for _, n in spread.top[1:])
    assert len(spread.warnings) == 1 and spread.warnings[0].startswith("huge.txt yields")
    assert chunk_spread(chunks[:3]).warnings == []  # too few documents to speak of shares
