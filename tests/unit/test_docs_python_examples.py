"""Every example in the docs runs as written: each ```python {.exec} block of docs/**/*.md, in order per
page, in one namespace per page (a later block may use an earlier one's names), from a temporary
directory with an empty LLM cache. Plain ```python blocks are illustrations and are not run."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python \{\.exec\}[^\n]*\n(.*?)^```", re.M | re.S)
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if BLOCK.search(p.read_text(encoding="utf-8")))


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


def test_the_pages_with_examples_are_found():
    assert ROOT / "docs" / "python-api.md" in PAGES
    assert len(blocks(ROOT / "docs" / "python-api.md")) >= 3


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(page, tmp_path, monkeypatch, isolated_cache):
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for i, code in enumerate(blocks(page), start=1):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{page.name} example {i}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{page.relative_to(ROOT)}, example {i} failed: {type(exc).__name__}: {exc}\n"
                                 f"its output:\n{out.getvalue()}") from exc
