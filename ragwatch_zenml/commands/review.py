"""`python run.py review export|import|plan`: the ZenML side of the human review round trip.

Export reads a finished evaluation run's per-item table and judged metrics and writes a review
sample (CSV + JSONL, see `ragwatch.review.files`). Import validates a filled file against the run it
was exported from, merges its labels into the system's latest `human_labels` artifact and saves
the result as a new version, linked to the run's model version, with the source run and the
import's counts as metadata. The next `evaluate` run reads it (`steps.labels`).

Example:
    >>> paths = export_review(run=None, n=50)  # doctest: +SKIP
    >>> outcome = import_review("reviews/<run>-review.csv")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zenml import Model, link_artifact_to_model, log_metadata, save_artifact
from zenml.enums import ExecutionStatus

from ragwatch.llm.history import read_history
from ragwatch.results import MetricResult
from ragwatch.review import (
    Design,
    HumanLabels,
    LabelProblem,
    read_label_file,
    review_sample,
    validate_labels,
    write_review_files,
)
from ragwatch.review.plan import DEFAULT_SECONDS_PER_LABEL, Bought, bought, plan_width
from ragwatch.review.plan_cost import judge_unit_cost
from ragwatch.review.plan_format import format_bought, format_plan
from ragwatch_zenml.readback import (
    LABELS_ARTIFACT,
    evaluation_runs,
    latest_human_labels,
    run_evaluated,
    run_is_quick,
    run_named,
)

REVIEWS_DIR = Path("reviews")
JUDGE_STEP, JUDGE_OUTPUT = "judge_answers_step", "judge_metrics"
RESULTS_STEP, RESULTS_OUTPUT = "collect_results", "eval_results"
PLANS_KEY = "label_plans"  # run metadata: metric -> what `review plan` promised (`WidthPlan.promise`)


def find_run(run: str | None) -> Any:
    """The named run (name, id or prefix), or the newest evaluated run (`newest_reviewable_run`)."""
    if run:
        return run_named(run)
    return newest_reviewable_run()[0]


def newest_reviewable_run() -> tuple[Any, str]:
    """The newest completed evaluation run with judged items that evaluated its system and is not a
    `--quick` look (labels on a failed run or on a dozen items would calibrate nothing), and a line
    saying which run that is and which newer runs were passed over, and why."""
    skipped: list[str] = []
    for candidate in evaluation_runs():
        if candidate.status != ExecutionStatus.COMPLETED or JUDGE_STEP not in candidate.steps:
            continue
        why = ("could not evaluate its system" if not run_evaluated(candidate)
               else "a --quick look" if run_is_quick(candidate) else None)
        if why is None:
            passed = f"; newer runs passed over: {'; '.join(skipped)}" if skipped else ""
            return candidate, f"run {candidate.name}: the newest evaluated run{passed} (--run picks another)"
        skipped.append(f"{candidate.name} ({why})")
    found = f" (passed over: {'; '.join(skipped)})" if skipped else ""
    raise ValueError(f"no evaluated run with judged items to review{found}: run `python run.py` (or evaluate) "
                     "first, or name a run with --run")


def run_items(run: Any) -> tuple[list[dict[str, Any]], dict[str, MetricResult]]:
    """A run's per-item rows and its judged metrics."""
    if JUDGE_STEP not in run.steps or RESULTS_STEP not in run.steps:
        raise ValueError(f"run {run.name} has no judged items (steps {JUDGE_STEP}, {RESULTS_STEP}); "
                         "pick an evaluate or full run with --run")
    metrics = run.steps[JUDGE_STEP].outputs[JUDGE_OUTPUT][0].load().metrics
    frame = run.steps[RESULTS_STEP].outputs[RESULTS_OUTPUT][0].load()
    rows = [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]
    return rows, metrics


def _plain(value: Any) -> Any:
    """A cell as plain Python: None for a missing one, a list for a list column."""
    if isinstance(value, float) and value != value:  # pandas fills absent cells with NaN
        return None
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return value.tolist()  # a stored list column comes back as an array, whose truth value is an error
    return value


