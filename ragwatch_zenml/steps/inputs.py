"""The latest index and evaluation set, as steps: what `evaluate` and `testset` run on by themselves.

A pipeline that reads an earlier pipeline's artifact through `Client().get_artifact_version(...)`
in its body gets it as a lazily loaded input, which the ZenML server cannot draw (0.98:
`get_pipeline_run_dag` raises `KeyError: 'index'`, the dashboard shows no DAG). Two steps per input
instead, each a regular step output:

- `latest_*_version` (never cached) looks the latest version up when the run runs, also on a remote
  orchestrator or under a schedule, and returns its id: a string, whose content ZenML hashes;
- `load_*` (cached) loads that version: with the same id its cache key is the same, so a second run
  on the same index is served from the cache, and so is every step after it.

The evaluation set is the latest of the run's own job (`ragwatch.evalset.job`, `readback.latest_eval_set`):
several jobs share a store. The version a run used shows in the DAG (the loader's input), in the lookup
step's metadata and in the run's `input_rag_index` / `input_eval_set` metadata.
"""

from __future__ import annotations

from typing import Annotated, Any

from zenml import get_step_context, log_metadata, step
from zenml.client import Client

from ragwatch.artifacts import EvalSet
from ragwatch.indexing.index import Index
from ragwatch_zenml.readback import EVAL_SET_ARTIFACT, INDEX_ARTIFACT, latest_eval_set, latest_index
from ragwatch_zenml.steps.materializers import IndexMaterializer


def _describe(name: str, version: Any = None) -> tuple[str, dict[str, Any]]:
    """The id of `version` (default: the latest version of artifact `name`) and what the dashboard should
    say about it."""
    version = version if version is not None else Client().get_artifact_version(name)
    produced_by = version.producer_pipeline_run_id
    about = {"artifact": name, "version": str(version.version), "id": str(version.id),
             "created": f"{version.created:%Y-%m-%d %H:%M:%S}"}
    if produced_by is not None:
        about["produced_by_run"] = str(produced_by)
    return str(version.id), about


def _record(name: str, about: dict[str, Any]) -> None:
    """On the step and on the run: the run's metadata tab names the version it was evaluated on."""
    log_metadata(metadata={"input": about})
    log_metadata(metadata={f"input_{name}": about}, run_id_name_or_prefix=get_step_context().pipeline_run.id)


@step(enable_cache=False)
def latest_index_version(key: str | None = None) -> Annotated[str, "rag_index_version"]:
    """The id of the latest `rag_index` version built for `key` (`ragwatch.config.index_key`: this config's
    corpus, chunking and embedding), whatever other jobs ingested since on the same store."""
    version_id, about = _describe(INDEX_ARTIFACT, latest_index(key))
    _record(INDEX_ARTIFACT, {**about, "index_key": key} if key else about)
    return version_id


@step(enable_cache=False)
def latest_eval_set_version(job: str, testset_config: str) -> Annotated[str, "eval_set_version"]:
    """The id of the latest `eval_set` version of job `job` (`ragwatch.evalset.job`: the testset pipeline of
    the same model name and `testset:` block, whose fingerprint is `testset_config`), whatever other jobs
    made since on the same store."""
    version = latest_eval_set(job, testset_config)
    if version is None:
        raise LookupError(f"no evaluation set of job {job} in this ZenML store: run `ragwatch testset` with this "
                          "config first")
    version_id, about = _describe(EVAL_SET_ARTIFACT, version)
    _record(EVAL_SET_ARTIFACT, {**about, "job": job})
    return version_id


@step(output_materializers=IndexMaterializer)
def load_index(version_id: str) -> Annotated[Index, "index"]:
    """The index of that `rag_index` version."""
    return Client().get_artifact_version(version_id).load()


@step
def load_eval_set(version_id: str) -> Annotated[EvalSet, "input_eval_set"]:
    """The evaluation set of that `eval_set` version."""
    return Client().get_artifact_version(version_id).load()
