"""HTML and DOCX as Markdown-shaped text: main text only, headings as `#` lines.

Both formats become the text the chunker already understands: headings start a chunk and give it
its heading path, lists keep one item per line, tables one row per line (cells joined by ` | `), and
preformatted text is fenced so the splitter does not cut inside it. Parsing is lxml (HTML) and
python-docx (DOCX); this module only decides what is main text.

Example:
    >>> text, title = html_to_markdown(b"<title>T</title><nav>menu</nav><h2>Install</h2><p>pip  install x</p>")
    >>> print(text)
    ## Install
    <BLANKLINE>
    pip install x
    >>> title
    'T'
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

from lxml import etree
from lxml import html as lxml_html

_SPACE = re.compile(r"\s+")
# Page furniture, not content: menus, banners, scripts, forms.
_DROP = frozenset(
    {"script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "svg", "iframe",
     "button", "select", "head", "object", "canvas"}
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "body", "blockquote", "ul", "ol", "dl", "dt", "dd", "figure",
     "figcaption", "address", "table", "thead", "tbody", "tfoot", "caption", "details", "summary", "hr", "html"}
)


class MarkupError(ValueError):
    """The file cannot be read as the format its extension claims; the message says what to do."""


def html_to_markdown(data: bytes) -> tuple[str, str | None]:
    """Main text of an HTML page as Markdown-shaped text, and the page title (or None)."""
    if not data.strip():
        raise MarkupError("empty file")
    try:
        root = lxml_html.document_fromstring(data)
    except (etree.ParserError, ValueError) as exc:
        raise MarkupError(f"not parseable as HTML ({exc}); check that it is an HTML page") from None
    title_el = root.find(".//title")
    title = _clean(title_el.text_content()) if title_el is not None else None
    # <main> (or a lone <article>) holds the content on most sites; elsewhere the whole body.
    articles = root.findall(".//article")
    content = root.find(".//main")
    if content is None and len(articles) == 1:
        content = articles[0]
    if content is None:
        body = root.find(".//body")
        content = body if body is not None else root
    blocks = _HtmlBlocks()
    blocks.walk(content)
    text = "\n\n".join(blocks.finish())
    return text, title or _first_heading(blocks.blocks)


class _HtmlBlocks:
    """Walks an lxml tree and collects blocks of text in reading order."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self._inline: list[str] = []
        self._prefix = ""

    def finish(self) -> list[str]:
        self._flush()
        return self.blocks

    def walk(self, el: etree._Element) -> None:
        tag = el.tag.lower() if isinstance(el.tag, str) else None
        if tag is None or tag in _DROP or el.get("hidden") is not None or el.get("aria-hidden") == "true":
            return  # comments, processing instructions and furniture; the caller adds the tail
        if tag in _HEADINGS:
            self._flush()
            if heading := _clean(el.text_content()):
                self.blocks.append(f"{'#' * _HEADINGS[tag]} {heading}")
        elif tag == "pre":
            self._flush()
            code = el.text_content().strip("\n")
            if code.strip():
                self.blocks.append(f"```\n{code}\n```")
        elif tag == "table":
            self._flush()
            rows = [row for row in map(_cells, el.iter("tr")) if any(row)]
            if rows:
                self.blocks.append("\n".join(" | ".join(row) for row in rows))
        elif tag == "br":
            self._inline.append("\n")
        elif tag == "li":
            self._flush()
            self._prefix = "- "
            self._children(el)
            self._flush()
        elif tag in _BLOCKS:
            self._flush()
            self._children(el)
            self._flush()
        else:
            self._children(el)

    def _children(self, el: etree._Element) -> None:
        # Newlines in HTML source are spaces; only <br> breaks a line.
        if el.text:
            self._inline.append(_SPACE.sub(" ", el.text))
        for child in el:
            self.walk(child)
            if child.tail:
                self._inline.append(_SPACE.sub(" ", child.tail))

    def _flush(self) -> None:
        lines = [_clean(line) for line in "".join(self._inline).split("\n")]
        text = "\n".join(line for line in lines if line)
        if text:
            self.blocks.append(self._prefix + text)
        self._inline.clear()
        self._prefix = ""


def _cells(tr: etree._Element) -> list[str]:
    return [_clean(c.text_content()) for c in tr if isinstance(c.tag, str) and c.tag.lower() in ("td", "th")]


def docx_to_markdown(data: bytes) -> tuple[str, str | None]:
    """Text of a Word document (paragraphs and tables in order) as Markdown-shaped text, and its title."""
    import docx  # python-docx; imported only when a DOCX shows up
    from docx.opc.exceptions import PackageNotFoundError

    if data[:4] == b"\xd0\xcf\x11\xe0":
        raise MarkupError(
            "an OLE compound file, not a DOCX package: a password-protected DOCX or a legacy .doc renamed; "
            "remove the password or save it as .docx (e.g. `libreoffice --headless --convert-to docx`)"
        )
    if data[:2] != b"PK":
        raise MarkupError("not a DOCX (not a ZIP package); fix its extension or re-export it as .docx")
    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, etree.XMLSyntaxError) as exc:
        raise MarkupError(f"corrupt DOCX, cannot be opened ({exc}); re-save it from Word or LibreOffice") from None
    except Exception as exc:  # zipfile.BadZipFile and friends from a damaged package
        raise MarkupError(f"corrupt DOCX, cannot be opened ({exc}); re-save it from Word or LibreOffice") from None
    blocks = list(_docx_blocks(document))
    title = _clean(document.core_properties.title or "") or _first_heading(blocks)
    return "\n\n".join(blocks), title


def _docx_blocks(document) -> Iterator[str]:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for child in document.element.body.iterchildren():
        if child.tag.endswith("}p"):
            paragraph = Paragraph(child, document)
            text = _clean(paragraph.text)
            if not text:
                continue
            style = (paragraph.style.name if paragraph.style is not None else "") or ""
            if level := _docx_heading_level(style):
                yield f"{'#' * level} {text}"
            elif style.startswith("List"):
                yield f"- {text}"
            else:
                yield text
        elif child.tag.endswith("}tbl"):
            rows = []
            for row in Table(child, document).rows:
                cells: list[str] = []
                for cell in row.cells:  # merged cells repeat: keep each once
                    value = _clean(cell.text)
                    if not cells or cells[-1] != value:
                        cells.append(value)
                if any(cells):
                    rows.append(" | ".join(cells))
            if rows:
                yield "\n".join(rows)


def _docx_heading_level(style: str) -> int | None:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return min(int(match.group(1)), 6) if match else None


def _first_heading(blocks: list[str]) -> str | None:
    return next((b.lstrip("#").strip() for b in blocks if b.startswith("#")), None)


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()
