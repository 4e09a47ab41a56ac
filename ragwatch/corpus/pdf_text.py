"""PDF pages as a reader sees them: paragraphs of whole sentences, without running headers.

PyMuPDF gives each text block as the lines of the page layout. Left as they are, a sentence broken
over three lines becomes three "sentences" for the chunker, the evidence windows and lexical support,
and a word hyphenated at a line end ("curva-" / "ture") matches nothing. Here:

- the lines of a block are joined into one paragraph; a line that starts a list item, and a line of
  code (set in a monospaced font), keep their breaks;
- a word hyphenated at a line end is joined: without the hyphen ("curvature"), unless the document
  writes the hyphenated form elsewhere ("self-supervised"); before a digit or a capital the hyphen
  stays ("GPT-" / "4" is "GPT-4");
- blocks that repeat on most pages in the top or bottom margin (running headers, footers, page
  numbers) are dropped, so they neither split paragraphs nor fill chunks;
- blocks stay apart (a blank line between them), so columns, headings and captions are not merged.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

# A line that starts a list item keeps its line break.
_LIST_ITEM = re.compile(r"^\s*(?:[•◦▪·\-*–]\s|\(?\d{1,3}[.)]\s|\(?[a-z][.)]\s)")
# A word split at a line end: letters, then a hyphen, at the end of the line.
_HYPHENATED_END = re.compile(r"(\w*[^\W\d_])-$")
_WORDS = re.compile(r"[^\W\d_][\w-]*[^\W\d_]|[^\W\d_]")
_DIGITS = re.compile(r"\d+")
# The share of a page's height, at its top and bottom, where running headers and footers sit.
MARGIN_SHARE = 0.1


# PyMuPDF's span flag for a monospaced font.
_MONOSPACED = 8
# A line is code when this share of its characters is set in a monospaced font.
CODE_SHARE = 0.8


@dataclass(frozen=True)
class TextBlock:
    """One text block of a page: its lines, which of them are code (monospaced), and its vertical
    position as a share of the page height."""

    lines: tuple[str, ...]
    top: float
    bottom: float
    code: tuple[bool, ...] = ()


def page_blocks(page: object, flags: int) -> list[TextBlock]:
    """The text blocks of a PyMuPDF page, in the order the document writes them."""
    height = float(page.rect.height) or 1.0  # type: ignore[attr-defined]
    blocks = []
    for block in page.get_text("dict", flags=flags)["blocks"]:  # type: ignore[attr-defined]
        lines, code = [], []
        for line in block.get("lines", ()):
            text = "".join(span["text"] for span in line["spans"]).strip()
            if text:
                mono = sum(len(s["text"].strip()) for s in line["spans"] if s["flags"] & _MONOSPACED)
                lines.append(text)
                code.append(mono >= CODE_SHARE * len(text.replace(" ", "")))
        if lines:
            top, bottom = block["bbox"][1] / height, block["bbox"][3] / height
            blocks.append(TextBlock(tuple(lines), top, bottom, tuple(code)))
    return blocks


def running_lines(pages: Sequence[Sequence[TextBlock]]) -> set[str]:
    """Block texts (digits generalised) that sit in a page margin on at least half of 3+ pages."""
    if len(pages) < 3:
        return set()
    seen: Counter[str] = Counter()
    for blocks in pages:
        seen.update({_margin_key(b) for b in blocks if _in_margin(b)})
    return {key for key, n in seen.items() if n >= max(3, len(pages) / 2)}


def pages_text(pages: Sequence[Sequence[TextBlock]]) -> tuple[list[str], int]:
    """Each page's text, paragraphs separated by a blank line; and how many running blocks were dropped."""
    running = running_lines(pages)
    kept = [[b for b in blocks if not (_in_margin(b) and _margin_key(b) in running)] for blocks in pages]
    dropped = sum(len(a) - len(b) for a, b in zip(pages, kept, strict=True))
    vocabulary = _vocabulary(kept)
    return ["\n\n".join(join_lines(b.lines, vocabulary, b.code) for b in blocks) for blocks in kept], dropped


def join_lines(lines: Sequence[str], vocabulary: Collection[str] = (), code: Sequence[bool] = ()) -> str:
    """The lines of one block as one paragraph (list items and lines of code keep their breaks)."""
    out = ""
    for k, line in enumerate(lines):
        if not out:
            out = line
        elif any(code[j] for j in (k - 1, k) if j < len(code)):
            out += "\n" + line
        elif (m := _HYPHENATED_END.search(out)) and line[:1].islower():
            head, tail = m.group(1), (t.group(0) if (t := _WORDS.match(line)) else "")
            compound = f"{head}-{tail}".lower()
            keep_hyphen = compound in vocabulary and f"{head}{tail}".lower() not in vocabulary
            out = out[:-1] + ("-" if keep_hyphen else "") + line
        elif out.endswith("-") and out[-2:-1].isalnum() and not _LIST_ITEM.match(line):
            out += line  # "GPT-" / "4": a hyphen that joins, not one that splits a word
        elif _LIST_ITEM.match(line):
            out += "\n" + line
        else:
            out += " " + line
    return out


def _vocabulary(pages: Sequence[Sequence[TextBlock]]) -> set[str]:
    """Every word the document writes within a line (hyphenated compounds whole), lower-cased."""
    return {w.lower() for blocks in pages for b in blocks for line in b.lines for w in _WORDS.findall(line)}


def _in_margin(block: TextBlock) -> bool:
    return block.bottom <= MARGIN_SHARE or block.top >= 1 - MARGIN_SHARE


def _margin_key(block: TextBlock) -> str:
    return _DIGITS.sub("#", " ".join(block.lines)).strip().lower()
