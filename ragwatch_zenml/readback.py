"""Reading earlier evaluations back from ZenML: the previous run, the production model version, the
latest human labels, the latest evaluation set of a job.

Not a step: the one module that reads the run history back, imported by the steps (`track_evaluation`,
`attach_human_labels`, at pipeline run time on any orchestrator) and by `orchestration/` (run.py's
printout, comparisons, review export and the review page). It imports neither, so both point down at it.

Every evaluation run stores its metrics as the `all_metrics` artifact of the `track_evaluation`
step, and logs `evaluation.run_id` on its model version, so both lookups are artifact loads. Human
labels are `human_labels` artifact versions, tagged with the model they label (`model_name` metadata).

Baselines are per system and from good runs only: a `SystemKey` (the ZenML model name and the
system's target: "builtin", "callable mod:fn", "http <url>") is logged with every run (`system`
metadata); "previous run" is the newest run of the same key whose gate was not "not_evaluated", and
"production" the run that last promoted a version for that key (`production_evaluation` metadata,
logged on the model version at promotion only).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from pydantic import ValidationError
from zenml.client import Client
from zenml.enums import ExecutionStatus, ModelStages

from ragwatch.artifacts import MetricGroup
from ragwatch.evalset.job import EVALSET_JOB_KEY, job_tag, model_of
from ragwatch.quick import QUICK_TAG
from ragwatch.rag import RagSettings
from ragwatch.review import HumanLabels

TRACK_STEP = "track_evaluation"
METRICS_OUTPUT = "all_metrics"
EVALUATION_PIPELINES = ("evaluate", "full")
LABELS_ARTIFACT = "human_labels"
EVAL_SET_ARTIFACT = "eval_set"
PRODUCTION_RECORD = "production_evaluation"


class SystemKey(NamedTuple):
    """Which system under test a run evaluated: runs of the same key share a history."""

    model_name: str
    target: str

    def __str__(self) -> str:
        return f"{self.target} (model {self.model_name})"


def run_system(run: Any) -> SystemKey | None:
    """The system a run evaluated: its `system` metadata, or (runs from before it was logged) the
    system block of its track step's config. None when neither says."""
    system = run.run_metadata.get("system")
    if isinstance(system, dict) and "target" in system and "model_name" in system:
        return SystemKey(system["model_name"], system["target"])
    step = run.steps.get(TRACK_STEP)
    config = step.config.parameters.get("config") if step is not None else None
    sut = config.get("system") if isinstance(config, dict) else None
    if not isinstance(sut, dict) or "model_name" not in sut:
        return None
    try:
        return SystemKey(sut["model_name"], RagSettings.model_validate(sut.get("rag", {})).target)
    except ValidationError:
        return None


def run_evaluated(run: Any) -> bool:
    """False for a run that could not evaluate its system (gate "not_evaluated"): nobody's baseline."""
    gate = run.run_metadata.get("gate")
    return not (isinstance(gate, dict) and gate.get("status") == "not_evaluated")


def run_is_quick(run: Any) -> bool:
    """A `--quick` look (tagged `QUICK_TAG`): it decides nothing, so it is never a baseline."""
    return any(tag.name == QUICK_TAG for tag in run.tags or [])


def run_metrics(run: Any) -> MetricGroup | None:
    """The `all_metrics` artifact of a pipeline run, or None when the run has none."""
    step = run.steps.get(TRACK_STEP)
    if step is None or METRICS_OUTPUT not in step.outputs:
        return None
    return step.outputs[METRICS_OUTPUT][0].load()


def evaluation_runs(limit: int = 50) -> list[Any]:
    """Completed evaluation runs (evaluate and full pipelines), newest first."""
    client = Client()
    runs: list[Any] = []
    for name in EVALUATION_PIPELINES:
        try:
            pipeline = client.get_pipeline(name)
        except KeyError:
            continue
        runs.extend(
            client.list_pipeline_runs(
                pipeline_id=pipeline.id, sort_by="desc:created", size=limit, hydrate=True
            ).items
        )
    runs = [r for r in runs if r.status in (ExecutionStatus.COMPLETED, ExecutionStatus.RUNNING)]
    return sorted(runs, key=lambda r: r.created, reverse=True)