def model_name_of(run: Any) -> str:
    if run.model_version is None:
        raise ValueError(f"run {run.name} is not linked to a model version; labels belong to a system "
                         "under test: pick a run of `python run.py evaluate` or `full`")
    return str(run.model_version.model.name)


def export_review(run: str | None = None, n: int = 50, metrics: Sequence[str] | None = None, seed: int = 0,
                  out_dir: Path = REVIEWS_DIR, *, design: Design = "active") -> tuple[Path, Path, str]:
    """Write the review sample of `run`; returns the CSV and JSONL paths and a summary line."""
    found, picked = (find_run(run), None) if run else newest_reviewable_run()
    rows, judged = run_items(found)
    sample = review_sample(rows, judged, n=n, metric_names=metrics, seed=seed, run_id=str(found.id), design=design)
    csv_path, jsonl_path = write_review_files(sample, out_dir, f"{found.name}-review")
    summary = (f"{len(sample.rows)} items of run {found.name} for review (seed {seed}; {sample.describe()}); "
               "label columns: " + ", ".join(f"label:{m}" for m in sample.metrics))
    if picked:
        summary = f"review export: {picked}\n{summary}"
    return csv_path, jsonl_path, summary


@dataclass
class ImportOutcome:
    labels: HumanLabels
    version: str
    problems: list[LabelProblem] = field(default_factory=list)
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    bought: dict[str, Bought] = field(default_factory=dict)  # metric -> what the labels bought, against a plan


def import_review(path: str | Path, run: str | None = None) -> ImportOutcome:
    """Validate `path`, merge its labels into the system's labels and save a new `human_labels` version.

    The run comes from the file's `run_id` column (or `run`); problems are returned, not raised,
    so every valid label is kept. Nothing is saved when no row holds a valid label.
    """
    path = Path(path)
    rows = read_label_file(path)
    if not rows:
        raise ValueError(f"{path} holds no rows: fill the label columns of a review export")
    run_ids = {str(row.get("run_id") or "") for _, row in rows if "__error__" not in row} - {""}
    if run is None and len(run_ids) > 1:
        raise ValueError(f"{path} mixes items of {len(run_ids)} runs; import one export file at a time")
    source_run = find_run(run or (run_ids.pop() if run_ids else None))
    _, judged = run_items(source_run)
    labels, problems = validate_labels(rows, judged, source=path.name)
    if not labels:
        raise ValueError(f"{path}: no valid label to import ({len(problems)} problem(s)):\n"
                         + "\n".join(f"  {p}" for p in problems))
    previous, _ = latest_human_labels(model_name_of(source_run))
    merged = (previous or HumanLabels()).merge(labels, source=path.name)
    record = merged.imports[-1]
    version = save_labels(merged, source_run, file=path.name, problems=len(problems))
    promised = source_run.run_metadata.get(PLANS_KEY) or {}
    gains = {m: b for m in sorted(promised) if m in judged
             and (b := bought(judged[m], merged.for_metric(m), promised[m])) is not None}
    return ImportOutcome(labels=merged, version=version, problems=problems, added=record.added,
                         changed=record.changed, unchanged=record.unchanged, bought=gains)


def save_labels(merged: HumanLabels, source_run: Any, *, file: str, problems: int = 0, via: str = "review import"
                ) -> str:
    """Save `merged` as the next `human_labels` version of `source_run`'s system, with the counts of its
    last merge as metadata, linked to the run's model version; returns the version. `review import`
    and `review serve` both save through here."""
    model_name = model_name_of(source_run)
    record = merged.imports[-1] if merged.imports else None
    version = save_artifact(merged, name=LABELS_ARTIFACT, tags=["ragwatch", "human-labels"])
    log_metadata(metadata={"model_name": model_name, "source_run": str(source_run.name),
                           "source_run_id": str(source_run.id), "file": file, "via": via,
                           "added": record.added if record else 0, "changed": record.changed if record else 0,
                           "unchanged": record.unchanged if record else 0,
                           "problems": problems, "labels_per_metric": merged.counts()},
                 artifact_version_id=version.id)
    link_artifact_to_model(version, model=Model(name=model_name, version=str(source_run.model_version.name)))
    return str(version.version)


