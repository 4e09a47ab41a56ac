"""PDF text as a reader sees it: whole sentences, hyphenation undone, running headers dropped."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from ragwatch.corpus.documents import load_document
from ragwatch.corpus.pdf_text import TextBlock, join_lines, pages_text


def _write_lines(page: pymupdf.Page, lines: list[str], y: float, *, x: float = 50) -> float:
    for line in lines:
        page.insert_text((x, y), line, fontsize=10)
        y += 12
    return y


def test_lines_of_a_paragraph_join_into_sentences() -> None:
    lines = ["Given a passage x, DetectGPT first generates minor perturbations of the",
             "passage and compares the log probability of the curva-", "ture of the model."]
    assert join_lines(lines) == ("Given a passage x, DetectGPT first generates minor perturbations of the "
                                 "passage and compares the log probability of the curvature of the model.")


def test_hyphens_that_join_stay() -> None:
    assert join_lines(["we fine-tune a self-", "supervised model"], {"self-supervised"}) == \
        "we fine-tune a self-supervised model"
    assert join_lines(["trained on GPT-", "4 outputs"]) == "trained on GPT-4 outputs"


def test_list_items_keep_their_breaks() -> None:
    assert join_lines(["The steps are:", "• load the data", "• train", "1. evaluate it"]) == \
        "The steps are:\n• load the data\n• train\n1. evaluate it"


def test_running_headers_and_page_numbers_are_dropped_only_when_they_repeat() -> None:
    def page(n: int, body: str) -> list[TextBlock]:
        return [TextBlock(("Proceedings of a conference 2023",), 0.02, 0.04),
                TextBlock((body,), 0.3, 0.4), TextBlock((str(n),), 0.95, 0.97)]

    texts, dropped = pages_text([page(i, f"Body text {i}.") for i in range(1, 5)])
    assert dropped == 8 and texts == [f"Body text {i}." for i in range(1, 5)]
    # Two pages are too few to tell a running header from a heading.
    texts, dropped = pages_text([page(i, "Body.") for i in range(1, 3)])
    assert dropped == 0 and "Proceedings" in texts[0]


def test_a_real_pdf_reads_as_sentences(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for n in range(1, 4):
        page = doc.new_page()
        _write_lines(page, ["Journal of Examples, vol. 7"], 30)
        y = _write_lines(page, ["The optimizer is AdamW with the fol-", "lowing hyper-parameters: beta1 = 0.9,",
                                "beta2 = 0.95. LLaMA models range", "from 7B to 65B parameters."], 200)
        _write_lines(page, [f"Page {n}"], 820)
        assert y < 800
    doc.save(tmp_path / "paper.pdf")
    loaded = load_document(tmp_path / "paper.pdf")
    assert ("The optimizer is AdamW with the following hyper-parameters: beta1 = 0.9, beta2 = 0.95. "
            "LLaMA models range from 7B to 65B parameters.") in loaded.text
    assert "Journal of Examples" not in loaded.text and "Page 2" not in loaded.text
    assert loaded.metadata["running_blocks_dropped"] == 6


def test_lines_of_code_keep_their_breaks() -> None:
    lines = ["Run it with:", "from zenml.client import Client", "run = Client().get_pipeline_run(name)", "and read"]
    assert join_lines(lines, code=[False, True, True, False]) == \
        "Run it with:\nfrom zenml.client import Client\nrun = Client().get_pipeline_run(name)\nand read"