def previous_evaluation(
    exclude_run_id: UUID | None = None, before: datetime | None = None, system: SystemKey | None = None
) -> tuple[Any, MetricGroup] | None:
    """The newest completed evaluation run that evaluated its system and stored metrics, other than
    `exclude_run_id`, created before `before` and of `system` when given. Metrics are loaded only for
    the run returned (and for newer runs that turn out to have none)."""
    for run in evaluation_runs():
        if run.id == exclude_run_id or run.status != ExecutionStatus.COMPLETED or not run_evaluated(run):
            continue
        if run_is_quick(run):  # a quick look is never a baseline
            continue
        if before is not None and run.created >= before:
            continue
        if system is not None and run_system(run) != system:
            continue
        metrics = run_metrics(run)
        if metrics is not None:
            return run, metrics
    return None


def production_version(model_name: str) -> Any | None:
    try:
        return Client().get_model_version(model_name, ModelStages.PRODUCTION)
    except KeyError:
        return None


def _run_with_metrics(run_id: Any) -> tuple[Any, MetricGroup] | None:
    try:
        run = Client().get_pipeline_run(run_id)
    except KeyError:
        return None
    metrics = run_metrics(run)
    return (run, metrics) if metrics is not None else None


def version_evaluation(model_version: Any) -> tuple[Any, MetricGroup] | None:
    """The last evaluation run logged on a model version, with its metrics."""
    evaluation = model_version.run_metadata.get("evaluation")
    if not isinstance(evaluation, dict) or "run_id" not in evaluation:
        return None
    return _run_with_metrics(evaluation["run_id"])


def production_record(system: SystemKey) -> tuple[Any, dict[str, Any]] | None:
    """(model version, its `production_evaluation` record) last promoted for `system`.

    Systems that share a ZenML model each keep their own production: the record names the target
    and when it was promoted. A store from before these records: the production-stage version, when
    its last evaluation was of the same system.
    """
    versions = Client().list_model_versions(model_name_or_id=system.model_name, sort_by="desc:created",
                                            size=50, hydrate=True).items
    records = [(v, r) for v in versions if isinstance(r := v.run_metadata.get(PRODUCTION_RECORD), dict)
               and r.get("target") == system.target and "run_id" in r]
    if records:
        return max(records, key=lambda vr: str(vr[1].get("promoted_at", "")))
    version = production_version(system.model_name)
    found = version_evaluation(version) if version is not None else None
    if found is None or run_system(found[0]) != system or not run_evaluated(found[0]):
        return None
    return version, {"run_id": str(found[0].id), "target": system.target}


def production_evaluation(system: SystemKey) -> tuple[Any, Any, MetricGroup] | None:
    """(model version, the run that promoted it, that run's metrics) of `system`'s production, or None."""
    found = production_record(system)
    if found is None:
        return None
    version, record = found
    evaluation = _run_with_metrics(record["run_id"])
    return (version, *evaluation) if evaluation else None


def production_baseline(system: SystemKey, new_run_id: UUID) -> tuple[str, Any, MetricGroup] | None:
    """(label, run, metrics) of the production evaluation to compare run `new_run_id` with.

    Normally `system`'s production evaluation. When that evaluation IS the new run (the run that was
    just promoted), the baseline it replaced, kept in its record (`baseline_run_id`), so that "vs
    production" never compares a run with itself. None: no production to compare with.
    """
    found = production_record(system)
    if found is None:
        return None
    version, record = found
    if record["run_id"] != str(new_run_id):
        evaluation = _run_with_metrics(record["run_id"])
        return (f"production {version.name}", *evaluation) if evaluation else None
    if "baseline_run_id" not in record:
        return None  # the first production version: nothing was in production before it
    evaluation = _run_with_metrics(record["baseline_run_id"])
    if evaluation is None or evaluation[0].id == new_run_id:
        return None
    return f"previous production {record.get('baseline_version', '?')}", *evaluation


