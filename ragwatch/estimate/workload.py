"""The calls a pipeline run would make, found by running its own code against `DryClient`s.

The testset recipe's prompts come from the corpus chunks it would sample; reference answers from the
imported sets; answers from the built-in system's prompt over contexts of sampled chunks (the index
is not read: contexts are chunks of the same corpus, the question's own chunk first); judges run
their real plans, stage by stage, on those answers. Nothing is sent and ZenML is not imported.

Example:
    >>> estimate = estimate_pipeline("full", preflight("full", "configs/full.yaml"))  # doctest: +SKIP
    >>> print(format_estimate(estimate))  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragwatch.config import FullConfig
from ragwatch.estimate.dry import PLACEHOLDER, DryClient
from ragwatch.estimate.table import Estimate, estimate_row
from ragwatch.llm.history import StageRecord, read_history, typical
from ragwatch.llm.models import is_local
from ragwatch.llm.pricing import call_cost, count_tokens, is_priced
from ragwatch.llm.types import LLMSettings
from ragwatch.types import Chunk, EvalSample, SearchHit

STAGES = {"ingest": ("ingest",), "testset": ("testset",), "evaluate": ("evaluate",),
          "full": ("ingest", "testset", "evaluate")}
LOCAL_CHUNKS_PER_S = 17.0  # all-MiniLM-L6-v2 int8 on 2 cores (OFFLINE_STACK.md)
_CORPUS_CODE = Path(__file__).resolve().parents[1] / "corpus"  # the loader and chunker: their code shapes chunks
SENTENCE = "The documented component is configured in the stack settings and runs each step in order. "


class _Roles:
    """One `DryClient` per (role, settings), so each role's stages are counted apart."""

    def __init__(self, history: Sequence[StageRecord]) -> None:
        self.history = history
        self.clients: list[tuple[DryClient, LLMSettings]] = []

    def client(self, role: str, settings: LLMSettings) -> DryClient:
        dry = DryClient(settings, role=role, history=self.history)
        self.clients.append((dry, settings))
        return dry


@dataclass
class LatestInputs:
    """What earlier runs of this store made: the latest index and evaluation set (`evaluate` reads
    them; `full` makes them again, the same when the corpus and the testset's calls are unchanged)."""

    index: Any = None
    samples: list[EvalSample] | None = None


def estimate_pipeline(
    pipeline: str, config: FullConfig, *, history: Sequence[StageRecord] | None = None,
    latest: LatestInputs | None = None,
) -> Estimate:
    """Calls, tokens, dollars and wall time of running `pipeline` with `config`, without one LLM call.

    With `latest` (the store's index and evaluation set) the answers are asked with the real prompts
    (the index's contexts for the set's questions), so answers and judge calls already in the LLM
    cache are counted as what they are: free. Without it they are counted on stand-ins, as new calls.
    """
    started = time.perf_counter()
    history = read_history() if history is None else history
    roles = _Roles(history)
    estimate = Estimate(pipeline=pipeline)
    stages = STAGES[pipeline]
    chunks: list[Chunk] | None = None
    if "ingest" in stages:
        chunks = _chunks(config)
        _ingest_rows(config, chunks, estimate)
    samples: list[EvalSample] = []
    index = None
    if "testset" in stages or "evaluate" in stages:
        chunks = chunks if chunks is not None else _chunks(config)
        samples = _evaluation_set(config, chunks, roles, count="testset" in stages, estimate=estimate)
        index, latest_samples = _usable_latest(pipeline, latest, chunks, roles)
        if "evaluate" in stages and latest_samples is not None:
            from ragwatch.evalset.assemble import generation_samples

            samples = generation_samples(latest_samples)
            estimate.notes.append(f"evaluate: on this store's latest evaluation set ({len(latest_samples)} "
                                  "questions) and index: answers and judge calls already cached count as free")
    if "evaluate" in stages:
        if latest is None or latest.samples is None:
            estimate.notes.append("evaluate: answers and judge calls counted on stand-ins (no earlier evaluation "
                                  "set in this store), so none counts as cached")
        _evaluate(config, chunks or [], samples, roles, estimate, index=index)
    for dry, settings in roles.clients:
        rows = [estimate_row(count, settings) for count in dry.stages.values()]
        estimate.rows += rows
        spend = sum(r.cost_usd for r in rows)
        if settings.budget_usd is not None and spend > settings.budget_usd:
            estimate.notes.append(f"{dry.role}: budget_usd ${settings.budget_usd:g} is below the estimate "
                                  f"(${spend:.4f}): the run stops that role's calls at the budget")
        if settings.batch and dry.stages:
            estimate.notes.append(f"{dry.role}: batch stages at the batch price; each finishes within the "
                                  "provider's window (up to 24 h; wall shows the last batch of the stage, if any)")
        if not is_priced(settings.model):
            estimate.notes.append(f"{settings.model}: not in litellm's price map, counted as $0")
    estimate.notes = list(dict.fromkeys(estimate.notes))
    estimate.seconds = time.perf_counter() - started
    return estimate


