"""Which level estimator the faithfulness level ships: on systems the calibration never saw, and under planted errors.

Every estimator of `ragwatch.statistics.level` (pcc, acc, pacc, em, blend) and the verdict share, on the
labelled statements of the systems under test, one reading of each statement text as the shipped level's data
(`fit.distinct_statements`, then `fit.merge` of the feature rows and the readers' labels); the planted sets (P,
P2) only in section 3, since their untouched statements are copies of their sources':

1. a level calibrated on the support model's fit data only (S0-S2: what the level shipped before it had data
   of its own) on each system that data does not hold: the level against the readers' mean item
   faithfulness of that system's answers, and the 95% interval a run of an unseen system got from it
   (`estimate_level` with the between-system term `system_transfer` of that data);
   the verdict share's interval is the one the product prints beside it (`mean_interval` of the item
   verdict shares);
2. leave one system out over all systems: the calibration set and the verdicts' support model (the
   shipped model's inputs, class-balanced, the shipped cut-off rule) fitted on the others, the interval
   with the between-system term measured on the others;
3. the drop under planted errors by kind (`benchmarks/level_under_planted.py`, shipped calibration);
4. the decision by `RULE` (written down before the figures were first computed), applied to the figures;
5. the between-system term an unseen system's interval carries, measured on the fit data and on all systems;
6. the shipped level (its own data: every labelled system) on each system's statements, as a run of that
   system gets it (`own_system_level`, no between-system term; in sample) and as a run of a system it
   never saw gets it (the pooled fit and the term): the interval's width there and whether it covers;
7. a run of one of the level data's systems out of sample: each half of its answers levelled on the rest.

    python benchmarks/level_estimators.py \
        --features data/judge_dev/rag_statements/features.jsonl data/judge_dev/rag_statements/features_new.jsonl \
            data/judge_dev/rag_statements/features_S3.jsonl data/judge_dev/rag_statements/features_S4.jsonl \
            data/judge_dev/rag_statements/features_S5.jsonl data/judge_dev/rag_statements/features_P.jsonl \
            data/judge_dev/rag_statements/features_P2.jsonl \
        --labels data/judge_dev/rag_statements/more_statements.jsonl \
        --key data/judge_dev/rag_statements/planted_key.jsonl \
        --out benchmarks/results/level_estimators_800.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from level_under_planted import FABRICATIONS, Drop, drop_table, planted_drops, shipped_level_calibration

from ragwatch.judges.faithfulness.calibrations import FaithfulnessCalibration
from ragwatch.judges.faithfulness.fit import (
    SHIPPED_RULE,
    Candidate,
    distinct_statements,
    fit_verdict_model,
    merge,
    read_jsonl,
    read_labelled_rows,
)
from ragwatch.judges.faithfulness.level import (
    LEVEL_FEATURES,
    calibration_set,
    own_system_level,
    read_records,
    statement_level,
    verdict_of,
)
from ragwatch.judges.faithfulness.support_model import SupportModel, feature_vector
from ragwatch.statistics.intervals import mean_interval
from ragwatch.statistics.level import METHODS, CalibrationSet, estimate_level, item_weights, system_transfer

CANDIDATES = (*METHODS, "verdict share")
RESAMPLES = 1000
TRANSFER_RESAMPLES = 200  # as the product's TRANSFER_RESAMPLES
RATIO_FLOOR = 0.5  # the issue's acceptance: the level falls by at least half of the readers' drop
RMSE_MARGIN = 0.02
RULE = f"""An estimator replaces pcc only if all of these hold (rule fixed before the figures were computed):
1. under planted fabrications (a name or number no context holds) its drop is at least {RATIO_FLOOR} of the
   readers' drop on each of {', '.join(FABRICATIONS)} and on the two together;
2. its RMSE against the readers' mean item faithfulness on the systems the shipped calibration never saw is
   at most pcc's + {RMSE_MARGIN};
3. its RMSE in leave-one-system-out over all systems is at most pcc's + {RMSE_MARGIN};
4. its 95% intervals (with the between-system term) cover the readers' mean on all but at most one of the
   unseen systems, and on all but at most one of the left-out systems (two or more misses of five or eight
   has probability below 6% under 95% coverage);