def run_label(run: Any) -> str:
    return f"{run.name} ({run.created:%Y-%m-%d %H:%M})"


def step_timings(run_id: Any) -> dict[str, float]:
    """Seconds per finished step of a run, in run order (cached steps take about no time)."""
    steps = Client().get_pipeline_run(run_id).steps.values()
    done = [s for s in steps if s.start_time is not None and s.end_time is not None]
    return {s.name: (s.end_time - s.start_time).total_seconds() for s in sorted(done, key=lambda s: s.start_time)}


def latest_human_labels(model_name: str) -> tuple[HumanLabels | None, Any]:
    """The newest `human_labels` artifact version imported for `model_name`, and that version."""
    versions = Client().list_artifact_versions(name=LABELS_ARTIFACT, sort_by="desc:created", size=50,
                                               hydrate=True)
    for version in versions.items:
        if version.run_metadata.get("model_name") == model_name:
            return version.load(), version
    return None, None


def latest_eval_set(job: str, testset_config: str) -> Any | None:
    """The newest `eval_set` version job `job` made (`ragwatch.evalset.job`: tagged `job_tag(job)`), or None.

    A store from before sets were tagged: the newest untagged version whose `testset:` block fingerprint is
    `testset_config` (the `config` part of `evalset_fingerprint`), the set this job's block made.
    """
    client = Client()
    tagged = client.list_artifact_versions(name=EVAL_SET_ARTIFACT, tags=[f"equals:{job_tag(job)}"],
                                           sort_by="desc:created", size=1, hydrate=True).items
    if tagged:
        return tagged[0]
    for version in _recent_eval_sets():
        made = version.run_metadata.get("eval_set")
        if EVALSET_JOB_KEY not in version.run_metadata and isinstance(made, dict) \
                and made.get("testset_config_fingerprint") == testset_config:
            return version
    return None


def latest_eval_set_of_model(model_name: str) -> Any | None:
    """The newest `eval_set` version made by any job of `model_name` (another `testset:` block), or None."""
    for version in _recent_eval_sets():
        job = version.run_metadata.get(EVALSET_JOB_KEY)
        if isinstance(job, str) and model_of(job) == model_name:
            return version
    return None


def _recent_eval_sets(size: int = 50) -> list[Any]:
    return Client().list_artifact_versions(name=EVAL_SET_ARTIFACT, sort_by="desc:created", size=size,
                                           hydrate=True).items


INDEX_ARTIFACT = "rag_index"
INDEX_TAG_PREFIX = "index-of:"


def index_tag(key: str) -> str:
    """The ZenML tag of the `rag_index` versions built for `ragwatch.config.index_key` `key`."""
    return f"{INDEX_TAG_PREFIX}{key}"


def latest_index(key: str | None = None) -> Any:
    """The newest `rag_index` version built for `key` (a config's corpus, chunking and embedding); when none
    is tagged with it (a store from before indexes were tagged, or a corpus not ingested yet), the newest
    of all. Raises KeyError when the store has no index."""
    client = Client()
    if key is not None:
        tagged = client.list_artifact_versions(name=INDEX_ARTIFACT, tags=[f"equals:{index_tag(key)}"],
                                               sort_by="desc:created", size=1, hydrate=True).items
        if tagged:
            return tagged[0]
    return client.get_artifact_version(INDEX_ARTIFACT)


def run_named(run: str) -> Any:
    """The pipeline run named `run` (name, id or prefix); ValueError, saying what to pass, when none or
    several match."""
    try:
        return Client().get_pipeline_run(run)
    except KeyError as exc:  # unknown, or a prefix of several runs: bad input, not a crash
        detail = str(exc.args[0]) if exc.args else ""
        raise ValueError(f"no single pipeline run matches {run!r}: pass a run name or id (`zenml pipeline "
                         f"runs list` shows them){'; ' + detail if 'found' in detail else ''}") from None
