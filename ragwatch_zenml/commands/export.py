"""`python run.py export --otlp-endpoint URL [--run RUN]`: an evaluation run's results, read back from
the ZenML store, sent to an OTLP endpoint as OpenTelemetry GenAI evaluation results
(`ragwatch.export`; docs/monitoring.md, "Export to OpenTelemetry").

What is read: the track step's `all_metrics` (levels, intervals, per-item scores), its `comparisons`
(the verdicts and the gate) and the evaluation set it evaluated (a log's trace ids and root spans).

Example:
    >>> code, text = export_command("http://127.0.0.1:6006", run=None, project="ragwatch")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from zenml.enums import ExecutionStatus

from ragwatch.export import RunExport, export_run, trace_links
from ragwatch_zenml.readback import TRACK_STEP, evaluation_runs, run_metrics, run_named, run_system

COMPARISONS_OUTPUT, EVAL_SET_INPUT = "comparisons", "eval_set"


def _track_step(run: Any) -> Any:
    step = run.steps.get(TRACK_STEP)
    if step is None or run_metrics(run) is None:
        raise ValueError(f"run {run.name} has no evaluation results (step {TRACK_STEP}): pick an evaluate or full "
                         "run with --run (`zenml pipeline runs list` shows them)")
    return step


def find_export_run(run: str | None) -> Any:
    """The named run (name, id or prefix), or the newest completed evaluation run with results."""
    if run:
        return run_named(run)
    for candidate in evaluation_runs():
        if candidate.status == ExecutionStatus.COMPLETED and run_metrics(candidate) is not None:
            return candidate
    raise ValueError("no completed evaluation run to export: run `python run.py` (or evaluate) first, "
                     "or name a run with --run")


def run_export(run: Any) -> RunExport:
    """A run's results as `RunExport`: metrics, comparisons with the gate, links to logged traces."""
    step = _track_step(run)
    metrics = run_metrics(run)
    comparisons = step.outputs[COMPARISONS_OUTPUT][0].load() if COMPARISONS_OUTPUT in step.outputs else None
    eval_set = step.inputs[EVAL_SET_INPUT][0].load() if EVAL_SET_INPUT in step.inputs else None
    samples = eval_set.samples if eval_set is not None else []
    system = run_system(run)
    return RunExport(
        run_id=str(run.id), run_name=str(run.name), started=run.start_time or run.created, ended=run.end_time,
        model_name=system.model_name if system else None, target=system.target if system else None,
        metrics=metrics.metrics, links=trace_links(samples), logged_ids=[s.id for s in samples if s.kind == "logged"],
        **({"comparisons": comparisons} if comparisons is not None else {}))


def export_command(endpoint: str, run: str | None = None, project: str | None = None,
                   timeout_s: float = 30.0) -> tuple[int, str]:
    """(exit code, what to print): 0 when every span was delivered, 3 when the endpoint refused or was
    unreachable (the run is unchanged; try again)."""
    found = find_export_run(run)
    sent = export_run(run_export(found), endpoint, project=project, timeout_s=timeout_s)
    text = f"run {found.name}: {sent.line()}"
    if sent.failed_spans:
        return 3, (f"{text}\nexport: not delivered: is the endpoint up, and does it take OTLP/HTTP protobuf at "
                   f"{sent.endpoint}? (credentials: OTEL_EXPORTER_OTLP_HEADERS)")
    return 0, text
