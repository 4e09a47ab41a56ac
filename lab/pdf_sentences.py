"""How many of a PDF's sentences are whole: the loader's text against PyMuPDF's raw block lines.

A fragment is a sentence, as the chunker and the faithfulness evidence split it
(`ragwatch.corpus.chunking.split_sentences`), that starts in lower case or that ends without
sentence-final punctuation while the next one starts in lower case: a line break inside a sentence.
Also counted: words hyphenated at a line end ("curva-"). Prints one row per PDF and the totals.

Usage:
    python -m lab.pdf_sentences                         # the bundled sample PDF
    python -m lab.pdf_sentences paper1.pdf paper2.pdf
"""

from __future__ import annotations

import argparse
import re
from itertools import pairwise
from pathlib import Path

import pymupdf

from ragwatch.corpus.chunking import split_sentences
from ragwatch.corpus.documents import load_document

ROOT = Path(__file__).resolve().parents[1]
_HYPHEN_END = re.compile(r"[a-z]-$")


def raw_text(path: Path) -> str:
    """The text as the loader read it before: each block's layout lines, blocks apart."""
    flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES
    with pymupdf.open(path) as pdf:
        return "\n\n".join("\n\n".join(b[4].strip() for b in page.get_text("blocks", flags=flags)
                                       if b[6] == 0 and b[4].strip()) for page in pdf)


def fragments(text: str) -> tuple[int, int, int]:
    """(sentences, fragments, hyphenated line ends) of `text`."""
    sentences = split_sentences(text)
    broken = sum(1 for s in sentences if s[:1].islower())
    broken += sum(1 for s, nxt in pairwise(sentences)
                  if s[-1:] not in ".!?:;)" and nxt[:1].islower())
    hyphens = sum(1 for line in text.splitlines() if _HYPHEN_END.search(line.rstrip()))
    return len(sentences), broken, hyphens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pdfs", nargs="*", type=Path, default=sorted((ROOT / "data/sample/pdf").glob("*.pdf")))
    args = parser.parse_args()
    totals = {"raw": [0, 0, 0], "loader": [0, 0, 0]}
    print(f"{'pdf':40} {'raw: sentences fragments hyphens':>34} {'loader: sentences fragments hyphens':>37}")
    for path in args.pdfs:
        raw, ours = fragments(raw_text(path)), fragments(load_document(path).text)
        for key, row in (("raw", raw), ("loader", ours)):
            totals[key] = [a + b for a, b in zip(totals[key], row, strict=True)]
        print(f"{path.name[:40]:40} {raw[0]:>14} {raw[1]:>9} {raw[2]:>8}   {ours[0]:>17} {ours[1]:>9} {ours[2]:>8}")
    for key, (n, broken, hyphens) in totals.items():
        print(f"{key}: {n} sentences, {broken} fragments ({broken / max(n, 1):.1%}), {hyphens} hyphenated line ends")


if __name__ == "__main__":
    main()
