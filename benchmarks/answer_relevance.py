"""Does the answer relevance judge agree with careful readers? Measured on labels of its kind.

Runs the `answer_relevance` judge as `run.py evaluate` builds it from `--config` (the default judge
model, logprobs as configured; through the LLM cache, so a rerun is free) on the reference labels of
`data/judge_dev/answer_relevance/labels.jsonl` (answers of several systems under test, two careful
readings; items where the readers differ on `relevant` are left out), and reports:

- ROC AUC of the judge's item score against the readers' `relevant` (ties count half);
- at the judge's own threshold (`MetricInfo.threshold`: an item passes at or above it): balanced
  accuracy, Cohen's kappa and the share called relevant beside the readers' share;
- at a cut-off chosen on the labels held out by system (the cut-off of best balanced accuracy on the
  other systems' items, applied to the one left out, pooled): what a fitted cut-off would give an unseen
  system;
- the mean item score on answers the readers call relevant and on those they do not (on its scale),
  and the Spearman correlation with the readers' mean grade;
- each of these per system, with 95% bootstrap intervals over items; seconds per item.

    python benchmarks/answer_relevance.py --out benchmarks/results/answer_relevance.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.statistics.agreement import balanced_accuracy, cohen_kappa  # noqa: E402
from ragwatch.statistics.cutoff import best_threshold  # noqa: E402

LABELS = ROOT / "data" / "judge_dev" / "answer_relevance" / "labels.jsonl"
METRIC = "answer_relevance"
RESAMPLES = 1000


def load_labels(path: Path) -> list[dict[str, Any]]:
    """The labelled answers whose readers agree on `relevant` (a null label is a disagreement: left out)."""
    if not path.is_file():
        sys.exit(f"{path}: not found (pass --labels with the answer relevance labels JSONL)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    missing = [k for k in ("answer_id", "system", "question", "answer", "relevant") if rows and k not in rows[0]]
    if missing:
        sys.exit(f"{path}: rows lack {missing}; each row needs answer_id, system, question, answer, relevant")
    return [r for r in rows if r["relevant"] is not None]


@dataclass(frozen=True)
class Scored:
    """The judge's item scores on the labelled answers (None where the item failed), and its seconds."""

    scores: list[float | None]
    details: list[dict[str, Any]]
    threshold: float | None
    scale: tuple[float, float] | None
    prompt_version: str | None
    model: str | None
    seconds: float
    errors: list[str]


def run_judge(rows: Sequence[dict[str, Any]], config: Path, options: dict[str, Any]) -> Scored:
    """The configured answer relevance judge on `rows` (question and answer; it sees no contexts)."""
    from ragwatch.config import FullConfig
    from ragwatch.config_loader import load_config
    from ragwatch.judges.config import build_judges
    from ragwatch.llm.client import LLMClient
    from ragwatch.types import EvalSample, RagAnswer

    judges = load_config(config, FullConfig).evaluate.judges
    settings = judges.llm.model_copy(update={"cache": True, "timeout_s": 1800})
    update: dict[str, Any] = {"enabled": [METRIC], "llm": settings}
    if options:
        update[METRIC] = options
    (judge,) = build_judges(judges.model_copy(update=update), LLMClient(settings))
    samples = [EvalSample(id=r["answer_id"], question=r["question"]) for r in rows]
    answers = [RagAnswer(question=r["question"], answer=r["answer"]) for r in rows]
    start = time.perf_counter()
    result = judge.evaluate(samples, answers)
    seconds = time.perf_counter() - start
    info = judge.metrics[METRIC]
    return Scored(scores=[i.score if i.ok else None for i in result.items], details=[i.details for i in result.items],
                  threshold=info.threshold, scale=info.scale, prompt_version=info.prompt_version,
                  model=settings.model, seconds=seconds,
                  errors=[f"{r['answer_id']}: {i.error}" for r, i in zip(rows, result.items, strict=True) if not i.ok])


