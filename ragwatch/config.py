"""The configuration of each pipeline, with every default in one place.

The YAML files in `configs/` are validated against these models; a wrong key is an error naming it.
Defaults are neutral: a config written from scratch gets no corpus, no handwritten cases, no keyword
tests, no URL rewrites and no gate list of its own; the bundled ZenML sample sets those in its own
files (`configs/*.yaml`).

Paths: every relative path in a config file (corpus paths, imports, keyword tables, `reports_dir`)
resolves against the directory of the file that sets it (`FullConfig.PATH_KEYS`), so a config works
from any current directory.
"""

from __future__ import annotations

import glob
import hashlib
import json
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.corpus.chunking import ChunkingSettings
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.evalset.assemble import EvalSetConfig
from ragwatch.indexing.bm25 import BM25Settings
from ragwatch.indexing.embeddings import EmbeddingSettings
from ragwatch.judges.config import JudgesConfig
from ragwatch.llm.types import LLMSettings
from ragwatch.log_settings import LogInput
from ragwatch.rag import RagSettings
from ragwatch.report.summary import ReportSettings
from ragwatch.retrieval import MatchSettings

RetrievalMode = Literal["vector", "bm25", "hybrid"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CorpusSettings(_Strict):
    """Where the documents are: files, directories or globs (relative: to the config file's directory)."""

    paths: list[str] = Field(default_factory=list)


class IngestConfig(_Strict):
    corpus: CorpusSettings = Field(default_factory=CorpusSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    bm25: BM25Settings = Field(default_factory=BM25Settings)


class RetrievalEvalSettings(_Strict):
    modes: list[RetrievalMode] = Field(default_factory=lambda: ["vector", "bm25", "hybrid"])
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    match: MatchSettings = Field(default_factory=MatchSettings)


class SystemUnderTest(_Strict):
    """The RAG system being evaluated; it is versioned as a ZenML model named `model_name`."""

    model_name: str = "ragwatch-rag"
    rag: RagSettings = Field(default_factory=RagSettings)
    generator: LLMSettings = Field(default_factory=LLMSettings)


class E2ESettings(_Strict):
    """Handcrafted keyword tests (`ragwatch/checks/e2e.py`); none unless `tables` names a YAML file."""

    enabled: bool = True
    tables: str | None = None


class EvaluateConfig(_Strict):
    system: SystemUnderTest = Field(default_factory=SystemUnderTest)
    retrieval: RetrievalEvalSettings = Field(default_factory=RetrievalEvalSettings)
    e2e: E2ESettings = Field(default_factory=E2ESettings)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    # More judge models run on the same items, compared with `judges.llm` in one agreement table.
    judge_panel: list[LLMSettings] = Field(default_factory=list)
    gate: GateThresholds = Field(default_factory=GateThresholds)
    report: ReportSettings = Field(default_factory=ReportSettings)  # headline metrics, per-item caps
    promote: bool = True


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
    testset: EvalSetConfig = Field(default_factory=EvalSetConfig)
    evaluate: EvaluateConfig = Field(default_factory=EvaluateConfig)
    retrieval_only: bool = False
    reports_dir: str | None = None
    # a log of answers as the evaluation set (docs/monitoring.md): `testset` makes the set from it;
    # `evaluate` with `system.rag.kind: logged` evaluates the logged answers, another kind answers anew
    logs: LogInput | None = None

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
        "rag": system.rag.model_dump(mode="json"),
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
            files = sorted(p for p in path.rglob("*") if p.is_file())
        else:
            files = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
        for file in files:
            if any(part.startswith(".") for part in file.parts):
                continue
            digest.update(str(file).encode())
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()
