"""`python run.py compare`: metric differences between evaluation runs, with intervals and verdicts."""

from __future__ import annotations

from pathlib import Path

from zenml import save_artifact
from zenml.client import Client
from zenml.types import HTMLString

from ragwatch.decision.compare import Comparison, compare_runs
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.comparison import build_comparison_page
from ragwatch.report.summary import comparison_text, verdict_line
from readback import previous_evaluation, production_baseline, run_label, run_metrics


def _metrics_of(run_name_or_id: str):
    run = Client().get_pipeline_run(run_name_or_id)
    metrics = run_metrics(run)
    if metrics is None:
        raise ValueError(f"run {run.name} has no evaluation metrics (was it an evaluate or full run?)")
    return run, metrics


def compare_command(runs: list[str], model_name: str, thresholds: GateThresholds) -> tuple[str, Path]:
    """Compare the given runs (new first), or by default the last run with the previous and production.

    Prints nothing itself; returns the text table and the path of the HTML written to reports/.
    """
    comparisons: dict[str, Comparison] = {}
    if len(runs) >= 2:
        (new_run, new), (old_run, old) = _metrics_of(runs[0]), _metrics_of(runs[1])
        comparisons[run_label(old_run)] = compare_runs(
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
        previous = previous_evaluation(before=new_run.created)
        if previous is not None:
            old_run, old = previous
            comparisons[f"previous run {run_label(old_run)}"] = compare_runs(
                new.metrics, old.metrics, thresholds=thresholds, new_label=new_run.name, old_label=old_run.name,
                new_unavailable=new.unavailable, old_unavailable=old.unavailable,
            )
        production = production_baseline(model_name, new_run.id)
        if production is not None:
            label, prod_run, prod_metrics = production
            comparisons[f"{label} ({run_label(prod_run)})"] = compare_runs(
                new.metrics, prod_metrics.metrics, thresholds=thresholds, new_label=new_run.name,
                old_label=label, new_unavailable=new.unavailable, old_unavailable=prod_metrics.unavailable,
            )
    if not comparisons:
        raise ValueError("nothing to compare with: there is one evaluation run and no production version")
    _, verdict = verdict_line(comparisons, None)
    title = f"ragwatch comparison: {run_label(new_run)}"
    text = "\n\n".join([title, verdict] + [f"== vs {label}\n{comparison_text(c)}" for label, c in comparisons.items()])
    page = build_comparison_page(comparisons, title=title)
    save_artifact(HTMLString(page), name="run_comparison")
    path = Path("reports") / "comparison.html"
    path.parent.mkdir(exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return text, path
