"""Run a pipeline from a config file and print what it found.

Example:
    >>> outcome = run_pipeline("full", "configs/full.yaml")  # doctest: +SKIP
    >>> outcome.promoted  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zenml import Model

from ragwatch.artifacts import MetricGroup
from ragwatch.checks.e2e import E2ETables, load_e2e_tables
from ragwatch.config import FullConfig, corpus_fingerprint, evalset_fingerprint, index_key, system_fingerprint
from ragwatch.decision.gate import GateDecision
from ragwatch.estimate import LatestInputs
from ragwatch.evalset.job import evalset_job
from ragwatch.preflight import preflight
from ragwatch.rag import SystemCalls
from ragwatch.report.summary import ReportSettings, gate_label, metrics_text, summary_text
from ragwatch.report.verdicts import reason_lines
from ragwatch_zenml.commands.dashboard import run_location
from ragwatch_zenml.env import BUNDLED
from ragwatch_zenml.readback import METRICS_OUTPUT, TRACK_STEP, step_timings

PIPELINES = ("ingest", "testset", "evaluate", "full")
DEFAULT_CONFIGS = {name: str(BUNDLED / "configs" / f"{name}.yaml") for name in PIPELINES}
REPORTS_DIR = Path("reports")  # under the current directory unless the config sets `reports_dir`
# ZenML's "Step `x` has started." / "has finished in" lines, kept when the rest of its log is WARN
logging.getLogger("zenml.orchestrators.step_launcher").setLevel(logging.INFO)


class MissingInputError(ValueError):
    """A pipeline needs an artifact an earlier pipeline makes (the index, the evaluation set)."""


@dataclass
class RunOutcome:
    pipeline: str
    run: Any
    seconds: float
    gate: GateDecision | None = None
    metrics: MetricGroup | None = None
    report_path: Path | None = None
    notes: list[str] = field(default_factory=list)
    summary: str | None = None  # better or worse than the last run and production (evaluation_summary)
    reports_dir: Path = REPORTS_DIR
    system_calls: SystemCalls | None = None  # how the system under test was called (None: not asked)

    @property
    def not_evaluated(self) -> bool:
        """The run could not evaluate the system (unreachable, budget, judges): exit code 3."""
        return self.gate is not None and not self.gate.evaluated

    @property
    def regressed(self) -> bool:
        return self.gate is not None and self.gate.refused

    def cause_line(self) -> str | None:
        """"could not evaluate: <cause>; <what to do>", or None when the run evaluated."""
        if self.gate is None or self.gate.evaluated:
            return None
        return "could not evaluate: " + "; ".join(reason_lines(self.gate)[:2])


def model_for(config: FullConfig) -> tuple[Model, str]:
    """The ZenML model version of the system under test: one version per configuration fingerprint."""
    fingerprint = system_fingerprint(config.evaluate.system, config.ingest.embedding, config.ingest.chunking)
    model = Model(
        name=config.evaluate.system.model_name,
        version=f"cfg-{fingerprint[:12]}",
        description="The RAG system under test; one version per configuration fingerprint.",
        tags=["ragwatch"],
    )
    return model, fingerprint


def run_pipeline(
    name: str,
    config_path: str | Path,
    *,
    enable_cache: bool = True,
    schedule: Any = None,
    zenml_config: str | Path | None = None,
    config: FullConfig | None = None,
    tags: list[str] | None = None,
) -> RunOutcome:
    """Validate the config and its input files, run pipeline `name` on the active stack, and
    collect its outputs.

    With a ZenML `schedule`, the pipeline is handed to the orchestrator's scheduler instead.
    `zenml_config` is a ZenML run configuration (docker settings, orchestrator settings, ...).
    `config`: the already checked configuration of `config_path` (`ragwatch.preflight`), or a
    cut-down one (`ragwatch.quick`); `tags`: the run's ZenML tags.
    """
    from ragwatch_zenml.pipelines.evaluate import evaluate
    from ragwatch_zenml.pipelines.full import full
    from ragwatch_zenml.pipelines.ingest import ingest
    from ragwatch_zenml.pipelines.testset import testset

    if name not in PIPELINES:
        raise ValueError(f"unknown pipeline {name!r}; choose one of {', '.join(PIPELINES)}")
    config = config or preflight(name, config_path)
    if schedule is None:
        require_inputs(name, config_path, config)
        if name == "evaluate":
            require_matching_eval_set(config, config_path)
    started = time.perf_counter()
    options: dict[str, Any] = {"enable_cache": enable_cache}
    if schedule is not None:
        options["schedule"] = schedule
    if zenml_config is not None:
        options["config_path"] = str(zenml_config)
    if tags:
        options["tags"] = tags
    if name == "ingest":
        run = ingest.with_options(**options)(config.ingest, corpus_fingerprint(config.ingest.corpus))
    elif name == "testset":
        run = testset.with_options(**options)(config, evalset_fingerprint(config))
    else:
        model, fingerprint = model_for(config)
        tables = load_e2e_tables(config.evaluate.e2e.tables) if config.evaluate.e2e.tables else E2ETables()
        options["model"] = model
        if name == "evaluate":
            run = evaluate.with_options(**options)(config, tables, fingerprint)
        else:
            corpus = corpus_fingerprint(config.ingest.corpus)
            run = full.with_options(**options)(config, tables, corpus, fingerprint, evalset_fingerprint(config))
    outcome = RunOutcome(pipeline=name, run=run, seconds=time.perf_counter() - started,
                         reports_dir=Path(config.reports_dir) if config.reports_dir else REPORTS_DIR)
    if schedule is None and name in ("ingest", "full"):
        collect_ingest(outcome)
    if schedule is None and name in ("testset", "full"):
        collect_testset(outcome)
    if schedule is None and name in ("evaluate", "full"):
        collect_evaluation(outcome)
    return outcome


def latest_inputs(config: FullConfig | None = None) -> LatestInputs | None:
    """The store's latest index and evaluation set (of `config`'s job when given: `config_job`), so an
    estimate asks with the real prompts and counts cached answers and judge calls as free; None when the
    store has no index (or cannot be read)."""
    from zenml.client import Client

    from ragwatch_zenml.readback import latest_eval_set, latest_index

    try:
        index = latest_index(index_key(config.ingest) if config is not None else None).load()
    except Exception:  # no index yet, or one this version cannot load: the estimate uses stand-ins
        return None
    try:
        if config is None:
            samples = Client().get_artifact_version("eval_set").load().samples
        else:
            job, fingerprint = config_job(config)
            version = latest_eval_set(job, fingerprint["config"])
            samples = version.load().samples if version is not None else None
    except Exception:
        samples = None
    return LatestInputs(index=index, samples=samples)


def config_job(config: FullConfig) -> tuple[str, dict[str, str]]:
    """The job of `config` (`ragwatch.evalset.job`: its model name and `testset:` block) and its
    `evalset_fingerprint`: the evaluation set `evaluate` runs on is the newest of this job."""
    fingerprint = evalset_fingerprint(config)
    return evalset_job(config.evaluate.system.model_name, fingerprint), fingerprint


def require_inputs(name: str, config_path: str | Path, config: FullConfig | None = None) -> None:
    """`testset` needs an index and `evaluate` an index and an evaluation set of its own job: say which
    command makes a missing one, instead of a ZenML lookup error from inside the pipeline."""
    from zenml.client import Client

    from ragwatch_zenml.readback import latest_eval_set, latest_eval_set_of_model

    needs = {"testset": ["ingest"], "evaluate": ["ingest", "testset"]}
    if config is not None and config.logs is not None:  # a log is the set; its own system needs no index
        needs["testset"] = []
        if config.evaluate.system.rag.kind != "builtin":
            needs["evaluate"] = ["testset"]
    missing, whose = [], ""
    for command in needs.get(name, []):
        if command == "ingest":
            try:
                Client().get_artifact_version("rag_index")
            except (KeyError, RuntimeError):
                missing.append(command)
        elif config is not None:
            job, fingerprint = config_job(config)
            # a set of the same model from another `testset:` block: require_matching_eval_set says so
            if latest_eval_set(job, fingerprint["config"]) is None \
                    and latest_eval_set_of_model(config.evaluate.system.model_name) is None:
                missing.append(command)
                whose = f" (no evaluation set of this config's job, {job})"
    if missing:
        store = os.environ.get("ZENML_CONFIG_PATH", "the ZenML store")
        steps = " then ".join(f"`ragwatch {c} --config {config_path}`" for c in missing)
        raise MissingInputError(
            f"{name} needs what {' and '.join(missing)} makes, and this ZenML store ({store}) has none yet{whose}: "
            f"run {steps} first, or `ragwatch full --config {config_path}` for everything in one run"
        )


class StaleEvalSetError(MissingInputError):
    """The job's latest evaluation set was made from other input files (or before sets recorded them)."""