5. among the estimators that pass, the lowest RMSE on the unseen systems wins. If none passes, pcc stays.
A winner is wired in only if its interval and the paired difference's also cover in simulation
(tests/unit/test_level.py)."""


@dataclass
class Row:
    """One estimator on one held-out system."""

    estimate: float
    low: float | None
    high: float | None

    def covers(self, t: float) -> bool | None:
        return None if self.low is None or self.high is None else self.low <= t <= self.high


@dataclass
class Scenario:
    """Per held-out system: its readers' level, size, and every candidate's row."""

    title: str
    truth: dict[str, float] = field(default_factory=dict)
    size: dict[str, tuple[int, int]] = field(default_factory=dict)
    rows: dict[str, dict[str, Row]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def rmse(self, m: str) -> float:
        e = [self.rows[s][m].estimate - t for s, t in self.truth.items() if m in self.rows[s]]
        return float(np.sqrt(np.mean(np.square(e))))

    def misses(self, m: str) -> int:
        return sum(self.rows[s][m].covers(t) is False for s, t in self.truth.items())

    def table(self) -> list[str]:
        head = ["| system | statements (answers) | readers | "
                + " | ".join(f"{m} [95%]" for m in CANDIDATES) + " |", "|---|---|---|" + "---|" * len(CANDIDATES)]
        for s, t in self.truth.items():
            cells = []
            for m in CANDIDATES:
                r = self.rows[s].get(m)
                cells.append("-" if r is None else f"{r.estimate:.3f} [{r.low:.3f}, {r.high:.3f}]"
                             + ("" if r.covers(t) else " miss"))
            head.append(f"| {s} | {self.size[s][0]} ({self.size[s][1]}) | {t:.3f} | " + " | ".join(cells) + " |")
        head.append("")
        head += ["| estimator | bias | RMSE | max abs error | intervals covering | mean width |",
                 "|---|---|---|---|---|---|"]
        for m in CANDIDATES:
            e = np.array([self.rows[s][m].estimate - t for s, t in self.truth.items()])
            widths = [self.rows[s][m].high - self.rows[s][m].low for s in self.truth]
            n = len(self.truth)
            head.append(f"| {m} | {e.mean():+.3f} | {self.rmse(m):.3f} | {np.abs(e).max():.3f} | "
                        f"{n - self.misses(m)} of {n} | {np.mean(widths):.3f} |")
        return [f"### {self.title}", "", *head, *(["", *self.notes] if self.notes else []), ""]


def truth_of(rows: Sequence[dict[str, Any]]) -> float:
    items = np.array([r["answer_id"] for r in rows])
    return float(item_weights(items)[0] @ np.array([r["label"] for r in rows], dtype=float))


def measure(cal: CalibrationSet, support: SupportModel, rows: Sequence[dict[str, Any]], *, resamples: int,
            transfer_resamples: int, seed: int) -> dict[str, Row]:
    """Every candidate's level of `rows` (one system's statements) and its interval, as a run of a system the
    calibration set does not hold gets them."""
    x = np.array([feature_vector(r, LEVEL_FEATURES) for r in rows], dtype=float)
    items = np.array([r["answer_id"] for r in rows])
    verdicts = np.array([verdict_of(r, support, None) for r in rows])
    out = {}
    for m in METHODS:
        transfer = system_transfer(cal, method=m, resamples=transfer_resamples, seed=seed)
        est = estimate_level(cal, x, items, method=m, verdicts=verdicts, resamples=resamples, seed=seed,
                             transfer=transfer)
        out[m] = Row(est.estimate, est.ci_low, est.ci_high)
    per_item: dict[str, list[float]] = {}
    for item, v in zip(items, verdicts, strict=True):
        per_item.setdefault(str(item), []).append(float(v))
    share, low, high, _ = mean_interval([float(np.mean(v)) for v in per_item.values()], scale=(0.0, 1.0))
    out["verdict share"] = Row(share, low, high)
    return out


def unseen(calibration: FaithfulnessCalibration, records: list[dict[str, Any]], *, resamples: int,
           transfer_resamples: int) -> Scenario:
    cal = calibration_set(read_records(calibration.support_data), calibration.support_model, None, LEVEL_FEATURES)
    known = set(cal.system_names())
    sc = Scenario(f"1. A level calibrated on the shipped support model's data ({calibration.model} / "
                  f"{calibration.prompt_version} / {calibration.features_version}, systems {', '.join(sorted(known))}) "
                  "on each system it never saw")
    for k, system in enumerate(sorted({r["system"] for r in records} - known)):
        rows = [r for r in records if r["system"] == system]
        sc.truth[system] = truth_of(rows)
        sc.size[system] = (len(rows), len({r["answer_id"] for r in rows}))
        sc.rows[system] = measure(cal, calibration.support_model, rows, resamples=resamples,
                                  transfer_resamples=transfer_resamples, seed=k)
    return sc


def leave_one_out(calibration: FaithfulnessCalibration, records: list[dict[str, Any]], *, resamples: int,
                  transfer_resamples: int) -> Scenario:
    candidate = Candidate(tuple(calibration.support_model.weights), balanced=True)
    systems = sorted({r["system"] for r in records})
    sc = Scenario(f"2. Leave one system out over {len(systems)} systems (calibration set and verdict model fitted "
                  "on the others)")
    for k, system in enumerate(systems):
        rows = [r for r in records if r["system"] == system]
        train = [r for r in records if r["system"] != system]
        support = fit_verdict_model(train, candidate, SHIPPED_RULE)
        cal = calibration_set(train, support, None, LEVEL_FEATURES)
        sc.truth[system] = truth_of(rows)
        sc.size[system] = (len(rows), len({r["answer_id"] for r in rows}))
        sc.rows[system] = measure(cal, support, rows, resamples=resamples, transfer_resamples=transfer_resamples,
                                  seed=k)
    sc.notes.append(f"verdicts: a support model on {', '.join(candidate.features)} (class-balanced, cut-off rule "
                    f"{SHIPPED_RULE}) fitted on the other systems")
    return sc


def transfers(calibration: FaithfulnessCalibration, records: list[dict[str, Any]], resamples: int) -> list[str]:
    """The between-system term per method: what a run of an unseen system carries with the shipped data, and
    what leaving each of all the labelled systems out would give (the shipped support model's verdicts)."""
    shipped = calibration_set(read_records(calibration.support_data), calibration.support_model, None, LEVEL_FEATURES)
    every = calibration_set(records, calibration.support_model, None, LEVEL_FEATURES)
    lines = ["| method | fit data: sd (df) | its left-out errors | all systems: sd (df) | their left-out errors |",
             "|---|---|---|---|---|"]
    for m in METHODS:
        a, b = (system_transfer(c, method=m, resamples=resamples) for c in (shipped, every))
        lines.append(f"| {m} | {a.sd:.3f} ({a.df}) | {', '.join(f'{s} {e:+.3f}' for s, e in a.errors.items())} | "
                     f"{b.sd:.3f} ({b.df}) | {', '.join(f'{s} {e:+.3f}' for s, e in b.errors.items())} |")
    return lines


def shipped_level(calibration: FaithfulnessCalibration, records: list[dict[str, Any]], *,
                  resamples: int) -> list[str]:
    """The shipped level (`statement_level`, the product's own path) on each system's labelled statements, as a run
    of that system (in sample) and as a run of a system it never saw."""
    lines = ["| system | statements (answers) | readers | as its own system [95%] | width | as an unseen system [95%] "
             "| width |", "|---|---|---|---|---|---|---|"]
    widths: dict[str, list[float]] = {"own": [], "unseen": []}
    covered = {"own": 0, "unseen": 0}
    systems = sorted({r["system"] for r in records})
    for system in systems:
        rows = [r for r in records if r["system"] == system]
        items = [r["answer_id"] for r in rows]
        verdicts = [verdict_of(r, calibration.support_model, None) for r in rows]
        truth = truth_of(rows)
        cells = []
        for kind, code in (("own", system), ("unseen", None)):
            est = statement_level(rows, items, verdicts, calibration, resamples=resamples, system=code)
            ok = est.ci_low <= truth <= est.ci_high
            covered[kind] += ok
            widths[kind].append(est.ci_high - est.ci_low)
            cells.append(f"{est.estimate:.3f} [{est.ci_low:.3f}, {est.ci_high:.3f}]{'' if ok else ' miss'} | "
                         f"{est.ci_high - est.ci_low:.3f}")
        lines.append(f"| {system} | {len(rows)} ({len(set(items))}) | {truth:.3f} | {' | '.join(cells)} |")
    n = len(systems)
    lines += ["", f"As its own system: {covered['own']} of {n} covered (in sample), mean width "
                  f"{np.mean(widths['own']):.3f}. As an unseen system: {covered['unseen']} of {n} covered, mean width "
                  f"{np.mean(widths['unseen']):.3f} (in sample too: section 2 is the honest measure of an unseen "
                  "system)."]
    return lines


def own_system_held_out(calibration: FaithfulnessCalibration, records: list[dict[str, Any]], *, resamples: int,
                        splits: int) -> list[str]:
    """The interval a run of one of the level data's systems gets (`own_system_level`: the pooled point, the
    interval reaching over the own-shift fit's; no between-system term), out of sample: each system's answers
    split in two halves (`splits` seeded shuffles), each half levelled on all the other statements (the other
    half of its system included). Errors: of the reported (pooled) point and of the own-shift fit's."""
    lines = ["| system | halves | covered | mean abs error: pooled point | own-shift fit | mean width |",
             "|---|---|---|---|---|---|"]
    total, hits, all_widths = 0, 0, []
    for system in sorted({r["system"] for r in records}):
        answers = sorted({r["answer_id"] for r in records if r["system"] == system})
        errors, own_errors, widths, covered = [], [], [], 0
        for split in range(splits):
            order = np.random.default_rng(split).permutation(len(answers))
            for half in (order[: len(order) // 2], order[len(order) // 2:]):
                held = {answers[i] for i in half}
                rows = [r for r in records if r["answer_id"] in held]
                train = [r for r in records if r["answer_id"] not in held]
                cal = calibration_set(train, calibration.support_model, None, LEVEL_FEATURES)
                x = np.array([feature_vector(r, LEVEL_FEATURES) for r in rows])
                est, own = own_system_level(cal, system, x, np.array([r["answer_id"] for r in rows]),
                                            resamples=resamples, seed=split)
                truth = truth_of(rows)
                covered += est.ci_low <= truth <= est.ci_high
                errors.append(est.estimate - truth)
                own_errors.append(own.estimate - truth)
                widths.append(est.ci_high - est.ci_low)
        total, hits, all_widths = total + len(errors), hits + covered, all_widths + widths
        lines.append(f"| {system} | {len(errors)} | {covered} | {np.mean(np.abs(errors)):.3f} | "
                     f"{np.mean(np.abs(own_errors)):.3f} | {np.mean(widths):.3f} |")
    lines += ["", f"All: {hits} of {total} halves covered ({hits / total:.2f}), mean width {np.mean(all_widths):.3f}."]
    return lines


def decide(first: Scenario, second: Scenario, drops: Sequence[Drop]) -> tuple[str, list[str]]:
    """The rule applied: the winner and one line per candidate saying which clause it fails."""
    by_kind = {d.kind: d for d in drops}
    lines = ["| estimator | fabrication drop ratios (" + ", ".join(FABRICATIONS) + ", together) | RMSE unseen "
             "(pcc + margin) | RMSE left out (pcc + margin) | misses unseen / left out | passes |",
             "|---|---|---|---|---|---|"]
    passed = []
    for m in CANDIDATES:
        ratios = [by_kind[k].ratio(m) for k in (*FABRICATIONS, "fabrications")]
        fails = []
        if any(r is None or r < RATIO_FLOOR for r in ratios):
            fails.append("1")
        if first.rmse(m) > first.rmse("pcc") + RMSE_MARGIN:
            fails.append("2")
        if second.rmse(m) > second.rmse("pcc") + RMSE_MARGIN:
            fails.append("3")
        if first.misses(m) > 1 or second.misses(m) > 1:
            fails.append("4")
        if m != "pcc" and not fails:
            passed.append(m)
        lines.append(f"| {m} | {', '.join('-' if r is None else f'{r:.2f}' for r in ratios)} | "
                     f"{first.rmse(m):.3f} ({first.rmse('pcc') + RMSE_MARGIN:.3f}) | "
                     f"{second.rmse(m):.3f} ({second.rmse('pcc') + RMSE_MARGIN:.3f}) | "
                     f"{first.misses(m)} / {second.misses(m)} | "
                     f"{'yes' if not fails else 'no: clause ' + ', '.join(fails)} |")
    winner = min(passed, key=first.rmse) if passed else "pcc"
    verdict = (f"Decision: {winner} replaces pcc (passes every clause; lowest RMSE on the unseen systems of "
               f"{passed})." if passed else "Decision: no estimator passes; pcc stays.")
    return winner, [*lines, "", verdict]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=Path, nargs="+", required=True)
    parser.add_argument("--labels", type=Path, nargs="*", default=[])
    parser.add_argument("--key", type=Path, required=True, help="the planted answers' key (planted_key.jsonl)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--transfer-resamples", type=int, default=TRANSFER_RESAMPLES)
    parser.add_argument("--splits", type=int, default=5, help="seeded halvings per system in section 7")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    calibration = shipped_level_calibration()
    planted_systems = {read_jsonl(p)[0].get("system") for p in args.features}
    planted_files = [p for p in args.features if read_jsonl(p)[0].get("system") in {"P", "P2"}]
    source_files = [p for p in args.features if p not in planted_files]
    if not planted_files:
        sys.exit(f"no planted answers' features (system P or P2) among --features (systems {planted_systems})")
    drops, n_planted = planted_drops(calibration, args.labels[0], planted_files, args.key, source_files)
    # the systems under test, one reading of each statement text (as the shipped level's data): a planted set's
    # untouched statements are copies of its source's and would sit on both sides of a left-out split
    fitted = {r["system"] for r in read_records(calibration.fit_data or calibration.level_data)}
    features, copies = distinct_statements([r for p in source_files for r in read_jsonl(p)], fitted)
    labels = [r for p in args.labels for r in read_jsonl(p)]
    merged, dropped = merge(features, labels)
    dropped["a copy of a statement already kept (the same text at the same lexical support)"] += copies
    records = read_labelled_rows(merged)

    first = unseen(calibration, records, resamples=args.resamples, transfer_resamples=args.transfer_resamples)
    second = leave_one_out(calibration, records, resamples=args.resamples,
                           transfer_resamples=args.transfer_resamples)
    _, decision = decide(first, second, drops)
    systems = sorted({r["system"] for r in records})
    lines = [f"{len(records)} labelled statements of {len({r['answer_id'] for r in records})} answers, systems "
             f"{', '.join(systems)}; left out: {dict(dropped)}. Readers: the mean over answers of the share of "
             f"statements both readings call supported. Intervals: {args.resamples} replicates, the between-system "
             f"term from {args.transfer_resamples} per left-out system.", "",
             "### The rule", "", RULE, "",
             first.table(), second.table(),
             f"### 3. Drop under planted errors (shipped calibration; {n_planted} planted answers)", "",
             *drop_table(drops), "", "### 4. The rule applied", "", *decision, "",
             "### 5. The between-system term (leave one system out; sd floored at zero when the errors are within "
             "their sampling noise)", "", *transfers(calibration, records, args.transfer_resamples), "",
             f"### 6. The shipped level (its data: {calibration.level_data}) on each system", "",
             *shipped_level(calibration, records, resamples=args.resamples), "",
             f"### 7. A run of one of the level data's systems, out of sample (halves of its answers, {args.splits} "
             "splits)", "", *own_system_held_out(calibration, records, resamples=args.resamples, splits=args.splits)]
    text = "\n".join(line if isinstance(line, str) else "\n".join(line) for line in lines)
    print(text)
    if args.out:
        command = " ".join(sys.argv[1:] if argv is None else argv)
        args.out.write_text(f"    python benchmarks/level_estimators.py {command}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
