"""Evaluation-set steps: synthetic pairs from the index, imported labelled sets, the merged set."""

from __future__ import annotations

from typing import Annotated

from zenml import add_tags, get_step_context, log_metadata, step

from ragwatch.artifacts import EvalSet
from ragwatch.evalset.assemble import EvalSetConfig, import_labelled_samples, mark_retrieval_only, merge_samples
from ragwatch.evalset.export import describe_samples
from ragwatch.evalset.job import EVALSET_JOB_KEY, job_tag
from ragwatch.evalset.references import needs_reference, write_reference_answers
from ragwatch.evalset.synthetic import Testset, generate_testset
from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
from ragwatch.indexing.index import Index
from ragwatch.llm.client import LLMClient
from ragwatch_zenml.steps.secrets import export_api_keys


@step
def generate_synthetic_set(
    index: Index, config: EvalSetConfig, embedding: EmbeddingSettings
) -> Annotated[Testset, "synthetic_testset"]:
    """Question/answer pairs written by the generator LLM from sampled chunks, filtered."""
    if not config.synthetic:
        return Testset(samples=[], metadata={"synthetic": False})
    export_api_keys()
    llm = LLMClient(config.generator)
    testset = generate_testset(index, llm, get_embedder(embedding), config.testset)
    log_metadata(
        metadata={
            "testset": {
                "pairs": len(testset.samples),
                "failures": len(testset.failures),
                "removed_by_filter": {f.name: f.removed for f in testset.filters},
                "generator_model": config.generator.model,
            },
            "usage": {"testset_generator": llm.usage.model_dump()},
        }
    )
    return testset


@step
def import_labelled_sets(config: EvalSetConfig, fingerprint: dict[str, str]) -> Annotated[EvalSet, "imported_eval_set"]:
    """Labelled sets named in the config (handcrafted cases, the ZenML question set, JSONL/CSV/HF).

    `fingerprint` (`ragwatch.config.evalset_fingerprint`) holds the content hash of the files: an edited
    file changes this step's cache key although its path does not."""
    samples, report = import_labelled_samples(config)
    if config.write_reference_answers and any(needs_reference(s) for s in samples):
        export_api_keys()
        llm = LLMClient(config.generator)
        samples, failures = write_reference_answers(samples, llm)
        report["reference_answers"] = {
            "written": sum(1 for s in samples if s.metadata.get("reference_prompt_version")),
            "failed": len(failures), "failures": [f.model_dump() for f in failures[:20]],
            "generator_model": config.generator.model, "usage": llm.usage.model_dump(),
        }
    log_metadata(metadata={"imports": report})
    return EvalSet(samples=samples, metadata={"imports": report})


@step(enable_cache=False)
def assemble_eval_set(
    synthetic: Testset, imported: EvalSet, index: Index, fingerprint: dict[str, str]
) -> Annotated[EvalSet, "eval_set"]:
    """The evaluation set every evaluation names: synthetic + imported samples, de-duplicated by id.

    Never cached: a cached step makes no new version, and `evaluate` reads the latest `eval_set` of its job
    (`claim_eval_set`), which would stay the one an earlier, different config made. `fingerprint` is
    stored with the set: the config it was made from, which `evaluate` checks (the steps before this one
    stay cached)."""
    samples = merge_samples(synthetic.samples, imported.samples)
    metadata = {
        "testset_fingerprint": fingerprint["testset"],
        "testset_config_fingerprint": fingerprint["config"],
        "testset_inputs_fingerprint": fingerprint["inputs"],
        **describe_samples(samples),
        "synthetic": len(synthetic.samples),
        "imported": len(imported.samples),
        "generator_model": synthetic.metadata.get("generator_model"),
        "prompt_version": synthetic.metadata.get("prompt_version"),
        "index_fingerprint": index.fingerprint,
        "filter_removed": {f.name: f.removed for f in synthetic.filters},
        "generation_failures": len(synthetic.failures),
    }
    log_metadata(metadata={"eval_set": metadata}, artifact_name="eval_set", infer_artifact=True)
    return EvalSet(samples=samples, metadata=metadata)


@step(enable_cache=False)
def claim_eval_set(eval_set: EvalSet, job: str) -> None:
    """Tag the `eval_set` version this testset run made with its job (`ragwatch.evalset.job`), so that
    `evaluate` of the same job finds it among the sets of every job sharing the store. Never cached: every
    new version is claimed. (`eval_set` is read only as the version it is.)"""
    version = get_step_context().inputs["eval_set"][0]
    add_tags(tags=[job_tag(job)], artifact_version_id=version.id)
    log_metadata(metadata={EVALSET_JOB_KEY: job}, artifact_version_id=version.id)


@step
def retrieval_only_set(eval_set: EvalSet, which: str) -> Annotated[EvalSet, "retrieval_eval_set"]:
    """The evaluation set with the samples evaluated by retrieval alone marked (`mark_retrieval_only`):
    every sample (`which="all"`: `retrieval_only`, no LLM at all) or those without a reference answer
    (`which="retrieval_only"`: `evaluate.without_reference`). The stored `eval_set` is unchanged."""
    samples = mark_retrieval_only(eval_set.samples, which)  # type: ignore[arg-type]
    return EvalSet(samples=samples, metadata={**eval_set.metadata, "retrieval_only": which})
