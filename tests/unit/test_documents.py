"""Loaders: PDF, Markdown, text; every kind of bad input is skipped with a reason that helps."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from ragwatch.corpus.documents import NoDocumentsError, document_id, load_document, load_documents

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"


def make_pdf(path: Path, pages: list[str], *, title: str = "", author: str = "", **save: object) -> bytes:
    """A PDF with one text page per entry of `pages`; returns its bytes (also written to `path`)."""
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=11)
    doc.set_metadata({"title": title, "author": author})
    data = doc.tobytes(**save)
    path.write_bytes(data)
    return data


def image_only_pdf(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    pix.clear_with(200)
    page.insert_image(pymupdf.Rect(100, 100, 300, 300), pixmap=pix)
    path.write_bytes(doc.tobytes())


def reasons(result) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


# --- PDF -------------------------------------------------------------------------------------------


def test_pdf_pages_offsets_and_metadata(tmp_path: Path) -> None:
    make_pdf(
        tmp_path / "guide.pdf",
        ["First page text.", "Second page here.", "Third."],
        title="Guide",
        author="Ann",
    )
    result = load_documents([tmp_path])
    (doc,) = result.documents
    assert doc.format == "pdf" and doc.source == "guide.pdf"
    assert result.pages == 3 and doc.metadata["page_count"] == 3
    assert doc.metadata["title"] == "Guide" and doc.metadata["author"] == "Ann"
    assert doc.page_starts is not None and len(doc.page_starts) == 3 and doc.page_starts[0] == 0
    for start, expected in zip(
        doc.page_starts, ["First page text.", "Second page here.", "Third."], strict=True
    ):
        assert doc.text[start:].startswith(expected)


def test_pdf_without_metadata_has_no_empty_keys(tmp_path: Path) -> None:
    make_pdf(tmp_path / "a.pdf", ["Some text."])
    doc = load_document(tmp_path / "a.pdf")
    assert "title" not in doc.metadata and "author" not in doc.metadata


def test_bad_pdfs_are_skipped_with_reasons(tmp_path: Path) -> None:
    good = make_pdf(tmp_path / "good.pdf", ["Real text " * 200, "More text " * 200, "End " * 200])
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.7\nthis is not a pdf at all\n%%EOF\n")
    (tmp_path / "truncated.pdf").write_bytes(good[: len(good) // 2])
    make_pdf(
        tmp_path / "encrypted.pdf",
        ["Secret."],
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw="user",
        owner_pw="owner",
    )
    image_only_pdf(tmp_path / "scan.pdf")
    (tmp_path / "zero.pdf").write_bytes(b"")

    result = load_documents([tmp_path])
    assert [d.source for d in result.documents] == ["good.pdf"]
    why = reasons(result)
    assert set(why) == {"corrupt.pdf", "truncated.pdf", "encrypted.pdf", "scan.pdf", "zero.pdf"}
    assert "corrupt PDF" in why["corrupt.pdf"]
    assert "truncated" in why["truncated.pdf"]
    assert "password" in why["encrypted.pdf"] and "decrypt" in why["encrypted.pdf"]
    assert "no text layer" in why["scan.pdf"] and "OCR it first" in why["scan.pdf"]
    assert "empty" in why["zero.pdf"]


def test_pdf_with_only_an_owner_password_loads(tmp_path: Path) -> None:
    # Permissions-only encryption needs no password to read: such PDFs are common and fine.
    make_pdf(tmp_path / "o.pdf", ["Open text."], encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o")
    assert "Open text." in load_document(tmp_path / "o.pdf").text


# --- Markdown and text -----------------------------------------------------------------------------


def test_markdown_front_matter_and_title(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text(
        "---\ndescription: How to run things.\ndate: 2024-06-01\ntags: [a, b]\n---\n\n"
        "```bash\n# not a title\n```\n\n# Running things\n\nBody text.\n",
        encoding="utf-8",
    )
    doc = load_document(tmp_path / "page.md")
    assert doc.format == "markdown"
    assert not doc.text.startswith("---") and "description:" not in doc.text
    assert doc.metadata["description"] == "How to run things."
    assert doc.metadata["date"] == "2024-06-01"  # YAML dates become strings: metadata stays JSON
    assert doc.metadata["tags"] == ["a", "b"]
    assert doc.metadata["title"] == "Running things"
    assert "Body text." in doc.text


def test_markdown_front_matter_title_wins_and_bad_yaml_is_kept(tmp_path: Path) -> None:
    (tmp_path / "t.md").write_text("---\ntitle: From YAML\n---\n# Heading\n", encoding="utf-8")
    assert load_document(tmp_path / "t.md").metadata["title"] == "From YAML"
    (tmp_path / "bad.md").write_text("---\nkey: [unclosed\n---\n# H\ntext\n", encoding="utf-8")
    doc = load_document(tmp_path / "bad.md")
    assert doc.text.startswith("---") and "front_matter_error" in doc.metadata


def test_text_formats_and_newlines(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\n")
    (tmp_path / "b.rst").write_text("Title\n=====\n\nBody.\n", encoding="utf-8")
    docs = {d.source: d for d in load_documents([tmp_path]).documents}
    assert docs["a.txt"].text == "line one\nline two\n"  # BOM dropped, one newline convention
    assert docs["b.rst"].format == "text"


def test_bad_text_files_are_skipped_with_reasons(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("Fine text.", encoding="utf-8")
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    (tmp_path / "blank.txt").write_text("  \n\n ", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "latin.txt").write_bytes("Café crème, déjà vu".encode("latin-1"))
    (tmp_path / "copy.txt").write_text("Fine text.", encoding="utf-8")
    (tmp_path / "report.xlsx").write_bytes(b"PK\x03\x04")
    (tmp_path / "only-front-matter.md").write_text("---\ntitle: x\n---\n", encoding="utf-8")

    result = load_documents([tmp_path])
    assert [d.source for d in result.documents] == ["copy.txt"]  # sorted: copy.txt comes first
    why = reasons(result)
    assert "empty" in why["empty.md"] and "empty" in why["blank.txt"]
    assert "binary" in why["binary.txt"]
    assert "UTF-8" in why["latin.txt"] and "iconv" in why["latin.txt"]
    assert "duplicate" in why["ok.txt"] and "'copy.txt'" in why["ok.txt"]
    assert "unsupported file type '.xlsx'" in why["report.xlsx"] and ".md" in why["report.xlsx"]
    assert "empty" in why["only-front-matter.md"]


# --- paths, ids, errors ----------------------------------------------------------------------------


def test_sources_directories_globs_and_root(tmp_path: Path) -> None:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("# A\nalpha", encoding="utf-8")
    (tmp_path / "docs" / "sub" / "b.md").write_text("# B\nbeta", encoding="utf-8")
    (tmp_path / "docs" / ".hidden").mkdir()
    (tmp_path / "docs" / ".hidden" / "c.md").write_text("gamma", encoding="utf-8")

    by_dir = load_documents([tmp_path / "docs"])
    assert [d.source for d in by_dir.documents] == ["a.md", "sub/b.md"]
    by_glob = load_documents([str(tmp_path / "docs" / "**" / "*.md")])
    assert [d.source for d in by_glob.documents] == ["a.md", "sub/b.md"]
    by_root = load_documents([tmp_path / "docs" / "sub" / "b.md"], root=tmp_path)
    assert [d.source for d in by_root.documents] == ["docs/sub/b.md"]
    # the same file named twice loads once
    twice = load_documents([tmp_path / "docs", tmp_path / "docs" / "a.md"])
    assert len(twice.documents) == 2 and not twice.skipped


def test_ids_are_stable_and_depend_on_source_and_text(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\nalpha", encoding="utf-8")
    first = load_document(tmp_path / "a.md", source="x/a.md")
    again = load_document(tmp_path / "a.md", source="x/a.md")
    assert first.id == again.id == document_id("x/a.md", first.text)
    assert document_id("y/a.md", first.text) != first.id
    assert document_id("x/a.md", first.text + "!") != first.id


def test_nothing_loaded_raises_with_the_reasons(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    with pytest.raises(NoDocumentsError, match=r"empty\.txt: empty file") as err:
        load_documents([tmp_path, tmp_path / "missing"])
    assert isinstance(err.value, ValueError)
    assert "no such file or directory" in str(err.value)
    with pytest.raises(NoDocumentsError, match="glob matched no file"):
        load_documents([str(tmp_path / "*.pdf")])
    with pytest.raises(ValueError, match="unsupported"):
        load_document(tmp_path / "empty.txt.bak")


def test_path_outside_root_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("text", encoding="utf-8")
    with pytest.raises(ValueError, match="not under root"):
        load_documents([tmp_path / "a.txt"], root=tmp_path / "elsewhere")


# --- the shipped sample ----------------------------------------------------------------------------


def test_sample_corpus_loads_without_skips() -> None:
    result = load_documents([SAMPLE / "zenml_docs", SAMPLE / "pdf"])
    assert not result.skipped
    assert 40 <= len(result.documents) <= 61
    sources = {d.source for d in result.documents}
    for page in (
        "component-guide/orchestrators/orchestrators.md",
        "component-guide/annotators/label-studio.md",
        "how-to/handle-data-artifacts/handle-custom-data-types.md",
        "user-guide/llmops-guide/rag-with-zenml/embeddings-generation.md",
        "how-to/build-pipelines/use-failure-success-hooks.md",
        "getting-started/deploying-zenml/deploy-with-helm.md",
        "zenml_orchestrators.pdf",
    ):
        assert page in sources
    pdf = next(d for d in result.documents if d.format == "pdf")
    assert pdf.metadata["page_count"] > 1 and "Kubeflow" in pdf.text and "Airflow" in pdf.text


def test_sample_holds_the_handcrafted_answers() -> None:
    import json

    docs = {d.source: d.text for d in load_documents([SAMPLE / "zenml_docs"]).documents}
    cases = json.loads((SAMPLE / "eval" / "handwritten_eval_cases.json").read_text(encoding="utf-8"))
    for pair in cases["question_doc_pairs"]:
        page = pair["url_ending"].split("/")[-1] + ".md"
        assert any(source.endswith("/" + page) for source in docs), page
    orchestrators = docs["component-guide/orchestrators/orchestrators.md"]
    assert "Kubeflow" in orchestrators and "Airflow" in orchestrators
    assert "default stack" in docs["component-guide/orchestrators/local.md"]
    assert "Flyte" in docs["user-guide/llmops-guide/evaluation/generation.md"]
