"""Build the sample PDF(s) in data/sample/pdf/ from Markdown pages of the sample corpus.

The PDF gives the default job a real PDF to ingest (text layer, several pages, title and author
metadata), made from pages we are licensed to ship. The output is deterministic: no dates, no
random file id.

Usage:
    python scripts/make_sample_pdf.py                      # rebuilds data/sample/pdf/zenml_orchestrators.pdf
    python scripts/make_sample_pdf.py --out /tmp/x.pdf --pages component-guide/orchestrators/local.md
"""

from __future__ import annotations

import argparse
import html
import io
import re
from pathlib import Path

import pymupdf

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "data" / "sample" / "zenml_docs"
DEFAULT_OUT = REPO / "data" / "sample" / "pdf" / "zenml_orchestrators.pdf"
DEFAULT_PAGES = [
    "component-guide/orchestrators/orchestrators.md",
    "component-guide/orchestrators/local.md",
    "component-guide/orchestrators/local-docker.md",
    "component-guide/orchestrators/airflow.md",
]
TITLE = "ZenML orchestrators (excerpt of the ZenML 0.60.0 documentation)"
AUTHOR = "ZenML GmbH (Apache-2.0); PDF made by ragwatch scripts/make_sample_pdf.py"

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)
_GITBOOK_TAG = re.compile(
    r"^\s*(\{%.*%\}|<!--.*-->|</?(figure|img|details|summary|table|tr|td|th|thead|tbody)\b.*)$"
)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def markdown_to_html(markdown: str) -> str:
    """A small Markdown -> HTML conversion: headings, paragraphs, lists, code blocks, inline code."""
    markdown = _FRONT_MATTER.sub("", markdown)
    out: list[str] = []
    paragraph: list[str] = []
    code: list[str] | None = None

    def flush() -> None:
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            if code is None:
                flush()
                code = []
            else:
                out.append(f"<pre>{html.escape(chr(10).join(code))}</pre>")
                code = None
            continue
        if code is not None:
            code.append(line)
        elif _GITBOOK_TAG.match(line):
            continue  # GitBook widgets and embedded images carry no text worth printing
        elif line.lstrip().startswith("|"):
            flush()  # a table row becomes one line of text; the |---| rule row is dropped
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                out.append(f"<p>{_inline(' | '.join(cells))}</p>")
        elif m := re.match(r"^(#{1,6})\s+(.*)$", line):
            flush()
            level = min(len(m.group(1)), 4)
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif m := re.match(r"^\s*[*-]\s+(.*)$", line):
            flush()
            out.append(f"<p>&#8226; {_inline(m.group(1))}</p>")
        elif not line.strip():
            flush()
        else:
            paragraph.append(line.strip())
    flush()
    if code is not None:
        out.append(f"<pre>{html.escape(chr(10).join(code))}</pre>")
    return "\n".join(out)


def _inline(text: str) -> str:
    text = _LINK.sub(r"\1", text)
    text = html.escape(text.replace("**", ""))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def build_pdf(pages: list[Path], out: Path) -> int:
    """Render the Markdown pages into one PDF at `out`; returns its page count."""
    body = "\n".join(markdown_to_html(p.read_text(encoding="utf-8")) for p in pages)
    css = "body {font-family: sans-serif; font-size: 10pt;} pre {font-size: 8pt;} code {font-size: 9pt;}"
    story = pymupdf.Story(html=body, user_css=css)
    buffer = io.BytesIO()
    writer = pymupdf.DocumentWriter(buffer)
    mediabox = pymupdf.paper_rect("a4")
    margin = 54  # 3/4 inch
    where = pymupdf.Rect(margin, margin, mediabox.width - margin, mediabox.height - margin)
    more = True
    while more:
        device = writer.begin_page(mediabox)
        more, _ = story.place(where)
        story.draw(device)
        writer.end_page()
    writer.close()

    doc = pymupdf.open(stream=buffer.getvalue(), filetype="pdf")
    doc.set_metadata({"title": TITLE, "author": AUTHOR, "creator": "ragwatch", "producer": "PyMuPDF"})
    out.parent.mkdir(parents=True, exist_ok=True)
    doc.save(out, garbage=3, deflate=True, no_new_id=True)
    count = doc.page_count
    doc.close()
    return count


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--pages", nargs="+", default=DEFAULT_PAGES, help="paths relative to the corpus")
    args = parser.parse_args()
    missing = [p for p in args.pages if not (CORPUS / p).is_file()]
    if missing:
        parser.error(f"not in {CORPUS}: {missing}")
    n = build_pdf([CORPUS / p for p in args.pages], args.out)
    print(f"wrote {args.out} ({n} pages, {args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