def _usable_latest(pipeline: str, latest: LatestInputs | None, chunks: list[Chunk],
                   roles: _Roles) -> tuple[Any, list[EvalSample] | None]:
    """The latest index and evaluation set, when this run uses them: `evaluate` always; `full` when the
    index holds exactly the corpus's chunks and every testset call is cached (the step makes the same set)."""
    if latest is None or latest.index is None:
        return None, None
    if pipeline != "evaluate":
        if {c.id for c in latest.index.chunks} != {c.id for c in chunks}:
            return None, None
        generated = [count for dry, _ in roles.clients if dry.role == "testset generator"
                     for count in dry.stages.values()]
        if any(count.calls for count in generated):
            return latest.index, None
    return latest.index, latest.samples


# ----------------------------------------------------------------------------------------- ingest
def _chunks(config: FullConfig) -> list[Chunk]:
    """The corpus chunked as the ingest step does (with the embedding model's tokenizer), kept in the cache
    directory under `corpus_key`: another corpus, changed files or other settings never read these."""
    from ragwatch.corpus.chunking import chunk_documents
    from ragwatch.corpus.documents import load_documents
    from ragwatch.indexing.embeddings import get_embedder
    from ragwatch.llm.cache import default_cache_root

    ingest = config.ingest
    if not ingest.corpus.paths:
        return []
    path = default_cache_root() / "estimate" / f"chunks-{corpus_key(config)}.json"
    if path.is_file():
        try:
            return [Chunk.model_validate(c) for c in json.loads(path.read_text(encoding="utf-8"))["chunks"]]
        except (ValueError, KeyError, TypeError):
            pass  # unreadable or of an older layout: chunk again
    embedder = get_embedder(ingest.embedding)
    documents = load_documents(ingest.corpus.paths).documents
    chunks = chunk_documents(documents, ingest.chunking, embedder.count_tokens, max_window=embedder.max_input_tokens)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # a reader never sees half a file
        tmp.write_text(json.dumps({"files": [name for name, _ in _corpus_files(ingest.corpus.paths)],
                                   "chunks": [c.model_dump(mode="json") for c in chunks]}), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass
    return chunks


def corpus_key(config: FullConfig) -> str:
    """What the chunks depend on, hashed: every file the loader reads (its resolved path and bytes), the
    chunking settings, the embedding model (its tokenizer counts the tokens) and the corpus code itself."""
    ingest = config.ingest
    embedding = ingest.embedding.model_dump(mode="json", include={"model", "max_input_tokens", "extra"})
    code = sorted((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in _CORPUS_CODE.glob("*.py"))
    blob = json.dumps([_corpus_files(ingest.corpus.paths), ingest.chunking.model_dump(mode="json"), embedding, code],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _corpus_files(paths: Sequence[str]) -> list[tuple[str, str]]:
    """(resolved path, sha256 of the bytes) of each file the loader would read from `paths`, in its order."""
    from ragwatch.corpus.files import expand_paths

    out = []
    for file, _ in expand_paths(paths, None, []):
        resolved = file.resolve()
        try:
            out.append((str(resolved), hashlib.sha256(resolved.read_bytes()).hexdigest()))
        except OSError as exc:  # unreadable: the loader skips it too, and says why
            out.append((str(resolved), f"unreadable: {exc.strerror}"))
    return out


def _ingest_rows(config: FullConfig, chunks: list[Chunk], estimate: Estimate) -> None:
    embedding = config.ingest.embedding
    if is_local(embedding.model):
        estimate.notes.append(f"ingest: {len(chunks)} chunks of {len({c.document_id for c in chunks})} documents "
                              f"embedded by the local model {embedding.model} "
                              f"(no provider call; about {len(chunks) / LOCAL_CHUNKS_PER_S:.0f} s on an idle 2-core "
                              "machine, less when an earlier index holds the same chunks)")
        return
    from ragwatch.estimate.table import EstimateRow

    tokens = sum(count_tokens(embedding.model, [{"role": "user", "content": c.text}]) for c in chunks)
    estimate.rows.append(EstimateRow(
        role="embedding", stage="index (every chunk; reused vectors are free)", model=embedding.model,
        requests=len(chunks), cached=0, calls=math.ceil(len(chunks) / max(1, embedding.batch_size)),
        prompt_tokens=tokens, completion_tokens=0, cost_usd=call_cost(embedding.model, tokens, 0),
        priced=is_priced(embedding.model), reply_basis="history", wall_s=0.0))


# ---------------------------------------------------------------------------------------- testset
def _evaluation_set(
    config: FullConfig, chunks: list[Chunk], roles: _Roles, *, count: bool, estimate: Estimate
) -> list[EvalSample]:
    """The evaluation set the testset step would produce: synthetic pairs (as placeholders on their
    sampled chunks) and the imported sets (with written reference answers). Its calls are counted
    when `count` (the testset pipeline runs); otherwise they are assumed made already."""
    from ragwatch.evalset.assemble import generation_samples, import_labelled_samples, merge_samples
    from ragwatch.evalset.filters import build_check_prompt
    from ragwatch.evalset.references import needs_reference, write_reference_answers
    from ragwatch.evalset.synthetic import build_prompt, kinds_for, qa_schema, sample_chunks

    testset = config.testset
    settings = testset.testset
    synthetic: list[EvalSample] = []
    generator = roles.client("testset generator", testset.generator) if count else None
    if testset.synthetic and chunks:
        picked, _ = sample_chunks(chunks, settings)
        plan = [kinds_for(i, settings) for i in range(len(picked))]
        if generator is not None:
            generator.generate_many([build_prompt(c, k) for c, k in zip(picked, plan, strict=True)],
                                    schema=qa_schema(settings.questions_per_chunk),
                                    desc="testset: generating questions", max_tokens=settings.max_tokens)
        for chunk, kinds in zip(picked, plan, strict=True):
            for j, kind in enumerate(kinds):
                synthetic.append(_placeholder_sample(chunk, kind, j))
        if generator is not None and settings.llm_answerability_check:
            from ragwatch.evalset.filters import AnswerabilityVerdict

            generator.generate_many([build_check_prompt(s.reference_contexts[0], s.question) for s in synthetic],
                                    schema=AnswerabilityVerdict, desc="testset: answerability check",
                                    max_tokens=16)
        estimate.notes.append(f"testset: {len(synthetic)} synthetic pairs asked of {len(picked)} chunks, "
                              "counted as if every pair passes the filters")
    imported, _ = import_labelled_samples(testset)
    if testset.write_reference_answers and any(needs_reference(s) for s in imported):
        # without the testset pipeline the set was made earlier: its calls are not this run's
        writer = generator or DryClient(testset.generator, role="testset generator", history=roles.history)
        imported, _ = write_reference_answers(imported, writer)
    return generation_samples(merge_samples(synthetic, imported))


def _placeholder_sample(chunk: Chunk, kind: str, j: int) -> EvalSample:
    """A pair the recipe would write from `chunk`: a question and a short answer from its words."""
    words = chunk.text.split()
    question = " ".join(words[:14]).rstrip("?.,:;") + "?"
    answer = " ".join(words[14:40]) or question
    sample_id = hashlib.sha256(f"{chunk.id}:{j}".encode()).hexdigest()[:16]
    return EvalSample(id=sample_id, question=question, reference_answer=answer, reference_contexts=[chunk.text],
                      kind=kind, metadata={"chunk_id": chunk.id})


# --------------------------------------------------------------------------------------- evaluate
class _SampledIndex:
    """Stands in for the index: a question's own chunk first, then seeded draws from the corpus."""

    def __init__(self, chunks: list[Chunk], own: dict[str, str], seed: int = 0) -> None:
        self.chunks = chunks
        self.by_text = {c.text: c for c in chunks}
        self.own = own
        self.rng = random.Random(seed)
        self.fingerprint = "estimate"

    def search_many(self, questions: list[str], k: int, mode: str, embedder: Any = None) -> list[list[SearchHit]]:
        out = []
        for question in questions:
            picked: list[Chunk] = []
            own = self.by_text.get(self.own.get(question, ""))
            if own is not None:
                picked.append(own)
            while len(picked) < min(k, len(self.chunks)):
                picked.append(self.chunks[self.rng.randrange(len(self.chunks))])
            out.append([SearchHit(chunk=c, score=1.0, rank=r) for r, c in enumerate(picked, start=1)])
        return out


class _NoEmbedder:
    identity = "estimate"
    dim = 8

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


def _evaluate(config: FullConfig, chunks: list[Chunk], samples: list[EvalSample], roles: _Roles,
              estimate: Estimate, *, index: Any = None) -> None:
    from ragwatch.checks.e2e import load_e2e_tables, run_e2e_tests
    from ragwatch.judges import build_judges
    from ragwatch.rag.builtin import BuiltinRAG

    evaluate = config.evaluate
    system = evaluate.system
    own = {s.question: s.reference_contexts[0] for s in samples if s.reference_contexts}
    if system.rag.kind != "builtin" or not chunks:
        # the system's own calls are its business; the judges' calls on its answers are this run's
        estimate.notes.append(
            f"the system under test ({system.rag.kind}) answers outside ragwatch: its own calls are not counted; "
            f"the judges' are, on answers of about {system.generator.max_tokens} tokens with "
            f"{system.rag.top_k} contexts each" + (" from your corpus" if chunks else " of placeholder text"))
        answers = _external_answers(samples, chunks, own, system.rag.top_k, system.generator.max_tokens)
        written = [False] * len(answers)
    else:
        generator = roles.client("generator", system.generator)
        if index is not None:  # the real prompts: a cached answer comes back as itself, for free
            from ragwatch.indexing.embeddings import get_embedder

            rag = BuiltinRAG(index, get_embedder(config.ingest.embedding), generator, system.rag)
        else:
            rag = BuiltinRAG(_SampledIndex(chunks, own), _NoEmbedder(), generator, system.rag)  # type: ignore[arg-type]
        answers = rag.answer_many([s.question for s in samples]) if samples else []
        seen = typical(roles.history, system.generator.model, "rag answers") or typical(roles.history, None,
                                                                                       "rag answers")
        length = seen.completion_tokens if seen else system.generator.max_tokens
        # an answer still to be written stands in at its typical length (what the judges will read)
        written = [a.answer != PLACEHOLDER for a in answers]
        answers = [a if known else a.model_copy(update={"answer": _answer_text(length)})
                   for a, known in zip(answers, written, strict=True)]
        if evaluate.e2e.enabled and evaluate.e2e.tables:
            run_e2e_tests(load_e2e_tables(evaluate.e2e.tables), rag.answer_many)
    judge_models = [("judge", evaluate.judges)] + [
        (f"panel {s.model}", evaluate.judges.model_copy(update={"llm": s})) for s in evaluate.judge_panel]
    for role, judges_config in judge_models:
        dry = roles.client(role, judges_config.llm)
        judges = [j for j in build_judges(judges_config, dry, embedder=_NoEmbedder(), generator_llm=None)
                  if getattr(j, "llm", None) is dry]  # similarity, perplexity: no judge call
        if judges and samples and _judge_dry(judges, samples, answers, written):
            estimate.notes.append(
                f"{role}: faithfulness counted as if it asked about every statement of the answers not yet "
                "written; the run asks only where the judge's reply can change a verdict (45% of answers on "
                "the labelled data: docs/judges.md), so its calls and time are at most these")
    estimate.notes.append(f"evaluate: {len(samples)} answered and judged items")


def _judge_dry(judges: list[Any], samples: list[EvalSample], answers: list[Any], written: list[bool]) -> bool:
    """The judges' calls on the answers: a written (cached) answer as the run will judge it; a stand-in
    with every faithfulness statement asked, since whether the judge is asked about a statement depends on
    words not yet written (an upper bound: the run asks fewer). True when such an upper bound was counted."""
    from ragwatch.judges import run_judges
    from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier

    known = [k for k, w in enumerate(written) if w]
    if known:
        run_judges(judges, [samples[k] for k in known], [answers[k] for k in known])
    unknown = [k for k, w in enumerate(written) if not w]
    if unknown:
        cascading = [j.verifier for j in judges if isinstance(getattr(j, "verifier", None), EvidenceVerifier)
                     and j.verifier.cascade]
        for verifier in cascading:
            verifier.cascade = False
        try:
            run_judges(judges, [samples[k] for k in unknown], [answers[k] for k in unknown])
        finally:
            for verifier in cascading:
                verifier.cascade = True
        return bool(cascading)
    return False


def _external_answers(samples: list[EvalSample], chunks: list[Chunk], own: dict[str, str], top_k: int,
                      tokens: int) -> list[Any]:
    """Answers as a system of the user's own would give them: `top_k` contexts (chunks of the corpus, the
    question's own first; placeholder sentences without a corpus) and an answer of about `tokens`."""
    from ragwatch.types import RagAnswer, RetrievedContext

    questions = [s.question for s in samples]
    if chunks:
        hits = _SampledIndex(chunks, own).search_many(questions, top_k, "hybrid")
        contexts = [[RetrievedContext(text=h.chunk.text, chunk_id=h.chunk.id) for h in found] for found in hits]
    else:
        contexts = [[RetrievedContext(text=_answer_text(200)) for _ in range(top_k)] for _ in questions]
    return [RagAnswer(question=q, answer=_answer_text(tokens), contexts=c)
            for q, c in zip(questions, contexts, strict=True)]


def _answer_text(tokens: float) -> str:
    """Text of about `tokens` tokens, in sentences (judges that split answers count them)."""
    per_sentence = 16  # tokens of SENTENCE
    return (SENTENCE * max(1, round(tokens / per_sentence))).strip()