def auc(y: np.ndarray, s: np.ndarray) -> float:
    """ROC AUC: the share of (relevant, not relevant) pairs the scores rank right, ties half; NaN with one class."""
    pos, neg = s[y], s[~y]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    return float(((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean())


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = (np.argsort(np.argsort(x, kind="stable"), kind="stable").astype(float) for x in (a, b))
    # average ranks of ties
    for r, x in ((ra, a), (rb, b)):
        for v in np.unique(x):
            r[x == v] = r[x == v].mean()
    return float(np.corrcoef(ra, rb)[0, 1]) if ra.std() > 0 and rb.std() > 0 else float("nan")


def interval(stat: Any, *arrays: np.ndarray, resamples: int, seed: int = 0) -> tuple[float, float, float]:
    """(point, 2.5%, 97.5%) of `stat(*arrays)`, a percentile bootstrap over items; undefined replicates skipped."""
    point = stat(*arrays)
    rng = np.random.default_rng(seed)
    n = len(arrays[0])
    reps = np.array([stat(*(a[idx] for a in arrays)) for idx in rng.integers(0, n, size=(resamples, n))])
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return point, point, point
    low, high = np.quantile(reps, [0.025, 0.975])
    return float(point), float(low), float(high)


def _bal(y: np.ndarray, v: np.ndarray) -> float:
    return balanced_accuracy(list(y), list(v)) if 0 < y.sum() < len(y) else float("nan")


def _kappa(y: np.ndarray, v: np.ndarray) -> float:
    return cohen_kappa(list(y), list(v)) if len(set(y)) > 1 or len(set(v)) > 1 else float("nan")


def best_cutoff(s: np.ndarray, y: np.ndarray, scale: tuple[float, float] | None) -> float:
    """The cut-off of best balanced accuracy on the score's own scale (`best_threshold` works on 0-1)."""
    lo, hi = scale or (float(min(s.min(), 0.0)), float(max(s.max(), 1.0)))
    cut, _ = best_threshold(list((s - lo) / (hi - lo)), list(y))
    return lo + cut * (hi - lo)


def held_out_cutoffs(systems: np.ndarray, y: np.ndarray, s: np.ndarray,
                     scale: tuple[float, float] | None = None) -> tuple[np.ndarray, dict[str, float]]:
    """Each item's verdict at the cut-off of best balanced accuracy on the other systems' items."""
    out, cuts = np.zeros(len(y), dtype=bool), {}
    for system in sorted(set(systems)):
        test, train = systems == system, systems != system
        if len(set(y[train])) < 2:
            raise ValueError(f"the systems other than {system} hold one class only: a cut-off needs both")
        cut = best_cutoff(s[train], y[train], scale)
        cuts[system] = cut
        out[test] = s[test] >= cut
    return out, cuts


def fmt(t: tuple[float, float, float], digits: int = 2) -> str:
    return f"{t[0]:.{digits}f} [{t[1]:.{digits}f}, {t[2]:.{digits}f}]"


def table(rows: Sequence[dict[str, Any]], run: Scored, resamples: int) -> list[str]:
    keep = [k for k, s in enumerate(run.scores) if s is not None]
    y = np.array([bool(rows[k]["relevant"]) for k in keep])
    s = np.array([float(run.scores[k]) for k in keep])  # type: ignore[arg-type]
    grade = np.array([(rows[k]["grade_reader_1"] + rows[k]["grade_reader_2"]) / 2 for k in keep], dtype=float)
    systems = np.array([rows[k]["system"] for k in keep])
    try:
        held, cuts = held_out_cutoffs(systems, y, s, run.scale)
    except ValueError as exc:  # a small sample: said, and the other columns still measured
        held, cuts, why = None, {}, str(exc)
    at = s >= run.threshold if run.threshold is not None else None
    lines = ["| items | n (relevant) | ROC AUC [95%] | mean score: relevant / not | at the threshold: "
             "balanced accuracy [95%] | kappa [95%] | called relevant / readers' | cut-off held out by system: "
             "balanced accuracy [95%] | kappa [95%] | called relevant | Spearman with mean grade |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in ["all", *sorted(set(systems))]:
        m = np.ones(len(y), dtype=bool) if name == "all" else systems == name
        yy, ss = y[m], s[m]
        means = f"{ss[yy].mean():.2f} / {ss[~yy].mean():.2f}" if yy.any() and (~yy).any() else "-"
        if at is not None:
            aa = at[m]
            at_cells = (f"{fmt(interval(_bal, yy, aa, resamples=resamples))} | "
                        f"{fmt(interval(_kappa, yy, aa, resamples=resamples))} | {aa.mean():.2f} / {yy.mean():.2f}")
        else:
            at_cells = "no threshold | | "
        if held is not None:
            hh = held[m]
            held_cells = (f"{fmt(interval(_bal, yy, hh, resamples=resamples))} | "
                          f"{fmt(interval(_kappa, yy, hh, resamples=resamples))} | {hh.mean():.2f}")
        else:
            held_cells = "- | - | -"
        lines.append(f"| {name} | {m.sum()} ({yy.sum()}) | {fmt(interval(auc, yy, ss, resamples=resamples))} | "
                     f"{means} | {at_cells} | {held_cells} | {spearman(ss, grade[m]):.2f} |")
    scores = ", ".join(f"{v:g}: {n}" for v, n in zip(*np.unique(np.round(s, 2), return_counts=True), strict=True))
    lines += ["", ("Cut-offs chosen on the other systems: " + ", ".join(f"{k} {v:.3f}" for k, v in cuts.items())
                   if held is not None else f"No cut-off held out by system: {why}"),
              f"best balanced accuracy on all {len(y)}: cut-off {best_cutoff(s, y, run.scale):.4f}",
              f"item scores (rounded to 0.01: count): {scores}" if len(np.unique(np.round(s, 2))) <= 12 else
              f"item scores: quartiles {', '.join(f'{q:.2f}' for q in np.quantile(s, [0.25, 0.5, 0.75]))}"]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml",
                        help="the config whose judge model runs (evaluate.judges.llm)")
    parser.add_argument("--options", type=json.loads, default={},
                        help="the judge's options as JSON, e.g. '{\"prompt_family\": \"prometheus\"}'")
    parser.add_argument("--limit", type=int, help="the first N labelled answers of each system only (a quick look)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = parser.parse_args(argv)
    rows = load_labels(args.labels)
    if args.limit:
        by_system = {s: [r for r in rows if r["system"] == s] for s in sorted({r["system"] for r in rows})}
        rows = [r for part in by_system.values() for r in part[:args.limit]]
    if len({r["system"] for r in rows}) < 2 or len({r["relevant"] for r in rows}) < 2:
        sys.exit("the labels need 2+ systems and both labels (relevant and not) to hold a cut-off out by system")
    run = run_judge(rows, args.config, args.options)
    scored = sum(s is not None for s in run.scores)
    if scored < len(rows):
        print(f"{len(rows) - scored} items failed; first: {run.errors[0]}", file=sys.stderr)
    if scored == 0:
        sys.exit("every item failed: nothing to measure")
    weighted = sum("weighted_score" in d for d in run.details if d)
    lines = [f"{args.labels.relative_to(ROOT) if args.labels.is_relative_to(ROOT) else args.labels}: "
             f"{len(rows)} answers with the readers' shared label ({sum(r['relevant'] for r in rows)} relevant); "
             f"judge {run.model}, prompt {run.prompt_version}, scale {run.scale}, threshold {run.threshold}; "
             f"{scored} scored ({weighted} probability-weighted), {run.seconds / len(rows):.1f} s per item "
             f"(wall, through the LLM cache)", "", *table(rows, run, args.resamples)]
    command = "python benchmarks/answer_relevance.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = "\n".join([f"    {command}", "", *lines]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
