"""index -> synthetic pairs + imported labelled sets -> eval_set, claimed by its job."""

from __future__ import annotations

from zenml import pipeline

from ragwatch.config import FullConfig, index_key
from ragwatch.evalset.job import evalset_job
from ragwatch_zenml.steps.evalset import assemble_eval_set, claim_eval_set, generate_synthetic_set, import_labelled_sets
from ragwatch_zenml.steps.inputs import latest_index_version, load_index
from ragwatch_zenml.steps.logged import logged_eval_set_step


@pipeline(enable_cache=True)
def testset(config: FullConfig, fingerprint: dict[str, str], index=None):
    """`index` defaults to the latest `rag_index` artifact (from the ingest pipeline), looked up when
    the run runs and loaded by a step (so the dashboard draws it). `fingerprint`:
    `ragwatch.config.evalset_fingerprint(config)` (the config and the content of its input files).
    With `config.logs` the set is the log's questions and answers (no index needed). The set is tagged
    with its job (`ragwatch.evalset.job`: model name and `testset:` block), whose `evaluate` reads it."""
    job = evalset_job(config.evaluate.system.model_name, fingerprint)
    if config.logs is not None:
        eval_set = logged_eval_set_step(config.logs, fingerprint)
    else:
        if index is None:
            index = load_index(latest_index_version(index_key(config.ingest)))
        synthetic = generate_synthetic_set(index, config.testset, config.ingest.embedding)
        imported = import_labelled_sets(config.testset, fingerprint)
        eval_set = assemble_eval_set(synthetic, imported, index, fingerprint)
    claim_eval_set(eval_set, job)
    return eval_set