def require_matching_eval_set(config: FullConfig, config_path: str | Path) -> None:
    """`evaluate` runs on the newest `eval_set` of its job (`config_job`): stop when that set was not made
    from the content of the input files this config names (`evalset_fingerprint`), instead of evaluating
    on another set. Sets of other jobs on the same store are not compared."""
    from ragwatch_zenml.readback import latest_eval_set, latest_eval_set_of_model

    job, expected = config_job(config)
    version = latest_eval_set(job, expected["config"])
    whose = f"of this job ({job}: eval_set version {version.version if version is not None else '?'})"
    if version is None:  # none of this job: the same model's set from another `testset:` block, if any
        model = config.evaluate.system.model_name
        version = latest_eval_set_of_model(model)
        whose = f"of model {model} (eval_set version {version.version if version is not None else '?'})"
    if version is None:
        raise MissingInputError(f"this ZenML store has no evaluation set of this config's job ({job}): run "
                                f"`python run.py testset --config {config_path}` first")
    made = version.run_metadata.get("eval_set", {})
    if isinstance(made, dict) and made.get("testset_fingerprint") == expected["testset"]:
        return
    if not isinstance(made, dict) or "testset_fingerprint" not in made:
        why = "it was made before evaluation sets recorded their config"
    elif made.get("testset_config_fingerprint") != expected["config"]:
        why = "its `testset:` block differs from this config's"
    else:
        why = "the content of the labelled files this config imports changed since (or of its log)"
    raise StaleEvalSetError(
        f"the latest evaluation set {whose} was not made from "
        f"{config_path}: {why}. Run `python run.py testset --config {config_path}` first, then evaluate again "
        f"(or `python run.py full --config {config_path}` for everything in one run)"
    )


