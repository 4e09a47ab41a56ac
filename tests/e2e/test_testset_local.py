"""Question generation with the real tiny local model on two chunks of the sample corpus.

Small models write weak questions, so this checks the contract, not quality: every sampled chunk
ends with pairs or a recorded failure, and every pair keeps its provenance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragwatch.evalset.synthetic import PROMPT_VERSION, TestsetSettings, generate_testset
from ragwatch.llm import LLMSettings
from ragwatch.llm.types import TINY_MODEL
from ragwatch.types import Chunk

pytestmark = pytest.mark.e2e

DOCS = Path(__file__).resolve().parents[2] / "data" / "sample" / "zenml_docs"


@dataclass
class TwoChunkIndex:
    chunks: list[Chunk]
    fingerprint: str = "e2e-two-chunks"


def first_prose_paragraph(relative: str, min_words: int = 40) -> Chunk:
    """The first paragraph of a docs page long enough to ask about (kept small for a fast test)."""
    path = DOCS / relative
    text = path.read_text(encoding="utf-8")
    for match in re.finditer(r"(?:^|\n\n)([^\n#`|<{][^\n]+(?:\n[^\n#`|]+)*)", text):
        para = match.group(1).strip()
        if len(para.split()) >= min_words:
            start = text.index(para)
            return Chunk(id=f"e2e-{relative}", document_id=relative, source=relative, text=para,
                         start=start, end=start + len(para))
    pytest.skip(f"no prose paragraph of {min_words}+ words in {relative}")


@pytest.mark.timeout(600)
def test_tiny_model_every_chunk_ends_with_pairs_or_a_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    chunks = [first_prose_paragraph("getting-started/core-concepts.md"),
              first_prose_paragraph("how-to/build-pipelines/retry-steps.md")]
    settings = TestsetSettings(n_chunks=2, questions_per_chunk=2, min_chunk_tokens=20, max_tokens=300)
    llm = LLMSettings(model=TINY_MODEL, max_tokens=300, max_repairs=1)
    ts = generate_testset(TwoChunkIndex(chunks), llm, None, settings)

    sampled = {c.id for c in chunks}
    generated = {s.metadata["source_chunk_ids"][0] for s in [*ts.samples, *(r.sample for r in ts.removed)]}
    failed = {f.chunk_id for f in ts.failures}
    assert generated | failed == sampled  # no chunk vanished without pairs or a reason
    assert ts.metadata["generated_pairs"] == len(ts.samples) + sum(f.removed for f in ts.filters)
    for s in ts.samples:
        assert s.metadata["generator_model"] == TINY_MODEL and s.metadata["prompt_version"] == PROMPT_VERSION
        assert s.relevant[0].kind == "chunk_id" and s.relevant[0].value in sampled
        assert s.question.strip() and "?" in s.question
    print({"kept": len(ts.samples), "filters": ts.metadata["filter_removed"], "failures": len(ts.failures)})
