"""Evaluation-set steps: synthetic pairs from the index, imported labelled sets, the merged set."""

from __future__ import annotations

from typing import Annotated

from zenml import log_metadata, step

from ragwatch.artifacts import EvalSet
from ragwatch.evalset.assemble import EvalSetConfig, import_labelled_samples, merge_samples
from ragwatch.evalset.export import describe_samples
from ragwatch.evalset.references import needs_reference, write_reference_answers
from ragwatch.evalset.synthetic import Testset, generate_testset
from ragwatch.indexing.embeddings import EmbeddingSettings, get_embedder
from ragwatch.indexing.index import Index
from ragwatch.llm.client import LLMClient
from steps.secrets import export_api_keys


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

    Never cached: a cached step makes no new version, and `evaluate` reads the latest `eval_set`, which
    would stay the one an earlier, different config made. `fingerprint` is stored with the set: the
    config it was made from, which `evaluate` checks (the steps before this one stay cached)."""
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


@step
def retrieval_only_set(eval_set: EvalSet) -> Annotated[EvalSet, "retrieval_eval_set"]:
    """The evaluation set without reference answers (`retrieval_only`): nothing is answered or judged,
    so no LLM is called; the stored `eval_set` keeps its answers for a later full run."""
    samples = [s.model_copy(update={"reference_answer": None}) for s in eval_set.samples]
    return EvalSet(samples=samples, metadata={**eval_set.metadata, "retrieval_only": True})
