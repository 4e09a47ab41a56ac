"""The configuration of each pipeline, with every default in one place.

The YAML files in `configs/` are validated against these models; a wrong key is an error naming it.
One source of defaults: what the project measured is what every config gets unless it says
otherwise (the models of each role, the calibrated faithfulness judge with logprobs where the
provider has them, the opt-in judges off, the built-in system's retrieval, the gate). A config
written from scratch needs only its documents; the bundled files (`configs/*.yaml`) name the
sample's data (corpus, labelled sets, keyword tests, URL rewrites) and what a user may change.
A block a file sets in part keeps the defaults of the keys it leaves out (`ragwatch/presets.py`).

Paths: every relative path in a config file (corpus paths, imports, keyword tables, `reports_dir`)
resolves against the directory of the file that sets it (`FullConfig.PATH_KEYS`), so a config works
from any current directory.
"""

from __future__ import annotations

import glob
import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.corpus.chunking import ChunkingSettings
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.evalset.assemble import EvalSetConfig, WithoutReference
from ragwatch.evalset.logged import LogInput
from ragwatch.indexing.bm25 import BM25Settings
from ragwatch.indexing.embeddings import EmbeddingSettings
from ragwatch.judges.config import JudgesConfig
from ragwatch.llm.types import LLMSettings, SystemGeneratorSettings
from ragwatch.presets import preset
from ragwatch.rag import RagSettings
from ragwatch.report.summary import ReportSettings
from ragwatch.retrieval import MatchSettings