def format_import(outcome: ImportOutcome, path: str | Path) -> str:
    lines = [f"imported {path}: {outcome.added} new, {outcome.changed} changed, {outcome.unchanged} unchanged "
             f"label(s); human_labels version {outcome.version} now holds "
             + ", ".join(f"{m} {c}" for m, c in outcome.labels.counts().items())]
    if outcome.problems:
        lines.append(f"{len(outcome.problems)} row(s) or cell(s) not imported:")
        lines += [f"  {problem}" for problem in outcome.problems]
    lines += [format_bought(metric, gain) for metric, gain in outcome.bought.items()]
    lines.append("the next `python run.py evaluate` shows the prediction-powered estimates")
    return "\n".join(lines)


def plan_review(run: str | None, metric: str | None, width: float, *,
                seconds_per_label: float | None = None, record: bool = True) -> str:
    """`review plan`: how many labels (and judge calls) buy a `width` wide 95% interval on `metric` of
    `run` (default: the newest evaluated run), what they cost, and what the run's labels have bought.

    The promise is recorded as the run's `label_plans` metadata while the plan asks for more labels
    than the run has (`record`), so `review import` and a later plan set what was bought against it."""
    found, picked = (find_run(run), None) if run else newest_reviewable_run()
    _, judged = run_items(found)
    names = [metric] if metric else [m for m, r in judged.items() if r.info.is_judge and r.n_scored]
    if not names or names[0] not in judged:
        raise ValueError(f"no judged metric {metric!r} in run {found.name}; choose from {sorted(judged)}")
    name = names[0]
    labels = None
    if found.model_version is not None:
        stored, _ = latest_human_labels(model_name_of(found))
        labels = stored.for_metric(name) if stored is not None else None
    promises = dict(found.run_metadata.get(PLANS_KEY) or {})
    plan = plan_width(judged[name], width, labels=labels, n_population=window_population(found),
                      unit=judge_unit_cost(judged[name], read_history()),
                      seconds_per_label=DEFAULT_SECONDS_PER_LABEL if seconds_per_label is None else seconds_per_label,
                      promised=promises.get(name))
    if record and plan.chosen.labels is not None and plan.chosen.labels > plan.labels_given:
        log_metadata(metadata={PLANS_KEY: {**promises, name: plan.promise()}}, run_id_name_or_prefix=found.id)
    text = format_plan(plan, run=found.name)
    return f"review plan: {picked}\n{text}" if picked else text


def window_population(run: Any) -> int | None:
    """Answers in the log window the run's judges scored a sample of (`window.budget`); None for a run
    whose evaluation set is its population."""
    step = run.steps.get(JUDGE_STEP)
    inputs = step.inputs.get("eval_set") if step is not None else None
    artifact = inputs[0] if isinstance(inputs, list) and inputs else inputs
    made = artifact.run_metadata.get("eval_set") if artifact is not None else None
    log = made.get("log") if isinstance(made, dict) else None
    if not isinstance(log, dict) or not log.get("inclusion_prob") or not made.get("samples"):
        return None
    return round(int(made["samples"]) / float(log["inclusion_prob"]))


def calibrate_on_labels(run: str | None = None) -> str:
    """The agreement table of `run`'s judges (default: the last evaluation) with the system's labels."""
    from ragwatch.calibration.human import agreement_markdown, agreement_with_labels

    found = find_run(run)
    labels, _ = latest_human_labels(model_name_of(found))
    if labels is None:
        raise ValueError(f"no human_labels for {model_name_of(found)} yet: `python run.py review export`, "
                         "fill the label columns, then `python run.py review import FILE`")
    _, judged = run_items(found)
    return agreement_markdown(agreement_with_labels(judged, labels),
                              f"Judges of run {found.name} against your human labels")
