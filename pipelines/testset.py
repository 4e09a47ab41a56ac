"""index -> synthetic pairs + imported labelled sets -> eval_set."""

from __future__ import annotations

from zenml import pipeline

from ragwatch.config import FullConfig
from steps.evalset import assemble_eval_set, generate_synthetic_set, import_labelled_sets


@pipeline(enable_cache=True)
def testset(config: FullConfig, index=None):
    """`index` defaults to the latest `rag_index` artifact (from the ingest pipeline)."""
    if index is None:
        from zenml.client import Client

        index = Client().get_artifact_version("rag_index")
    synthetic = generate_synthetic_set(index, config.testset, config.ingest.embedding)
    imported = import_labelled_sets(config.testset)
    return assemble_eval_set(synthetic, imported, index)