def collect_testset(outcome: RunOutcome) -> None:
    """What the evaluation set holds and what was dropped from it, and why (`evalset_report`)."""
    from zenml.client import Client

    from ragwatch.evalset.report import evalset_report

    steps = Client().get_pipeline_run(outcome.run.id).steps
    if "import_labelled_sets" not in steps:  # a log is the set: what reading it found is its step's metadata
        return
    imported = steps["import_labelled_sets"].outputs["imported_eval_set"][0].load()
    synthetic = steps["generate_synthetic_set"].outputs["synthetic_testset"][0].load()
    eval_set = steps["assemble_eval_set"].outputs["eval_set"][0].load()
    outcome.notes += evalset_report(eval_set.samples, imported.metadata.get("imports", {}),
                                    synthetic if synthetic.metadata.get("synthetic", True) else None)


def collect_ingest(outcome: RunOutcome) -> None:
    """What ingestion loaded, chunked and skipped (and why)."""
    from zenml.client import Client

    run = Client().get_pipeline_run(outcome.run.id)
    loaded = run.steps["load_corpus"].run_metadata.get("ingest", {})
    chunks = run.steps["build_index"].run_metadata.get("index", {}).get("chunks", "?")
    report = run.steps["load_corpus"].outputs["ingestion_report"][0].load()
    outcome.notes.append(
        f"ingest: {loaded.get('documents', '?')} documents, {loaded.get('pages', '?')} pages, "
        f"{chunks} chunks, {len(report.skipped)} skipped files"
    )
    outcome.notes += [f"  skipped {item.path}: {item.reason}" for item in report.skipped]
    outcome.notes += [f"  warning {item.path}: {item.message}" for item in report.warnings]
    chunking = run.steps["chunk_corpus"].run_metadata.get("ingest", {})
    outcome.notes += [f"  warning {text}" for text in chunking.get("chunk_warnings", [])]
    if top := chunking.get("chunks_per_document_top10"):
        outcome.notes.append("  chunks per document (top 10): " + ", ".join(f"{src} {n}" for src, n in top))


