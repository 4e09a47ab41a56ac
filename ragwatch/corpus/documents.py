"""Load files into `ragwatch.types.Document`s: PDF (PyMuPDF), Markdown, HTML, DOCX, plain text.

Bad files never stop a load: each one is reported in `LoadResult.skipped` with the reason and
what to do about it. Only when nothing at all loads does `load_documents` raise `NoDocumentsError`.
Files that load but look wrong (a line longer than any prose has) are listed in `LoadResult.warnings`.
Symbolic links are followed once: a link back into a directory already walked, or one that points
nowhere, is reported as skipped.

Example:
    >>> result = load_documents(["data/sample/zenml_docs"])          # doctest: +SKIP
    >>> [d.source for d in result.documents][:1], result.skipped      # doctest: +SKIP
    (['component-guide/README.md'], [])
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from ragwatch.corpus.files import SkippedFile, expand_paths
from ragwatch.corpus.markup import MarkupError, docx_to_markdown, html_to_markdown
from ragwatch.corpus.pdf_text import TextBlock, page_blocks, pages_text
from ragwatch.types import Document

log = logging.getLogger(__name__)

PDF_EXTENSIONS = frozenset({".pdf"})
MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown"})
TEXT_EXTENSIONS = frozenset({".txt", ".text", ".rst"})
HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})
DOCX_EXTENSIONS = frozenset({".docx"})
SUPPORTED_EXTENSIONS = PDF_EXTENSIONS | MARKDOWN_EXTENSIONS | TEXT_EXTENSIONS | HTML_EXTENSIONS | DOCX_EXTENSIONS
# No prose line is this long: minified HTML/JS, a data dump, or text that lost its line breaks.
LONG_LINE_CHARS = 20_000

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$")


class FileWarning(BaseModel):
    """A file that loaded but looks wrong; the message says what to check."""

    path: str
    message: str


class LoadResult(BaseModel):
    """What `load_documents` produced. `pages` counts PDF pages, and one page per other document."""

    documents: list[Document] = Field(default_factory=list)
    skipped: list[SkippedFile] = Field(default_factory=list)
    warnings: list[FileWarning] = Field(default_factory=list)
    pages: int = 0


class NoDocumentsError(ValueError):
    """Nothing could be loaded from the given paths."""


class _Skip(Exception):
    """Internal: a file cannot be loaded; the message is the reason shown to the user."""


def load_documents(
    paths: str | Path | Iterable[str | Path], *, root: str | Path | None = None, progress: bool = False
) -> LoadResult:
    """Load every supported file under `paths` (files, directories searched recursively, globs).

    `Document.source` is the path relative to `root` when given, else relative to the directory
    (or the glob's fixed prefix) it was found under; a file named directly keeps its file name.
    Files are visited in sorted order so ids, duplicates and order are deterministic. Hidden files
    and folders (starting with ".") inside a directory are ignored.
    """
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    root_path = Path(root).resolve() if root is not None else None
    result = LoadResult()
    seen_hash: dict[str, str] = {}  # text hash -> source of the first file that had it
    seen_files: set[Path] = set()

    candidates = list(expand_paths(paths, root_path, result.skipped))
    iterator: Iterable[tuple[Path, str]] = candidates
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(candidates, desc="loading documents", unit="file")
    for file, source in iterator:
        resolved = file.resolve()
        if resolved in seen_files:  # named twice (e.g. a directory and a glob, or a link): load once
            if file.is_symlink():
                result.skipped.append(
                    SkippedFile(path=source, reason=f"symbolic link to {resolved}, which is already loaded")
                )
            continue
        seen_files.add(resolved)
        try:
            doc = _load_file(file, source)
        except _Skip as exc:
            result.skipped.append(SkippedFile(path=source, reason=str(exc)))
            continue
        text_hash = _sha256(doc.text)
        if text_hash in seen_hash:
            result.skipped.append(
                SkippedFile(
                    path=source,
                    reason=f"duplicate: same content as {seen_hash[text_hash]!r}, which is already loaded",
                )
            )
            continue
        seen_hash[text_hash] = source
        result.documents.append(doc)
        if (longest := max(map(len, doc.text.split("\n")))) > LONG_LINE_CHARS:
            result.warnings.append(
                FileWarning(
                    path=source,
                    message=f"a line of {longest:,} characters: minified markup, a data dump or lost line "
                    "breaks? Its chunks will be cut mid-sentence; check that this file is prose",
                )
            )
        result.pages += len(doc.page_starts) if doc.page_starts is not None else 1

    if not result.documents:
        raise NoDocumentsError(_nothing_loaded_message(paths, result.skipped))
    return result


def load_document(path: str | Path, *, source: str | None = None) -> Document:
    """Load one file; raises ValueError with the reason when it cannot be loaded."""
    path = Path(path)
    try:
        return _load_file(path, source or path.name)
    except _Skip as exc:
        raise ValueError(f"{path}: {exc}") from None


def document_id(source: str, text: str) -> str:
    """Stable id of a document: a hash of its source path and its text."""
    return _sha256(f"{source}\0{text}")[:32]


# --- loaders -------------------------------------------------------------------------------------


def _load_file(path: Path, source: str) -> Document:
    ext = path.suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        shown = f"'{ext}'" if ext else "(no extension)"
        raise _Skip(f"unsupported file type {shown}; supported: {supported}. Convert it or leave it out")
    if ext in PDF_EXTENSIONS:
        return _load_pdf(path, source)
    if ext in HTML_EXTENSIONS | DOCX_EXTENSIONS:
        return _load_markup(path, source, "html" if ext in HTML_EXTENSIONS else "docx")
    text = _read_text(path)
    if ext in MARKDOWN_EXTENSIONS:
        return _markdown_document(text, source)
    return _document(source, text, "text", {})


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    if not data.strip():
        raise _Skip("empty file")
    if b"\0" in data:
        raise _Skip(
            "binary content (NUL bytes) in a text file: it is not text; remove it or fix its extension"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Skip(
            f"not UTF-8 (invalid byte 0x{data[exc.start]:02x} at offset {exc.start}); ragwatch expects "
            "UTF-8 text: convert it, e.g. `iconv -f latin1 -t utf-8 in.txt > out.txt`"
        ) from None
    # One newline convention, so chunk offsets mean the same on every platform.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _load_markup(path: Path, source: str, fmt: Literal["html", "docx"]) -> Document:
    data = path.read_bytes()
    if not data.strip():
        raise _Skip("empty file")
    if fmt == "html" and (kind := _sniff(data)) not in ("HTML or XML markup", "text"):
        raise _Skip(f"not an HTML page: its content is {kind}; fix its extension or leave it out")
    try:
        text, title = (html_to_markdown if fmt == "html" else docx_to_markdown)(data)
    except MarkupError as exc:
        raise _Skip(str(exc)) from None
    if not text.strip():
        raise _Skip(f"no text in this {fmt.upper()} file (only markup, scripts or images)")
    return _document(source, text, fmt, {"title": title} if title else {})


def _sniff(data: bytes) -> str:
    """What a file's first bytes say it is, in words for an error message."""
    head = data[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "a PDF"
    if head.startswith(b"PK\x03\x04"):
        return "a ZIP package (DOCX, XLSX, EPUB or a ZIP archive)"
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        return "an OLE compound file (a legacy .doc/.xls or an encrypted Office file)"
    if head[:8] in (b"\x89PNG\r\n\x1a\n",) or head.startswith((b"\xff\xd8\xff", b"GIF8")):
        return "an image"
    if head.startswith(b"<") or b"<html" in head.lower():
        return "HTML or XML markup"
    if b"\0" in head:
        return "binary data"
    return "text"


def _markdown_document(text: str, source: str) -> Document:
    metadata: dict[str, Any] = {}
    match = _FRONT_MATTER.match(text)
    if match:
        try:
            front = yaml.safe_load(match.group(1) or "")
        except yaml.YAMLError as exc:
            front = f"invalid YAML front matter, kept as text: {str(exc).splitlines()[0]}"
        if front is None or isinstance(front, dict):
            metadata.update({str(k): _jsonable(v) for k, v in (front or {}).items()})
            text = text[match.end() :]
        else:
            # Not key/value pairs (or not YAML): it is probably a thematic break, so keep it as text.
            reason = front if isinstance(front, str) and "invalid YAML" in front else "not a mapping"
            metadata["front_matter_error"] = reason
            log.warning("%s: front matter %s", source, reason)
    if not text.strip():
        raise _Skip("no text besides the front matter (empty document)")
    title = metadata.get("title") or _first_h1(text)
    if title:
        metadata["title"] = str(title)
    return _document(source, text, "markdown", metadata)


def _first_h1(text: str) -> str | None:
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence and (m := _H1.match(line)):
            return m.group(1).strip()
    return None


def _load_pdf(path: Path, source: str) -> Document:
    import pymupdf  # a heavy import: only when a PDF shows up

    data = path.read_bytes()
    if not data:
        raise _Skip("empty file")
    if b"%PDF-" not in data[:1024]:
        raise _Skip(
            f"not a PDF: no %PDF- header, its content is {_sniff(data)}; fix its extension or re-download it"
        )
    if b"%%EOF" not in data[-2048:]:
        raise _Skip("truncated PDF (no end-of-file marker): re-download or re-export it")
    try:
        pdf = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises several types for damaged files
        raise _Skip(f"corrupt PDF, cannot be opened ({exc}): re-export or repair it") from None
    with pdf:
        if pdf.needs_pass:
            raise _Skip(
                "encrypted PDF that needs a password: decrypt it first (e.g. `qpdf --decrypt "
                "--password=... in.pdf out.pdf`)"
            )
        # Ligatures (fi, fl) expanded, so that the text matches what people type in queries.
        flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES
        blocks: list[list[TextBlock]] = []
        try:
            for page in pdf:
                blocks.append(page_blocks(page, flags))
        except Exception as exc:
            raise _Skip(f"corrupt PDF, page {len(blocks) + 1} cannot be read ({exc})") from None
        meta = pdf.metadata or {}
        repaired = bool(getattr(pdf, "is_repaired", False))
    # Paragraphs of whole sentences (lines joined, hyphenation undone), running headers dropped.
    pages, running_dropped = pages_text(blocks)
    if not any(p.strip() for p in pages):
        raise _Skip(f"no text layer ({len(pages)} page(s) of images only); OCR it first (e.g. ocrmypdf)")

    text_parts: list[str] = []
    page_starts: list[int] = []
    offset = 0
    for page_text in pages:
        # Pages are separated by a blank line, so that the chunker sees a paragraph break there.
        page_text = page_text.replace("\r\n", "\n").replace("\r", "\n").rstrip() + "\n\n"
        page_starts.append(offset)
        text_parts.append(page_text)
        offset += len(page_text)
    metadata: dict[str, Any] = {"page_count": len(pages)}
    for key in ("title", "author", "subject", "keywords"):
        if value := (meta.get(key) or "").strip():
            metadata[key] = value
    empty = [i + 1 for i, p in enumerate(pages) if not p.strip()]
    if empty:
        metadata["pages_without_text"] = empty
    if repaired:
        metadata["repaired"] = True
    if running_dropped:
        metadata["running_blocks_dropped"] = running_dropped
    return _document(source, "".join(text_parts), "pdf", metadata, page_starts)


def _document(
    source: str,
    text: str,
    fmt: Literal["pdf", "markdown", "text", "html", "docx"],
    metadata: dict[str, Any],
    page_starts: list[int] | None = None,
) -> Document:
    return Document(
        id=document_id(source, text),
        source=source,
        text=text,
        format=fmt,
        metadata=metadata,
        page_starts=page_starts,
    )


# --- helpers -------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Front-matter values as JSON-friendly data (YAML dates become ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _nothing_loaded_message(paths: Iterable[str | Path], skipped: list[SkippedFile]) -> str:
    shown = [str(p) for p in paths]
    if not skipped:
        return f"no documents found in {shown}: the directories are empty"
    lines = [f"no document could be loaded from {shown}; {len(skipped)} file(s) skipped:"]
    lines += [f"  {s.path}: {s.reason}" for s in skipped[:20]]
    if len(skipped) > 20:
        lines.append(f"  ... and {len(skipped) - 20} more")
    return "\n".join(lines)