RetrievalMode = Literal["vector", "bm25", "hybrid"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class CorpusSettings(_Strict):
    """Where the documents are: files, directories or globs (relative: to the config file's directory)."""

    paths: list[str] = Field(default_factory=list)
    """Files, directories (recursive) or globs of your documents; relative to this config file."""


class IngestConfig(_Strict):
    corpus: CorpusSettings = Field(default_factory=CorpusSettings)
    """Where the documents are."""
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    """How documents are cut into chunks."""
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    """The embedding model of the index."""
    bm25: BM25Settings = Field(default_factory=BM25Settings)
    """The lexical (BM25) side of the index."""


class RetrievalEvalSettings(_Strict):
    modes: list[RetrievalMode] = Field(default_factory=lambda: ["vector", "bm25", "hybrid"])
    """Retrieval modes whose rankings are measured against the labels."""
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    """Cut-offs k at which hit rate, recall, nDCG, ... are reported."""
    match: MatchSettings = Field(default_factory=MatchSettings)
    """How a retrieved chunk is matched against a question's labels."""


# The built-in system as shipped: hybrid retrieval, its top 3 contexts within 2,400 characters (the
# local 0.5B generator's prompt stays short enough to answer in seconds).
BuiltinRagSettings = preset(RagSettings, retrieval_mode="hybrid", top_k=3, max_context_chars=2400)
# The gate as shipped: retrieval as run is deterministic (any measured drop counts), other metrics may
# drop 0.05. Which metrics gate stays every metric both runs have (`gated_metrics: None`): a list would
# name metrics a user's run lacks (keyword tests), and a gated name that matches nothing refuses promotion.
SHIPPED_GATE: dict[str, Any] = {"default_allowed_drop": 0.05, "per_metric": {"system/*": 0.0}}
ShippedGate = preset(GateThresholds, **SHIPPED_GATE)


class SystemUnderTest(_Strict):
    """The RAG system being evaluated; it is versioned as a ZenML model named `model_name`."""

    model_name: str = "ragwatch-rag"
    """The ZenML model that versions the system under test (its baselines live there)."""
    rag: BuiltinRagSettings
    """Which system answers (built-in, callable, HTTP, logged) and how the built-in one retrieves."""
    generator: SystemGeneratorSettings
    """The built-in system's answering LLM."""


class E2ESettings(_Strict):
    """Handcrafted keyword tests (`ragwatch/checks/e2e.py`); none unless `tables` names a YAML file."""

    enabled: bool = True
    """Run the handcrafted keyword tests (when `tables` names a file)."""
    tables: str | None = None
    """YAML file of keyword-test tables (see configs/e2e_tests.yaml); relative to this config file."""


class EvaluateConfig(_Strict):
    system: SystemUnderTest = Field(default_factory=SystemUnderTest)
    """The system under test."""
    retrieval: RetrievalEvalSettings = Field(default_factory=RetrievalEvalSettings)
    """Retrieval metrics over the index, per mode and k."""
    e2e: E2ESettings = Field(default_factory=E2ESettings)
    """Handcrafted keyword tests."""
    without_reference: WithoutReference = "answer"
    """Questions without a reference answer: `answer` (the system answers them, every judge that needs no
    reference scores them, correctness and similarity say "no reference answer") or `retrieval_only`
    (evaluated by retrieval alone: neither asked nor judged)."""
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    """Which judges score the answers, with which judge LLM."""
    # More judge models run on the same items, compared with `judges.llm` in one agreement table.
    judge_panel: list[LLMSettings] = Field(default_factory=list)
    """More judge models run on the same items and compared with `judges.llm` in one agreement table."""
    gate: ShippedGate
    """When a new run may be promoted over production."""
    report: ReportSettings = Field(default_factory=ReportSettings)  # headline metrics, per-item caps
    """What the report's first screen shows."""
    promote: bool = True
    """Promote the system's model version to production when the gate passes."""
    quick: bool = False
    """A quick look (set by `run.py --quick`, docs/quick-look.md): too few items to decide, so the gate is
    not applied and the run is never promoted."""


class FullConfig(_Strict):
    """One file configures every pipeline.

    `retrieval_only: true` evaluates retrieval alone, with no LLM at all: no synthetic pairs, no
    written reference answers, no answers, no keyword tests, no judges (for labelled sets; their
    reference answers are kept in the evaluation set for a later full run). `reports_dir`: where
    `run.py` writes the HTML reports (default: `reports/` under the current directory).
    """

    PATH_KEYS: ClassVar[tuple[str, ...]] = (
        "ingest.corpus.paths", "testset.imports.path", "testset.handwritten_retrieval_cases",
        "testset.zenml_qa", "evaluate.e2e.tables", "reports_dir", "logs.path",
    )

    ingest: IngestConfig = Field(default_factory=IngestConfig)
    """Documents to chunks to index (`run.py ingest`)."""
    testset: EvalSetConfig = Field(default_factory=EvalSetConfig)
    """The evaluation set: synthetic pairs and imported labelled sets (`run.py testset`)."""
    evaluate: EvaluateConfig = Field(default_factory=EvaluateConfig)
    """The system under test, the judges, the gate and the report (`run.py evaluate`)."""
    retrieval_only: bool = False
    """Evaluate retrieval alone with no LLM at all (no synthetic pairs, answers, keyword tests or judges)."""
    reports_dir: str | None = None
    """Where the HTML reports go (default: `reports/` under the current directory)."""
    logs: LogInput | None = None
    """A log of answers as the evaluation set (docs/monitoring.md): `testset` makes the set from it; `evaluate`
    with `system.rag.kind: logged` evaluates the logged answers, another kind answers its questions anew."""

    @model_validator(mode="after")
    def _logged_needs_a_log(self) -> FullConfig:
        if self.evaluate.system.rag.kind == "logged":
            if self.logs is None:
                raise ValueError('evaluate.system.rag.kind "logged" needs a logs: block (path, format) naming the log')
            self.evaluate.e2e.enabled = False  # a log cannot be asked the keyword tests' new questions
        return self

    @model_validator(mode="after")
    def _retrieval_only_calls_no_llm(self) -> FullConfig:
        if self.retrieval_only:
            self.testset.synthetic = False
            self.testset.write_reference_answers = False
            self.evaluate.e2e.enabled = False
            self.evaluate.judges.enabled = []
            self.evaluate.judge_panel = []
        return self


def system_fingerprint(system: SystemUnderTest, embedding: EmbeddingSettings, chunking: ChunkingSettings) -> str:
    """A stable id of the system under test's configuration: retriever, k, embeddings, generator, prompt.

    Settings that do not change answers (cache, concurrency, retries) are left out.
    """
    generator = system.generator.model_dump(
        include={"model", "api_base", "temperature", "max_tokens", "seed"}
    )
    canonical = {
        # where answers are traced is not the system; an unset cache_key leaves older fingerprints as they were
        "rag": system.rag.model_dump(mode="json", exclude={"trace"} | ({"cache_key"} if system.rag.cache_key is None
                                                                       else set())),
        "generator": generator,
        "embedding": embedding.model_dump(mode="json", include={"model", "api_base"}),
        "chunking": chunking.model_dump(mode="json"),
    }
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def corpus_fingerprint(corpus: CorpusSettings) -> str:
    """A hash of the corpus files' paths, sizes and contents, so that a changed corpus re-runs ingestion."""
    digest = hashlib.sha256()
    for pattern in corpus.paths:
        path = Path(pattern)
        if path.is_dir():
            # Hidden names count only below the corpus folder: a corpus may itself live under one.
            files = sorted(p for p in path.rglob("*")
                           if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
        else:
            files = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
        for file in files:
            digest.update(str(file).encode())
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def index_key(ingest: IngestConfig, corpus: str | None = None) -> str:
    """Which index a config reads: its corpus (`corpus_fingerprint`, computed when not given), chunking,
    embedding model and BM25 settings, as 12 hex digits. The ingest pipeline tags the `rag_index` it makes
    with it, so that several jobs over different corpora on one store each find their own index."""
    blob = json.dumps({"corpus": corpus if corpus is not None else corpus_fingerprint(ingest.corpus),
                       "chunking": ingest.chunking.model_dump(mode="json"),
                       "embedding": ingest.embedding.model_dump(mode="json", include={"model", "api_base"}),
                       "bm25": ingest.bm25.model_dump(mode="json")}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


# What makes a generated set differ; retries, concurrency, caching and budgets do not.
_GENERATION_KEYS = {"model", "api_base", "temperature", "max_tokens", "seed", "extra"}


def content_hash(path: str | Path, suffixes: tuple[str, ...] | None = None) -> str:
    """sha256 of a file's bytes, or of a directory's files (relative names and bytes, in name order:
    a Hugging Face dataset on disk; only those ending in `suffixes` when given); "missing" when the path
    does not exist (the import says so)."""
    p = Path(path)
    digest = hashlib.sha256()
    if p.is_file():
        digest.update(p.read_bytes())
    elif p.is_dir():
        for file in sorted(f for f in p.rglob("*") if f.is_file() and (suffixes is None or f.suffix in suffixes)):
            digest.update(str(file.relative_to(p)).encode() + b"\0")
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    else:
        return "missing"
    return digest.hexdigest()


def evalset_fingerprint(config: FullConfig) -> dict[str, str]:
    """What the evaluation set of `config` is made from, hashed: `config` (the `testset:` block without
    its input paths and without settings that cannot change the set), `inputs` (the content of every
    labelled file it imports, so an edited file changes it although its path does not) and `testset`
    (both: the key an `eval_set` artifact carries and `evaluate` checks). The index the synthetic pairs
    come from is not in it.

    >>> evalset_fingerprint(config)["testset"]  # doctest: +SKIP
    """
    testset = config.testset
    canonical = testset.model_dump(mode="json", exclude={"generator", "imports", "handwritten_retrieval_cases",
                                                         "zenml_qa"})
    canonical["generator"] = testset.generator.model_dump(mode="json", include=_GENERATION_KEYS)
    canonical["imports"] = [s.model_dump(mode="json", exclude={"path"}) for s in testset.imports]
    files = {"handwritten_retrieval_cases": testset.handwritten_retrieval_cases, "zenml_qa": testset.zenml_qa,
             **{f"imports[{i}]": s.path for i, s in enumerate(testset.imports)}}
    if config.logs is not None:  # a log is the set: its settings and its content
        canonical["logs"] = config.logs.model_dump(mode="json", exclude={"path"})
        files["logs"] = config.logs.path or None
    inputs = {key: content_hash(path) for key, path in files.items() if path}
    config_hash = _sha256_json(canonical)
    inputs_hash = _sha256_json(inputs)
    return {"config": config_hash, "inputs": inputs_hash, "testset": _sha256_json([config_hash, inputs_hash])}


def _sha256_json(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