def collect_evaluation(outcome: RunOutcome) -> None:
    """Load the gate, the metrics and the report of a finished evaluation run."""
    from zenml.client import Client

    run = Client().get_pipeline_run(outcome.run.id)
    track = run.steps["track_evaluation"]
    outcome.gate = track.outputs["gate"][0].load()
    outcome.metrics = track.outputs["all_metrics"][0].load()
    outcome.summary = evaluation_summary(run)
    calls = run.run_metadata.get("system_calls")
    if isinstance(calls, dict) and calls.get("questions"):
        outcome.system_calls = SystemCalls.model_validate(calls)
    # e.g. most labels match nothing in the index: said once, not once per retrieval mode and measure
    warnings = dict.fromkeys(w for m in outcome.metrics.metrics.values() for w in m.details.get("warnings", []))
    outcome.notes += [f"warning: {w}" for w in warnings]
    report = run.steps["build_report_step"].outputs["report"][0].load()
    reports = outcome.reports_dir
    reports.mkdir(parents=True, exist_ok=True)
    outcome.report_path = (reports / f"{run.name}.html").absolute()
    outcome.report_path.write_text(str(report), encoding="utf-8")
    (reports / "latest.html").write_text(str(report), encoding="utf-8")


def evaluation_summary(run: Any) -> str:
    """The run's one-minute summary as text (what `run.py` prints first): the verdict line vs the
    previous run and production, the headline metrics with deltas, the gate's reasons, warnings."""
    track = run.steps[TRACK_STEP]
    metrics = track.outputs[METRICS_OUTPUT][0].load()
    comparisons = track.outputs["comparisons"][0].load()
    gate = track.outputs["gate"][0].load()
    named = {label: cmp for label, cmp in (("previous run", comparisons.previous),
                                           ("production", comparisons.production)) if cmp is not None}
    # the headline the run was configured with (a parameter of its report step)
    config = run.steps["build_report_step"].config.parameters.get("config") if "build_report_step" in run.steps \
        else None
    report = ReportSettings.model_validate(config.get("report", {})) if isinstance(config, dict) else ReportSettings()
    timings = step_timings(run.id)
    slowest = sorted(timings.items(), key=lambda kv: -kv[1])[:6]
    return (summary_text(metrics.metrics, named, gate, report.headline, metrics.unavailable)
            + "\n\nslowest steps: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in slowest))


def format_outcome(outcome: RunOutcome) -> str:
    """The closing summary printed by run.py."""
    lines = [f"pipeline {outcome.pipeline}: run {outcome.run.name} finished in {outcome.seconds:.0f} s"]
    cause = outcome.cause_line()
    if cause:
        lines += ["", cause]
    if outcome.system_calls is not None:
        lines += ["", f"system under test: {outcome.system_calls.line()}"]
    if outcome.summary:
        lines += ["", outcome.summary, ""]
    lines += outcome.notes
    if outcome.metrics is not None:
        lines += ["", metrics_text(outcome.metrics.metrics, outcome.metrics.unavailable)]
    if outcome.gate is not None:
        lines += ["", f"gate: {gate_label(outcome.gate)}"] + [f"  - {reason}" for reason in reason_lines(outcome.gate)]
    if outcome.report_path is not None:
        lines += ["", f"report: {outcome.report_path}"]
        lines += run_location(outcome.pipeline, outcome.run.name, outcome.run.id, [
            ("report", "build_report_step", "the report, verdict first"),
            ("comparisons", "track_evaluation", "vs previous and production")], ["verdict", "gated_metrics"])
    return "\n".join(lines)


