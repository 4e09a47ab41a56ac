"""`python run.py compare`: metric differences between evaluation runs, with intervals and verdicts.

By default the last run that evaluated its system, against that system's previous run and production.
Two runs named explicitly may be of different systems: the comparison is then labelled a comparison of
systems, not a regression (nothing is gated on it). The page goes to the config's `reports_dir` as
`comparison.html`, where `run.py` writes every report.
"""

from __future__ import annotations

from pathlib import Path

from zenml import save_artifact
from zenml.client import Client
from zenml.types import HTMLString

from ragwatch.decision.compare import Comparison, compare_runs
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.comparison import build_comparison_page
from ragwatch.report.summary import comparison_text, verdict_line
from ragwatch_zenml.commands import runner
from ragwatch_zenml.readback import previous_evaluation, production_baseline, run_label, run_metrics, run_system

SYSTEMS_LABEL = "comparison of systems, not a regression"


def _metrics_of(run_name_or_id: str):
    run = Client().get_pipeline_run(run_name_or_id)
    metrics = run_metrics(run)
    if metrics is None:
        raise ValueError(f"run {run.name} has no evaluation metrics (was it an evaluate or full run?)")
    return run, metrics


def compare_command(runs: list[str], thresholds: GateThresholds,
                    reports_dir: str | Path | None = None) -> tuple[str, Path]:
    """Compare the given runs (new first), or by default the last run with its system's previous run
    and production.

    Prints nothing itself; returns the text table and the absolute path of the HTML page, written to
    `reports_dir` (the config's; None: where `run.py` writes reports by default).
    """
    comparisons: dict[str, Comparison] = {}
    notes: list[str] = []
    if len(runs) >= 2:
        (new_run, new), (old_run, old) = _metrics_of(runs[0]), _metrics_of(runs[1])
        new_system, old_system = run_system(new_run), run_system(old_run)
        label = run_label(old_run)
        if new_system != old_system:
            label = f"{label}: {SYSTEMS_LABEL}"
            notes.append(f"{SYSTEMS_LABEL}: {new_run.name} evaluated {new_system or 'an unrecorded system'}, "
                         f"{old_run.name} evaluated {old_system or 'an unrecorded system'}")
        comparisons[label] = compare_runs(
            new.metrics, old.metrics, thresholds=thresholds, new_label=new_run.name, old_label=old_run.name,
            new_unavailable=new.unavailable, old_unavailable=old.unavailable,
        )
    else:
        if runs:
            new_run, new = _metrics_of(runs[0])
        else:
            latest = previous_evaluation()
            if latest is None:
                raise ValueError("no evaluation run yet: run `python run.py` or `python run.py evaluate` first")
            new_run, new = latest
        system = run_system(new_run)
        previous = previous_evaluation(before=new_run.created, system=system)
        if previous is not None:
            old_run, old = previous
            comparisons[f"previous run {run_label(old_run)}"] = compare_runs(
                new.metrics, old.metrics, thresholds=thresholds, new_label=new_run.name, old_label=old_run.name,
                new_unavailable=new.unavailable, old_unavailable=old.unavailable,
            )
        production = production_baseline(system, new_run.id) if system is not None else None
        if production is not None:
            label, prod_run, prod_metrics = production
            comparisons[f"{label} ({run_label(prod_run)})"] = compare_runs(
                new.metrics, prod_metrics.metrics, thresholds=thresholds, new_label=new_run.name,
                old_label=label, new_unavailable=new.unavailable, old_unavailable=prod_metrics.unavailable,
            )
    if not comparisons:
        raise ValueError(f"nothing to compare with: {new_run.name} is the first run of its system that evaluated "
                         "it, and the system has no production version")
    _, verdict = verdict_line(comparisons, None)
    title = f"ragwatch comparison: {run_label(new_run)}"
    if notes:  # the verdict's "worse" or "better" is between two systems, never a regression of one
        verdict = f"{notes[0]}. {verdict}"
    text = "\n\n".join([title, verdict] + [f"== vs {label}\n{comparison_text(c)}" for label, c in comparisons.items()])
    page = build_comparison_page(comparisons, title=title)
    save_artifact(HTMLString(page), name="run_comparison")
    path = (Path(reports_dir) if reports_dir else runner.REPORTS_DIR).absolute() / "comparison.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return text, path
