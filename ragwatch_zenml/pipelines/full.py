"""ingest -> testset -> evaluate, in one run."""

from __future__ import annotations

from zenml import pipeline

from ragwatch.checks.e2e import E2ETables
from ragwatch.config import FullConfig
from ragwatch_zenml.pipelines.evaluate import evaluate
from ragwatch_zenml.pipelines.ingest import ingest
from ragwatch_zenml.pipelines.testset import testset


@pipeline(enable_cache=True)
def full(config: FullConfig, e2e_tables: E2ETables, corpus_fingerprint: str, system_fingerprint: str,
         testset_fingerprint: dict[str, str]):
    index = ingest(config.ingest, corpus_fingerprint)
    eval_set = testset(config, testset_fingerprint, index=index)
    evaluate(config, e2e_tables, system_fingerprint, index=index, eval_set=eval_set)
