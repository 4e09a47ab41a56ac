"""Synthetic test set generation: sampling, prompts, filters, failures and determinism.

The LLM is mocked (litellm `mock_response`, or a fake OpenAI-compatible server on 127.0.0.1 that
answers per chunk), because the point here is our own logic, not the model's.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest

from ragwatch.evalset.filters import (
    answer_problem,
    longest_shared_ngram,
    near_duplicates,
    question_problem,
    verbatim_problem,
)
from ragwatch.evalset.synthetic import (
    REFUSAL_ANSWER,
    TestsetSettings,
    code_fraction,
    generate_testset,
    kinds_for,
    sample_chunks,
)
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.types import Chunk, EvalSample

PROSE = ("ZenML pipelines are made of steps that pass artifacts to each other, and every artifact is "
         "versioned in the artifact store so that later runs can compare their outputs with earlier ones. ")


def make_chunk(doc: str, i: int, text: str | None = None) -> Chunk:
    body = text if text is not None else f"Section {i} of {doc}. " + PROSE * 3
    cid = hashlib.sha256(f"{doc}:{i}".encode()).hexdigest()[:12]
    return Chunk(id=cid, document_id=f"doc-{doc}", source=f"{doc}.md", text=body, start=0, end=len(body))


@dataclass
class FakeIndex:
    chunks: list[Chunk]
    fingerprint: str = "idx-test"


class BagOfWordsEmbedder:
    """Deterministic hashed bag-of-words vectors: identical wording -> cosine 1."""

    identity = "test/bow"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


@pytest.fixture()
def llm(tmp_path, monkeypatch) -> LLMClient:
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    return LLMClient(LLMSettings(model="openai/gpt-4o-mini", max_retries=0, max_repairs=0))


def reply(*pairs: tuple[str, str]) -> str:
    return json.dumps({"pairs": [{"question": q, "answer": a} for q, a in pairs]})


# --------------------------------------------------------------------------------- sampling
def test_sampling_is_seeded_and_stratified_by_document():
    chunks = [make_chunk("long", i) for i in range(30)] + [make_chunk("a", 0), make_chunk("b", 0)]
    settings = TestsetSettings(n_chunks=3, seed=7)
    picked, stats = sample_chunks(chunks, settings)
    assert {c.document_id for c in picked} == {"doc-long", "doc-a", "doc-b"}  # one per document first
    again, _ = sample_chunks(list(reversed(chunks)), settings)
    assert [c.id for c in again] == [c.id for c in picked]  # input order does not matter
    assert stats["sampled"] == 3 and stats["documents"] == 3
    other = [sample_chunks(chunks, TestsetSettings(n_chunks=6, seed=s))[0] for s in range(5)]
    assert len({tuple(c.id for c in p) for p in other}) > 1  # the seed changes the draw


def test_sampling_skips_short_and_code_chunks():
    code = "```python\nimport zenml\nx = {'a': [1, 2]}\nprint(x)\n```\n" * 5
    table = "\n".join("| key | value | default |" for _ in range(20))
    chunks = [make_chunk("a", 0), make_chunk("a", 1, "Too short."), make_chunk("b", 0, code),
              make_chunk("c", 0, table)]
    picked, stats = sample_chunks(chunks, TestsetSettings(n_chunks=4, min_chunk_tokens=20))
    assert [c.id for c in picked] == [chunks[0].id]
    assert stats["skipped_short"] == 1 and stats["skipped_code"] == 2
    assert code_fraction(PROSE) == 0.0


def test_kinds_cycle_over_questions():
    settings = TestsetSettings(questions_per_chunk=2, kinds=["factual", "numeric", "unanswerable"])
    assert [kinds_for(i, settings) for i in range(3)] == [
        ["factual", "numeric"], ["unanswerable", "factual"], ["numeric", "unanswerable"]]


def test_settings_reject_unknown_keys_and_kinds():
    with pytest.raises(ValueError, match="n_chunk"):
        TestsetSettings(n_chunk=3)
    with pytest.raises(ValueError):
        TestsetSettings(kinds=["trivia"])
    with pytest.raises(ValueError, match="kinds is empty"):
        TestsetSettings(kinds=[])


# ------------------------------------------------------------------------------ pure filters
def test_question_filter_reasons():
    s = TestsetSettings()
    assert question_problem("What does a ZenML step return?", s) is None
    assert question_problem("", s) == "empty question"
    assert question_problem("Why?", s).startswith("question shorter")
    assert question_problem("Describe how ZenML versions artifacts", s) == "no question mark"
    assert "passage" in question_problem("What does the passage say about steps?", s)


def test_answer_filter_reasons():
    s = TestsetSettings(max_answer_chars=200)

    def answer(a: str | None) -> str | None:
        return answer_problem(EvalSample(id="x", question="Why?", reference_answer=a), s)

    assert answer("Artifacts are versioned in the artifact store.") is None
    assert answer("") == "empty answer" and answer(None) == "empty answer"
    assert answer("x").startswith("answer shorter") and answer("y" * 201).startswith("answer longer")
    loop = "The embeddings are used to retrieve the most relevant chunks of text for a query. " * 2
    assert answer(loop) == "answer repeats itself"
    contrast = ("A built-in materializer can handle any object by saving it with cloudpickle; "
                "a custom materializer can handle any object by saving it with your own code.")
    assert answer(contrast) is None


def test_verbatim_and_answer_leak():
    s = TestsetSettings(verbatim_overlap=8)
    context = PROSE

    def sample(q: str, a: str, answerable: bool = True) -> EvalSample:
        return EvalSample(id="x", question=q, reference_answer=a, reference_contexts=[context],
                          metadata={"answerable": answerable})

    copied = "Are steps that pass artifacts to each other and every artifact versioned?"
    assert longest_shared_ngram(copied, context) == 10
    assert "copies 10" in verbatim_problem(sample(copied, "yes"), s)
    fine = sample("Where are ZenML artifacts versioned?", "in the artifact store")
    assert verbatim_problem(fine, s) is None
    leak = sample("Is the artifact store where ZenML versions artifacts?", "the artifact store")
    assert verbatim_problem(leak, s) == "the answer is contained in the question"
    # unanswerable questions carry our refusal, which is never a leak
    assert verbatim_problem(sample("What is the artifact store?", "the artifact store", False), s) is None


def test_near_duplicates_keep_the_first():
    qs = ["How are artifacts versioned in ZenML?", "How are artifacts versioned in ZenML ?",
          "Which orchestrator runs pipelines on Kubernetes?"]
    out = near_duplicates(qs, BagOfWordsEmbedder(), 0.95)
    assert list(out) == [1] and "cosine 1.00" in out[1]
    assert list(near_duplicates(qs, None, 0.95)) == [1]  # exact normalized repeat without an embedder


# ------------------------------------------------------------------ generation with mock_response
def test_generate_applies_every_filter_and_records_provenance(llm):
    index = FakeIndex([make_chunk("a", 0)])
    mock = reply(
        ("How does ZenML let later runs compare outputs?", "Artifacts are versioned in the artifact store."),
        ("Where does ZenML keep artifact versions", "In the artifact store."),            # no '?'
        ("Which store keeps versioned ZenML artifacts?", ""),                               # empty answer
        ("Do steps pass artifacts to each other, and every artifact is versioned?", "yes"),  # verbatim
        ("Is the artifact store where ZenML versions artifacts?", "the artifact store"),  # answer leak
        ("How does ZenML let later runs compare outputs ?", "By versioning artifacts."),   # near-duplicate
    )
    settings = TestsetSettings(n_chunks=1, questions_per_chunk=6, min_chunk_tokens=5, verbatim_overlap=8,
                               dedup_threshold=0.95)
    ts = generate_testset(index, llm, BagOfWordsEmbedder(), settings, llm_overrides={"mock_response": mock})
    removed = {f.name: f.removed for f in ts.filters}
    assert removed == {"malformed_question": 1, "answer_length": 1, "verbatim_or_leak": 2,
                       "near_duplicate": 1}
    assert ts.filters[0].examples == ["Where does ZenML keep artifact versions"]
    assert len(ts.removed) == 5 and not ts.failures
    [s] = ts.samples
    chunk = index.chunks[0]
    assert s.question == "How does ZenML let later runs compare outputs?"
    assert [(r.kind, r.value) for r in s.relevant] == [("chunk_id", chunk.id), ("document", "a.md")]
    assert s.reference_contexts == [chunk.text] and s.kind == "factual"
    assert s.metadata["generator_model"] and s.metadata["prompt_version"] == ts.metadata["prompt_version"]
    assert ts.metadata["size"] == 1 and ts.metadata["generated_pairs"] == 6
    assert ts.metadata["index_fingerprint"] == "idx-test" and ts.metadata["filter_removed"] == removed
    assert ts.usage["requests"] == 1


def test_unanswerable_pairs_have_no_relevance_and_a_refusal(llm):
    settings = TestsetSettings(n_chunks=1, questions_per_chunk=1, kinds=["unanswerable"], min_chunk_tokens=5)
    mock = reply(("Which GPU does ZenML recommend for training?", "unanswerable"))
    ts = generate_testset(FakeIndex([make_chunk("a", 0)]), llm, None, settings,
                          llm_overrides={"mock_response": mock})
    [s] = ts.samples
    assert s.kind == "unanswerable" and s.relevant == [] and s.reference_answer == REFUSAL_ANSWER
    assert s.metadata["answerable"] is False


def test_a_question_repeated_within_a_chunk_is_kept_once(llm):
    q = "How does ZenML let later runs compare outputs?"
    mock = reply((q, "By versioning artifacts."), (q, "By versioning artifacts."))
    settings = TestsetSettings(n_chunks=1, questions_per_chunk=2, min_chunk_tokens=5)
    for embedder in (BagOfWordsEmbedder(), None):
        ts = generate_testset(FakeIndex([make_chunk("a", 0)]), llm, embedder, settings,
                              llm_overrides={"mock_response": mock})
        assert [s.question for s in ts.samples] == [q]  # same id twice: only the repeat goes
        assert ts.metadata["filter_removed"]["near_duplicate"] == 1


def test_failed_generations_are_recorded_not_raised(llm):
    index = FakeIndex([make_chunk("a", 0), make_chunk("b", 0)])
    ts = generate_testset(index, llm, None, TestsetSettings(n_chunks=2, min_chunk_tokens=5),
                          llm_overrides={"mock_response": "I cannot do JSON, sorry"})
    assert ts.samples == [] and len(ts.failures) == 2
    assert {f.chunk_id for f in ts.failures} == {c.id for c in index.chunks}
    assert all("structured output" in f.reason for f in ts.failures)


def test_answerability_check_removes_with_reason(llm):
    settings = TestsetSettings(n_chunks=1, questions_per_chunk=1, min_chunk_tokens=5,
                               llm_answerability_check=True)
    mock = reply(("How does ZenML let later runs compare outputs?", "Artifacts are versioned."))
    index = FakeIndex([make_chunk("a", 0)])
    kept = generate_testset(index, llm, None, settings, llm_overrides={"mock_response": mock},
                            check_overrides={"mock_response": '{"answerable": "yes"}'})
    assert len(kept.samples) == 1
    assert kept.filters[-1].name == "answerability" and kept.filters[-1].removed == 0
    dropped = generate_testset(index, llm, None, settings, llm_overrides={"mock_response": mock},
                               check_overrides={"mock_response": '{"answerable": "no"}'})
    assert dropped.samples == []
    assert dropped.filters[-1].reasons == {"judged not answerable from its chunk": 1}
    broken = generate_testset(index, llm, None, settings, llm_overrides={"mock_response": mock},
                              check_overrides={"mock_response": "maybe"})
    assert len(broken.samples) == 1 and broken.filters[-1].unchecked == 1  # kept, but reported
    assert broken.failures[0].stage == "check"


def test_no_usable_chunk_is_a_clear_error(llm):
    with pytest.raises(ValueError, match="min_chunk_tokens"):
        generate_testset(FakeIndex([make_chunk("a", 0, "tiny")]), llm, None, TestsetSettings())
    with pytest.raises(TypeError, match="chunks"):
        generate_testset(object(), llm, None, TestsetSettings())


# ---------------------------------------------------------- a fake server: per-chunk replies
class _FakeOpenAI(BaseHTTPRequestHandler):
    """Answers each chunk's prompt with a question naming its section; 'BROKEN' chunks get prose."""

    calls: ClassVar[Counter] = Counter()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        _FakeOpenAI.calls["n"] += 1
        section = re.search(r"Section (\d+) of (\w+)", prompt)
        if "BROKEN" in prompt or section is None:
            content = "no json here"
        else:
            n, doc = section.groups()
            content = reply((f"What is described in section {n} of the {doc} guide?",
                             f"Section {n} of {doc}."))
        payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content}}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def fake_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_batch_goes_on_after_a_failure_and_a_warm_cache_gives_the_identical_set(fake_server, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    chunks = [make_chunk(doc, i) for doc in ("alpha", "beta", "gamma") for i in range(3)]
    broken = make_chunk("delta", 0, "BROKEN " + PROSE * 3)
    index = FakeIndex([*chunks, broken])
    settings = TestsetSettings(n_chunks=10, questions_per_chunk=1, min_chunk_tokens=5, seed=3)
    llm = LLMSettings(model="openai/fake", api_base=fake_server, max_retries=0, max_repairs=0)
    _FakeOpenAI.calls.clear()
    first = generate_testset(index, llm, BagOfWordsEmbedder(), settings)
    assert len(first.samples) == 9 and [f.chunk_id for f in first.failures] == [broken.id]
    assert len({s.id for s in first.samples}) == 9
    served = _FakeOpenAI.calls["n"]
    second = generate_testset(index, llm, BagOfWordsEmbedder(), settings)
    assert _FakeOpenAI.calls["n"] == served + 1  # only the failed chunk is asked again: errors are not cached
    assert second.samples == first.samples and second.metadata == first.metadata
    assert second.fingerprint() == first.fingerprint() == first.metadata["fingerprint"]
    reseeded = generate_testset(index, llm, BagOfWordsEmbedder(), settings.model_copy(update={"seed": 4}))
    assert [s.id for s in reseeded.samples] != [s.id for s in first.samples]  # order follows the seed
