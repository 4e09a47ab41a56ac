"""Rebuild this corpus from the Debian `python3.11-doc` package (3.11.2-6+deb12u8).

Keeps each chosen page's title and main text (`div.body`), as HTML, inside `<main>`; drops the
navigation bars, sidebar, footer, scripts, styles, images and the headings' permalink marks, which
are page furniture, not documentation. Writes the pages and LICENSE (the docs' copyright page and the
licence terms of their "History and License" page).

    dpkg-deb -x python3.11-doc_3.11.2-6+deb12u8_all.deb /tmp/pydoc
    python data/corpora/python_docs/make_corpus.py /tmp/pydoc/usr/share/doc/python3.11/html
"""

from __future__ import annotations

import sys
from pathlib import Path

from lxml import etree, html

HERE = Path(__file__).resolve().parent
TUTORIAL = ["appetite", "interpreter", "introduction", "controlflow", "datastructures", "modules", "inputoutput",
            "errors", "classes", "stdlib", "stdlib2", "venv", "interactive", "floatingpoint", "appendix"]
LIBRARY = ["json", "pathlib", "argparse", "functools", "itertools", "collections", "dataclasses", "logging", "venv",
           "random", "enum"]
HOWTO = ["logging"]


def main_html(page: Path) -> str:
    """The page's title and main text as a small standalone HTML document."""
    root = html.parse(str(page)).getroot()
    title = root.findtext(".//title").replace("\u2014 Python 3.11.2 documentation", "").strip()
    body = root.find_class("body")[0]
    for el in body.xpath(".//a[@class='headerlink'] | .//img | .//script | .//style"):
        el.drop_tree()
    inner = "".join(etree.tostring(child, encoding="unicode", method="html") for child in body)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title} \u2014 Python 3.11.2 '
            f"documentation</title></head>\n<body><main>\n{inner.strip()}\n</main></body></html>\n")


def licence_text(docs: Path) -> str:
    """The copyright notice and the licence terms (PSF, BeOpen, CNRI, CWI, Zero-Clause BSD) of the docs."""
    def text(page: str) -> str:
        body = html.parse(str(docs / page)).getroot().find_class("body")[0]
        return body.text_content().replace("\u00b6", "").strip()
    notice = text("copyright.html")
    terms = text("license.html")
    start = terms.index("Terms and conditions for accessing or otherwise using Python")
    end = terms.index("Licenses and Acknowledgements for Incorporated Software", terms.index("ZERO-CLAUSE BSD"))
    return f"{notice}\n\n{terms[start:end].strip()}\n"


def main(docs: Path) -> None:
    pages = ([f"tutorial/{p}" for p in TUTORIAL] + [f"library/{p}" for p in LIBRARY]
             + [f"howto/{p}" for p in HOWTO])
    for name in pages:
        out = HERE / f"{name}.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(main_html(docs / f"{name}.html"), encoding="utf-8")
    (HERE / "LICENSE").write_text(licence_text(docs), encoding="utf-8")
    print(f"{len(pages)} pages, {sum(f.stat().st_size for f in HERE.rglob('*.html')) / 1e6:.2f} MB")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
