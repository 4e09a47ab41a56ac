"""Synthetic evaluation sets: sample chunks, ask an LLM for question/answer pairs, filter them.

Every pair keeps its ground truth for retrieval evaluation (the source chunk id and document), the
generator model and the prompt version. Filters report how many pairs they removed and why; a chunk
whose generation failed is recorded as a `GenerationFailure`, never dropped silently.

Example:
    >>> from ragwatch.llm import LLMSettings
    >>> testset = generate_testset(index, LLMSettings(), embedder, TestsetSettings(n_chunks=8))
    >>> len(testset.samples), [(f.name, f.removed) for f in testset.filters], testset.failures
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from ragwatch.evalset.export import samples_fingerprint
from ragwatch.evalset.filters import (
    CHECK_PROMPT_VERSION,
    Embedder,
    FilterChain,
    FilterReport,
    RemovedPair,
    answer_problem,
    answerability_problems,
    near_duplicates,
    question_problem,
    verbatim_problem,
)
from ragwatch.llm.client import LLMClient
from ragwatch.llm.types import Generation, LLMSettings
from ragwatch.types import Chunk, EvalSample, RelevantItem

PROMPT_VERSION = "testset-qa-v1"
REFUSAL_ANSWER = "The documents do not contain the information needed to answer this question."

QuestionKind = Literal["factual", "numeric", "multi_sentence", "unanswerable"]

_KIND_INSTRUCTIONS: dict[str, str] = {
    "factual": "a factual question about one specific statement in the passage",
    "numeric": "a question whose answer is a precise detail of the passage: a number, name, version, "
               "setting, command or default value",
    "multi_sentence": "a question whose answer combines information from at least two different "
                      "sentences of the passage",
    "unanswerable": "a question on the same topic that the passage does NOT answer (a reader of the "
                    "passage could not know the answer); write 'unanswerable' as its answer",
}


class TestsetSettings(BaseModel):
    """How to sample chunks, which questions to ask, and how strictly to filter them.

    `kinds` is cycled over the questions of all chunks in order, so repeating a kind weights it:
    `["factual", "factual", "numeric"]` asks for two factual questions per numeric one.
    """

    __test__ = False  # not a pytest test class despite its name
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    n_chunks: int = Field(8, ge=1)
    """Chunks sampled for synthetic questions, stratified by document."""
    questions_per_chunk: int = Field(2, ge=1, le=10)
    """Questions asked per sampled chunk."""
    kinds: list[QuestionKind] = Field(default_factory=lambda: ["factual", "numeric", "multi_sentence"])
    """Question kinds, cycled over the questions in order (repeat a kind to weight it)."""
    seed: int = 0
    """Seed of the chunk sample."""
    # sampling
    min_chunk_tokens: int = Field(40, ge=0)
    """Chunks shorter than this are not sampled."""
    max_code_fraction: float = Field(0.4, ge=0.0, le=1.0)  # skip chunks mostly code/tables (by chars)
    """Chunks with more than this share of code or tables (by characters) are not sampled."""
    # filters
    dedup_threshold: float = Field(0.92, gt=0.0, le=1.0)  # cosine of question embeddings
    """Questions whose embedding cosine to an earlier one reaches this are dropped as near duplicates."""
    min_question_chars: int = Field(12, ge=1)
    """Shortest question kept."""
    max_question_chars: int = Field(300, ge=10)
    """Longest question kept."""
    min_answer_chars: int = Field(2, ge=1)
    """Shortest answer kept."""
    max_answer_chars: int = Field(600, ge=10)
    """Longest answer kept."""
    verbatim_overlap: int = Field(10, ge=3)  # longest word n-gram a question may share with its chunk
    """Longest run of words a question may share with its chunk (longer: a copy, dropped)."""
    llm_answerability_check: bool = False
    """One more call per pair: drop questions the LLM finds not answerable from their chunk."""
    max_tokens: int = Field(600, ge=64)  # bound of one generation reply
    """Most tokens of one generation reply."""

    @field_validator("kinds")
    @classmethod
    def _kinds_not_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("kinds is empty; list at least one of: factual, numeric, multi_sentence, "
                             "unanswerable")
        return value


class GenerationFailure(BaseModel):
    """A chunk whose generation (or answerability check) failed; the batch went on without it."""

    chunk_id: str
    reason: str
    stage: Literal["generate", "check"] = "generate"


class Testset(BaseModel):
    """A generated evaluation set with everything a versioned artifact needs.

    `metadata` is deterministic for the same inputs (no timings); `usage` holds the LLM usage of
    the run, which varies with the cache.
    """

    __test__ = False
    samples: list[EvalSample]
    filters: list[FilterReport] = Field(default_factory=list)
    failures: list[GenerationFailure] = Field(default_factory=list)
    removed: list[RemovedPair] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)

    def fingerprint(self) -> str:
        """A content hash of the samples: two sets with the same fingerprint hold the same questions."""
        return samples_fingerprint(self.samples)


# ------------------------------------------------------------------------------------- schemas
class QAPair(BaseModel):
    question: str = Field(max_length=300)
    answer: str = Field(max_length=600)


@lru_cache(maxsize=16)
def qa_schema(n: int) -> type[BaseModel]:
    """The reply schema for `n` questions: a bounded list (grammars honour maxItems, not minimum)."""
    return create_model("QAPairs", pairs=(list[QAPair], Field(min_length=1, max_length=n)))


# ------------------------------------------------------------------------------------ sampling
_BOX = re.compile(r"[│┃┠┨─━┼╋┯┷]")
_WORD = re.compile(r"\w+")
# lines that are code even outside a fence (a chunk may start inside a fenced block)
_CODE_LINE = re.compile(
    r"^\s*(import |from \S+ import |def |class |return |@\w|[\w.]+(\[.*\])?\s*[-+*/]?=\s"
    r"|[\w.]+\(.*\)\s*$|[\]\)}]+[,;]?\s*$|\$ |pip install|zenml \w)"
)


def _is_code_line(stripped: str) -> bool:
    symbols = sum(1 for ch in stripped if not (ch.isalnum() or ch.isspace()))
    return bool(
        stripped.startswith("|") or _BOX.search(stripped) or _CODE_LINE.match(stripped)
        or (stripped.startswith("<") and stripped.endswith(">"))  # HTML markup (figures, tables)
        or symbols / len(stripped) > 0.3
    )


def code_fraction(text: str) -> float:
    """Share of the characters of non-empty lines that sit in code (fenced, or code-looking lines),
    tables or HTML markup. Counted in characters, since one prose line can hold a whole paragraph."""
    in_fence = False
    total = code = 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        total += len(stripped)
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            code += len(stripped)
        elif in_fence or line.startswith(("    ", "\t")) or _is_code_line(stripped):
            code += len(stripped)
    return code / total if total else 0.0


def _word_count(text: str) -> int:
    return len(_WORD.findall(text))


def sample_chunks(
    chunks: Sequence[Chunk], settings: TestsetSettings, count_tokens: Callable[[str], int] | None = None
) -> tuple[list[Chunk], dict[str, int]]:
    """Pick `settings.n_chunks` chunks, seeded and stratified by document (round-robin over
    documents in a seeded order), skipping chunks that are too short or mostly code/tables.

    Returns the chosen chunks and counts of what was skipped and why.
    """
    count = count_tokens or _word_count
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    stats = {"chunks": len(chunks), "skipped_short": 0, "skipped_code": 0}
    for chunk in sorted(chunks, key=lambda c: c.id):  # input order must not change the draw
        if count(chunk.text) < settings.min_chunk_tokens:
            stats["skipped_short"] += 1
        elif code_fraction(chunk.text) > settings.max_code_fraction:
            stats["skipped_code"] += 1
        else:
            by_doc[chunk.document_id].append(chunk)
    rng = random.Random(settings.seed)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    for doc in docs:
        rng.shuffle(by_doc[doc])
    picked: list[Chunk] = []
    while len(picked) < settings.n_chunks and any(by_doc[d] for d in docs):
        for doc in docs:
            if by_doc[doc] and len(picked) < settings.n_chunks:
                picked.append(by_doc[doc].pop())
    stats["eligible"] = stats["chunks"] - stats["skipped_short"] - stats["skipped_code"]
    stats["sampled"] = len(picked)
    stats["documents"] = len({c.document_id for c in picked})
    return picked, stats


def kinds_for(chunk_index: int, settings: TestsetSettings) -> list[str]:
    """The kinds asked of the i-th sampled chunk: `settings.kinds` cycled over all questions."""
    n, kinds = settings.questions_per_chunk, settings.kinds
    return [kinds[(chunk_index * n + j) % len(kinds)] for j in range(n)]


# -------------------------------------------------------------------------------------- prompts
def build_prompt(chunk: Chunk, kinds: Sequence[str]) -> list[dict[str, str]]:
    """The generation prompt for one chunk (versioned by `PROMPT_VERSION`)."""
    wanted = "\n".join(f"{i}. {_KIND_INSTRUCTIONS[k]}" for i, k in enumerate(kinds, start=1))
    system = (
        "You write evaluation questions for a search system over technical documentation. "
        "Each question must make sense on its own to a user who has never seen the passage."
    )
    user = (
        f"Passage (from {chunk.source}):\n\"\"\"\n{chunk.text}\n\"\"\"\n\n"
        f"Write {len(kinds)} question(s) with answers, in this order:\n{wanted}\n\n"
        "Rules:\n"
        "- Answer only from the passage, in one or two short sentences.\n"
        "- Each question ends with '?' and names its subject (no 'the passage', 'the text', 'this').\n"
        "- Do not copy a sentence of the passage into the question; do not put the answer in it.\n"
        'Reply as JSON: {"pairs": [{"question": "...", "answer": "..."}]}'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# ------------------------------------------------------------------------------- building pairs
def sample_id(chunk_id: str, question: str) -> str:
    """A stable id: the same chunk and question always give the same id."""
    return "syn-" + hashlib.sha256(f"{chunk_id}\n{question}".encode()).hexdigest()[:16]


def pairs_from_generation(chunk: Chunk, kinds: Sequence[str], gen: Generation, seed: int) -> list[EvalSample]:
    """Turn one chunk's validated reply into samples; kind is taken from the pair's position."""
    samples = []
    for pair, kind in zip(gen.parsed.pairs, kinds, strict=False):
        question = " ".join(pair.question.split())
        answerable = kind != "unanswerable"
        samples.append(EvalSample(
            id=sample_id(chunk.id, question),
            question=question,
            reference_answer=" ".join(pair.answer.split()) if answerable else REFUSAL_ANSWER,
            reference_contexts=[chunk.text],
            relevant=[RelevantItem(kind="chunk_id", value=chunk.id),
                      RelevantItem(kind="document", value=chunk.source)] if answerable else [],
            kind=kind,
            metadata={
                "answerable": answerable,
                "source_chunk_ids": [chunk.id],
                "document_id": chunk.document_id,
                "source": chunk.source,
                "generator_model": gen.model,
                "prompt_version": PROMPT_VERSION,
                "seed": seed,
            },
        ))
    return samples


# ------------------------------------------------------------------------------------ the recipe
def generate_testset(
    index: Any,
    llm: LLMClient | LLMSettings,
    embedder: Embedder | None,
    settings: TestsetSettings | None = None,
    *,
    llm_overrides: dict[str, Any] | None = None,
    check_overrides: dict[str, Any] | None = None,
) -> Testset:
    """Sample chunks of `index` (anything with `.chunks`), generate pairs, filter them.

    `llm_overrides`/`check_overrides` are passed to the generation/check calls (e.g. `mock_response`
    in tests). Same inputs, seed and a warm LLM cache give the identical set.
    """
    settings = settings or TestsetSettings()
    chunks = getattr(index, "chunks", None)
    if chunks is None:
        raise TypeError(f"generate_testset needs an index with a `.chunks` list (ragwatch.indexing.index.Index), "
                        f"got {type(index).__name__}")
    client = llm if isinstance(llm, LLMClient) else LLMClient(llm)
    mark = client.usage.model_copy()
    picked, sampling = sample_chunks(chunks, settings, getattr(embedder, "count_tokens", None))
    if not picked:
        raise ValueError(
            f"no chunk of the index is usable for question generation ({sampling['chunks']} chunks: "
            f"{sampling['skipped_short']} shorter than min_chunk_tokens={settings.min_chunk_tokens}, "
            f"{sampling['skipped_code']} mostly code/tables); "
            "lower min_chunk_tokens or raise max_code_fraction"
        )

    kind_plan = [kinds_for(i, settings) for i in range(len(picked))]
    gens = client.generate_many(
        [build_prompt(c, k) for c, k in zip(picked, kind_plan, strict=True)],
        schema=qa_schema(settings.questions_per_chunk), desc="testset: generating questions",
        **{"max_tokens": settings.max_tokens, **(llm_overrides or {})},
    )
    samples: list[EvalSample] = []
    failures: list[GenerationFailure] = []
    for chunk, kinds, gen in zip(picked, kind_plan, gens, strict=True):
        if not gen.ok:
            failures.append(GenerationFailure(chunk_id=chunk.id, reason=gen.error or "unknown error"))
            continue
        samples.extend(pairs_from_generation(chunk, kinds, gen, settings.seed))
    generated = len(samples)

    pipe = FilterChain(samples)
    pipe.apply("malformed_question", "empty, too short/long, no '?', or refers to 'the passage'",
               lambda s: question_problem(s.question, settings))
    bounds = f"{settings.min_answer_chars}..{settings.max_answer_chars}"
    pipe.apply("answer_length", f"answer empty or outside {bounds} chars",
               lambda s: answer_problem(s, settings))
    pipe.apply("verbatim_or_leak", f"shares >= {settings.verbatim_overlap} consecutive words with the chunk, "
               "or contains its answer", lambda s: verbatim_problem(s, settings))
    dups = near_duplicates([s.question for s in pipe.samples], embedder, settings.dedup_threshold)
    dedup_rule = (f"question embedding cosine >= {settings.dedup_threshold} to an earlier one"
                  if embedder is not None else "same normalized text as an earlier question (no embedder)")
    pipe.apply_at("near_duplicate", dedup_rule, dups)
    if settings.llm_answerability_check:
        current = pipe.samples
        bad, errors = answerability_problems(current, client, **(check_overrides or {}))
        report = pipe.apply_at("answerability", "LLM says the question is not answerable from its chunk "
                               "alone (or, for unanswerable kinds, that it is)", bad)
        report.unchecked = len(errors)
        failures.extend(GenerationFailure(chunk_id=current[i].metadata["source_chunk_ids"][0],
                                          reason=f"answerability check of {current[i].id}: {err}",
                                          stage="check") for i, err in errors.items())

    final = pipe.samples
    metadata = {
        "size": len(final),
        "generated_pairs": generated,
        "kinds": dict(sorted(Counter(s.kind for s in final).items())),
        "generator_model": client.settings.model,
        "generator": client.settings.model_dump(mode="json",
                                                include={"model", "temperature", "max_tokens", "seed"}),
        "prompt_version": PROMPT_VERSION,
        "check_prompt_version": CHECK_PROMPT_VERSION if settings.llm_answerability_check else None,
        "index_fingerprint": _attr(index, "fingerprint"),
        "embedding_identity": _attr(embedder, "identity"),
        "seed": settings.seed,
        "settings": settings.model_dump(mode="json"),
        "sampling": sampling,
        "filter_removed": {r.name: r.removed for r in pipe.reports},
        "failures": len(failures),
        "fingerprint": samples_fingerprint(final),
    }
    return Testset(samples=final, filters=pipe.reports, failures=failures, removed=pipe.removed,
                   metadata=metadata, usage=client.usage.since(mark).model_dump(mode="json"))


def _attr(obj: Any, name: str) -> Any:
    """An attribute that may be a property or a method (`index.fingerprint` / `index.fingerprint()`)."""
    value = getattr(obj, name, None)
    return value() if callable(value) else value
