"""Do a local model's token likelihoods raise the faithfulness verifier's agreement with careful readers?

Two subcommands.

`compute`: for every statement of the labelled statements files, the likelihood signals of
`ragwatch.judges.faithfulness.likelihood` (one packaged local model reading the evidence the verifier
shows, then each statement; prompt reading only) with the seconds each answer took, shared evenly
by its statements, the answers of the systems taking turns (a run stopped early holds every system).
Answers already in `--out` are skipped, so a run resumes. Run it under the model
lock:

    flock /tmp/ragwatch-model.lock python benchmarks/statement_likelihood.py compute \
        --model local/qwen2.5-0.5b-instruct --statements data/judge_dev/rag_statements/statements.jsonl \
        data/judge_dev/rag_statements/new_statements.jsonl

`measure` (no model): joins the signals to the shipped verifier's recorded features (`features*.jsonl`,
with the readers' labels) and measures, leave one system out (fitted on the other systems, measured
on the one left out; `all` pools the held-out parts): ROC AUC, balanced accuracy and Cohen's kappa at
a cut-off fitted on the fitting systems (the shipped rule, `balanced_accuracy_capped`), for (a) the
shipped inputs, (b) each signal alone (its logistic fit, no rules), (c) the shipped inputs plus one
signal, or plus the three signals of a model that summarise it, under the rules; and (c) minus (a)
paired over answers; (d) the model-free inputs alone and with one signal (no judge call). The signal
added is also chosen on the fitting systems alone (best cross-fitted kappa there), so that row's choice
is held out too. Seconds: the signals' per statement over the
judge's recorded per statement, on the same statements.

    python benchmarks/statement_likelihood.py measure --features data/judge_dev/rag_statements/features.jsonl \
        data/judge_dev/rag_statements/features_new.jsonl \
        --likelihood data/judge_dev/rag_statements/likelihood_qwen2.5-0.5b-instruct.jsonl \
        data/judge_dev/rag_statements/likelihood_qwen2.5-coder-1.5b-instruct.jsonl \
        --out benchmarks/results/statement_likelihood.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from faithfulness_level import answer_folds  # noqa: E402
from statement_features import load_answers, statement_id  # noqa: E402
from verdict_refit import (  # noqa: E402
    SHIPPED_RULE,
    _auc_replicates,
    agreement,
    cutoff_by,
    paired_difference,
)

from ragwatch.judges.faithfulness.fit import read_labelled  # noqa: E402
from ragwatch.judges.faithfulness.level import vetoed  # noqa: E402
from ragwatch.judges.faithfulness.likelihood import SIGNALS, answer_likelihoods  # noqa: E402
from ragwatch.judges.faithfulness.support_model import feature_vector  # noqa: E402
from ragwatch.statistics.level import fit_logistic  # noqa: E402

DATA = ROOT / "data" / "judge_dev" / "rag_statements"
SHIPPED = ("judge_logit", "lexical", "uncited", "missing_terms", "vetoed")  # calibrations.py, plain fit
NO_JUDGE = ("lexical", "vetoed")  # the model-free inputs of the shipped model
SUMMARY = ("pmi", "min_logprob_evidence", "share_raised")  # one model's signals as few parameters
RESAMPLES = 1000


# ---------------------------------------------------------------------------------------------- compute


def compute(model: str, statements: Sequence[Path], out: Path, default_system: str,
            systems: Sequence[str] | None = None) -> None:
    """Append the signals of every answer (of `systems`, default all) not yet in `out`, one row per statement."""
    from ragwatch.llm import local

    answers = [a for path in statements for a in load_answers(path, default_system)
               if not systems or a["rows"][0].get("system") in systems]
    done = set()
    if out.is_file():
        done = {json.loads(line)["statement_id"] for line in out.read_text().splitlines() if line.strip()}
    todo = interleaved([a for a in answers if not all(statement_id(r) in done for r in a["rows"])])
    name = model.removeprefix("local/")
    local.load(name, logits_all=True)  # outside the timing
    total, n = 0.0, 0
    for k, answer in enumerate(todo, start=1):
        started = time.perf_counter()
        rows = answer_likelihoods(name, answer["contexts"], answer["statements"])
        seconds = time.perf_counter() - started
        total, n = total + seconds, n + len(rows)
        with out.open("a") as f:
            for source, row in zip(answer["rows"], rows, strict=True):
                f.write(json.dumps({
                    "statement_id": statement_id(source), "system": source.get("system"), "model": name,
                    **(row.signals.model_dump() if row.signals is not None else {}), "error": row.error,
                    "evidence_sentences": row.evidence_sentences, "evidence_tokens": row.evidence_tokens,
                    "seconds": seconds / len(rows), "answer_seconds": seconds,
                }) + "\n")
        print(f"[{k}/{len(todo)}] {len(rows)} statements in {seconds:.1f} s (mean {total / n:.2f} s per statement)",
              file=sys.stderr, flush=True)


def interleaved(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers taking turns by system, so that a run stopped early has every system in it."""
    by_system: dict[str, list[dict[str, Any]]] = {}
    for a in answers:
        by_system.setdefault(str(a["rows"][0].get("system") or ""), []).append(a)
    queues = list(by_system.values())
    return [q[k] for k in range(max(map(len, queues), default=0)) for q in queues if k < len(q)]


def timing(models: Sequence[str], statements: Sequence[Path], default_system: str, n_answers: int, rounds: int,
           config: Path, out: Path) -> dict[str, Any]:
    """Side by side in one process, so both see the same machine: the shipped judge (answers gathered
    `batch` at a time, as the judge step does) and each model's likelihood reading on the same answers,
    taking turns `rounds` times; seconds per statement of each."""
    from rag_statements import judge_batch
    from statement_features import shipped_judge

    from ragwatch.llm import local

    answers = interleaved([a for path in statements for a in load_answers(path, default_system)])[:n_answers]
    judge, llm = shipped_judge(config)
    batch = llm.settings.concurrency
    local.load(str(judge.model).removeprefix("local/"))  # loads outside the timing
    for m in models:
        local.load(m.removeprefix("local/"), logits_all=True)
    seconds = {"judge": 0.0, **{m: 0.0 for m in models}}
    for _ in range(rounds):
        for start in range(0, len(answers), batch):
            seconds["judge"] += judge_batch(llm, judge.verifier, answers[start:start + batch])[1]
        for m in models:
            started = time.perf_counter()
            for a in answers:
                answer_likelihoods(m, a["contexts"], a["statements"])
            seconds[m] += time.perf_counter() - started
    n = rounds * sum(len(a["statements"]) for a in answers)
    result = {"answers": len(answers), "statements": n // rounds, "rounds": rounds, "judge_batch": batch,
              "judge_model": judge.model, "seconds_per_statement": {k: v / n for k, v in seconds.items()}}
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


# ---------------------------------------------------------------------------------------------- measure


@dataclass(frozen=True)
class Model:
    """A verdict model: its inputs (shipped feature names and `<model>:<signal>` columns) and whether the
    verifier's rules (no claim, a term no context holds) overrule it."""

    name: str
    inputs: tuple[str, ...]
    rules: bool = True


def columns(records: Sequence[dict[str, Any]], inputs: Sequence[str]) -> np.ndarray:
    shipped = tuple(i for i in inputs if ":" not in i)
    base = np.array([feature_vector(r, shipped) for r in records], dtype=float).reshape(len(records), len(shipped))
    extra = np.array([[r[i] for i in inputs if ":" in i] for r in records], dtype=float).reshape(len(records), -1)
    order = [i for i in inputs if ":" not in i] + [i for i in inputs if ":" in i]
    x = np.hstack([base, extra])
    return x[:, [order.index(i) for i in inputs]]


@dataclass(frozen=True)
class Fitted:
    coef: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    cutoff: float
    model: Model

    def scores(self, records: Sequence[dict[str, Any]]) -> np.ndarray:
        """P(supported); -1 where a rule vetoes the statement (below every cut-off)."""
        z = (columns(records, self.model.inputs) - self.mean) / self.scale
        p = 1 / (1 + np.exp(-(self.coef[0] + z @ self.coef[1:])))
        if self.model.rules:
            p = np.where([vetoed(r) for r in records], -1.0, p)
        return p


def fit(records: Sequence[dict[str, Any]], model: Model, rule: str = SHIPPED_RULE) -> Fitted:
    """Plain logistic fit (L2, as the shipped one) on standardised inputs, cut-off by `rule` on `records`."""
    x = columns(records, model.inputs)
    y = np.array([r["label"] for r in records], dtype=bool)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    coef = fit_logistic((x - mean) / scale, y)[0]
    partial = Fitted(coef, mean, scale, 0.5, model)
    return Fitted(coef, mean, scale, cutoff_by(rule, partial.scores(records), y), model)


def held_out(records: list[dict[str, Any]], model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Every statement's score and verdict from a fit on the other systems only."""
    scores = np.zeros(len(records))
    verdicts = np.zeros(len(records), dtype=bool)
    for system in sorted({r["system"] for r in records}):
        test = [i for i, r in enumerate(records) if r["system"] == system]
        fitted = fit([r for r in records if r["system"] != system], model)
        part = fitted.scores([records[i] for i in test])
        scores[test], verdicts[test] = part, part >= fitted.cutoff
    return scores, verdicts


def cross_fitted_kappa(records: list[dict[str, Any]], model: Model, folds: int = 5) -> float:
    """Kappa of verdicts each from a fit that never saw its answer (folds of answers, seed 0)."""
    verdicts = np.zeros(len(records), dtype=bool)
    index = {id(r): i for i, r in enumerate(records)}
    parts = answer_folds(records, folds, 0)
    for k, test in enumerate(parts):
        fitted = fit([r for j, p in enumerate(parts) if j != k for r in p], model)
        verdicts[[index[id(r)] for r in test]] = fitted.scores(test) >= fitted.cutoff
    return agreement([r["label"] for r in records], verdicts, [r["answer_id"] for r in records], resamples=0).kappa[0]


def chosen_held_out(records: list[dict[str, Any]], candidates: Sequence[Model]) -> tuple[np.ndarray, np.ndarray,
                                                                                           list[str]]:
    """Like `held_out`, but the candidate is chosen on the fitting systems (best cross-fitted kappa there)."""
    scores, verdicts, chosen = np.zeros(len(records)), np.zeros(len(records), dtype=bool), []
    for system in sorted({r["system"] for r in records}):
        test = [i for i, r in enumerate(records) if r["system"] == system]
        train = [r for r in records if r["system"] != system]
        best = max(candidates, key=lambda m: cross_fitted_kappa(train, m))
        fitted = fit(train, best)
        part = fitted.scores([records[i] for i in test])
        scores[test], verdicts[test] = part, part >= fitted.cutoff
        chosen.append(f"{system}: {best.name}")
    return scores, verdicts, chosen


def labelled(features: Sequence[Path], labels: Sequence[Path]) -> list[dict[str, Any]]:
    """`read_labelled` of the feature files, a row without a label taking its statement's label from the
    statements files `labels` (where the readers' labels were merged after the features were recorded)."""
    known = {}
    for path in labels:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                known[statement_id(row)] = row.get("label")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for k, path in enumerate(features):
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            rows = [{**r, "label": r.get("label") or known.get(r["statement_id"])} for r in rows]
            paths.append(Path(tmp) / f"{k}.jsonl")
            paths[-1].write_text("".join(json.dumps(r) + "\n" for r in rows))
        return read_labelled(paths)


def join(features: Sequence[Path], likelihood: Sequence[Path],
         labels: Sequence[Path] = ()) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Labelled statements with their recorded features and every model's signals as `<model>:<signal>`;
    the models, and notes on statements left out (no signals, or a failure)."""
    records = labelled(features, labels)
    signals: dict[str, dict[str, dict[str, Any]]] = {}
    for path in likelihood:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                signals.setdefault(row["model"], {})[row["statement_id"]] = row
    models = sorted(signals)
    kept, notes = [], []
    for r in records:
        rows = [signals[m].get(r["statement_id"]) for m in models]
        missing = [m for m, row in zip(models, rows, strict=True) if row is None or row.get("error")]
        if missing:
            reason = "; ".join(f"{m}: {'not computed' if row is None else row['error']}"
                               for m, row in zip(models, rows, strict=True) if m in missing)
            notes.append(f"{r['statement_id']} left out ({reason})")
            continue
        kept.append({**r, **{f"{m}:{s}": row[s] for m, row in zip(models, rows, strict=True) for s in SIGNALS},
                     **{f"{m}:seconds": row["seconds"] for m, row in zip(models, rows, strict=True)}})
    return kept, models, notes


def cells(records: list[dict[str, Any]], scores: np.ndarray, verdicts: np.ndarray, resamples: int) -> str:
    a = agreement([r["label"] for r in records], verdicts, [r["answer_id"] for r in records], resamples=resamples,
                  scores=scores)
    auc, b, k = a.auc, a.balanced_accuracy, a.kappa
    assert auc is not None
    return (f"{auc[0]:.3f} [{auc[1]:.2f}, {auc[2]:.2f}] | {b[0]:.3f} [{b[1]:.2f}, {b[2]:.2f}] | "
            f"{k[0]:.3f} [{k[1]:.2f}, {k[2]:.2f}] | {a.n} ({a.n_answers})")


def difference(records: list[dict[str, Any]], base: tuple[np.ndarray, np.ndarray],
               other: tuple[np.ndarray, np.ndarray], resamples: int) -> str:
    """`other` minus `base` in AUC, balanced accuracy and kappa, paired over the same resampled answers."""
    y, answers = np.array([r["label"] for r in records]), [r["answer_id"] for r in records]
    d = paired_difference(y, base[1], other[1], answers, resamples=resamples)
    auc = _auc_replicates(y, other[0], answers, resamples, 0) - _auc_replicates(y, base[0], answers, resamples, 0)
    reps = auc[1:][np.isfinite(auc[1:])]
    lo, hi = np.quantile(reps, [0.025, 0.975])
    b, k = d["balanced_accuracy"], d["kappa"]
    return (f"{auc[0]:+.3f} [{lo:+.2f}, {hi:+.2f}] | {b[0]:+.3f} [{b[1]:+.2f}, {b[2]:+.2f}] | "
            f"{k[0]:+.3f} [{k[1]:+.2f}, {k[2]:+.2f}]")


HEAD = ["| verdicts | ROC AUC [95%] | balanced accuracy [95%] | Cohen's kappa [95%] | statements (answers) |",
        "|---|---|---|---|---|"]
DIFF_HEAD = ["| (c) shipped inputs + / (d) | ROC AUC difference [95%] | balanced accuracy difference [95%] "
             "| kappa difference [95%] |", "|---|---|---|---|"]


def report(records: list[dict[str, Any]], models: list[str], resamples: int) -> list[str]:
    systems = sorted({r["system"] for r in records})
    shipped = Model("(a) shipped inputs", SHIPPED)
    alone = [Model(f"(b) {m}: {s} alone", (f"{m}:{s}",), rules=False) for m in models for s in SIGNALS]
    plus = [Model(f"(c) shipped + {m}: {s}", (*SHIPPED, f"{m}:{s}")) for m in models for s in SIGNALS]
    plus += [Model(f"(c) shipped + {m}: {', '.join(SUMMARY)}", (*SHIPPED, *(f"{m}:{s}" for s in SUMMARY)))
             for m in models]
    # without the judge's reply: what a reading could replace (the judge's P(yes) has next to no weight)
    no_judge = [Model("(d) lexical + vetoed, no judge call", NO_JUDGE)]
    no_judge += [Model(f"(d) lexical + vetoed + {m}: {s}", (*NO_JUDGE, f"{m}:{s}")) for m in models
                 for s in ("mean_logprob_evidence", "share_raised")]
    results = {m.name: held_out(records, m) for m in (shipped, *alone, *plus, *no_judge)}
    pick_scores, pick_verdicts, chosen = chosen_held_out(records, plus)
    results["(c) shipped + the signal chosen on the fitting systems"] = (pick_scores, pick_verdicts)

    lines = [f"{len(records)} labelled statements, {len({r['answer_id'] for r in records})} answers; "
             + ", ".join(f"{s}: {sum(r['system'] == s for r in records)}" for s in systems), "",
             "### Held out by system (fitted on the other systems, measured on the one left out), all held-out "
             "parts pooled", "", *HEAD]
    lines += [f"| {name} | {cells(records, *res, resamples)} |" for name, res in results.items()]
    lines += ["", f"Chosen on the fitting systems: {'; '.join(chosen)}", "",
              "### Per system left out", "", *HEAD]
    for system in systems:
        keep = np.array([r["system"] == system for r in records])
        part = [r for r, k in zip(records, keep, strict=True) if k]
        for name in (shipped.name, *(m.name for m in plus), "(c) shipped + the signal chosen on the fitting systems",
                     *(m.name for m in no_judge)):
            s, v = results[name]
            lines.append(f"| {system}: {name} | {cells(part, s[keep], v[keep], resamples)} |")
    lines += ["", "### (c) and (d) minus (a), held out by system, paired over answers (pooled)", "", *DIFF_HEAD]
    for name in [m.name for m in plus] + ["(c) shipped + the signal chosen on the fitting systems"] + [
            m.name for m in no_judge]:
        lines.append(f"| {name.removeprefix('(c) shipped + ')} | "
                     f"{difference(records, results[shipped.name], results[name], resamples)} |")
    lines += ["", "### Each signal as it is (no fit): ROC AUC of its raw value, supported vs unsupported, per system "
              "(above 0.5: higher for supported statements)", "",
              "| signal | " + " | ".join(systems) + " | all |", "|---|" + "---|" * (len(systems) + 1)]
    for m in models:
        for sig in SIGNALS:
            aucs = [raw_auc([r for r in records if r["system"] == s], f"{m}:{sig}") for s in systems]
            lines.append(f"| {m}: {sig} | " + " | ".join(f"{a:.3f}" for a in aucs)
                         + f" | {raw_auc(records, f'{m}:{sig}'):.3f} |")
    judge = np.array([r["seconds"] for r in records], dtype=float)
    lines += ["", "### Seconds per statement (the same statements)", "",
              "| reader | mean seconds per statement | over the judge's recorded |", "|---|---|---|",
              f"| judge (recorded in the features files: the 1.5B judge's reply, answers batched 4 at a time) | "
              f"{judge.mean():.2f} | 1.00 |"]
    for m in models:
        secs = np.array([r[f"{m}:seconds"] for r in records], dtype=float)
        lines.append(f"| {m} likelihood (evidence read once per answer, two readings per statement) | "
                     f"{secs.mean():.2f} | {secs.sum() / judge.sum():.2f} |")
    lines += ["", "Both were measured on a machine shared with other jobs (the judge's seconds in an earlier "
              "session), so their ratio above is rough; `timing` measures both side by side in one process "
              "(below, when given)."]
    return lines


def timing_lines(path: Path) -> list[str]:
    t = json.loads(path.read_text())
    per = t["seconds_per_statement"]
    return ["", f"### Side by side in one process ({t['answers']} answers, {t['statements']} statements, the two "
            f"taking turns {t['rounds']} times; the judge {t['judge_model']} gathering {t['judge_batch']} answers a "
            f"call as the judge step does; `timing`, {path.name})", "",
            "| reader | seconds per statement | over the judge's |", "|---|---|---|",
            *[f"| {k} | {v:.2f} | {v / per['judge']:.2f} |" for k, v in per.items()]]


def raw_auc(records: Sequence[dict[str, Any]], column: str) -> float:
    """ROC AUC of one column's raw values (ties count half)."""
    y = np.array([r["label"] for r in records], dtype=bool)
    x = np.array([r[column] for r in records], dtype=float)
    pos, neg = x[y], x[~y]
    return float(((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean())


def measure(features: Sequence[Path], likelihood: Sequence[Path], out: Path | None, resamples: int,
            command: str, timed: Path | None = None, labels: Sequence[Path] = ()) -> str:
    records, models, notes = join(features, likelihood, labels)
    if len({r["system"] for r in records}) < 2:
        sys.exit("labelled statements of fewer than 2 systems: leaving one system out needs 2+")
    lines = report(records, models, resamples) + (timing_lines(timed) if timed else [])
    if notes:
        lines += ["", f"Left out ({len(notes)}): " + "; ".join(notes)]
    text = "\n".join([f"    {command}", "", *lines]) + "\n"
    if out:
        out.write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compute", help="the signals of every labelled statement with one local model")
    c.add_argument("--model", required=True, help="a packaged local model, e.g. local/qwen2.5-0.5b-instruct")
    c.add_argument("--statements", type=Path, nargs="+", required=True,
                   help="statements JSONL files (item_id, contexts, statement_index, statement; system)")
    c.add_argument("--default-system", default="S0", help="the system of rows that name none (statements.jsonl)")
    c.add_argument("--out", type=Path, help="default: data/judge_dev/rag_statements/likelihood_<model>.jsonl")
    c.add_argument("--threads", type=int, help="llama.cpp threads (default: the provider's)")
    c.add_argument("--systems", nargs="*", help="only the answers of these systems (default: all)")
    m = sub.add_parser("measure", help="held-out agreement with and without the signals (no model)")
    m.add_argument("--features", type=Path, nargs="+", required=True, help="the verifier's features, labelled")
    m.add_argument("--likelihood", type=Path, nargs="+", required=True, help="`compute` outputs")
    m.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap replicates per interval")
    m.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    m.add_argument("--timing", type=Path, help="a `timing` output to include")
    m.add_argument("--labels", type=Path, nargs="*", default=[],
                   help="labelled statements files whose labels fill feature rows recorded without one")
    t = sub.add_parser("timing", help="the judge and the likelihood readings side by side (seconds)")
    t.add_argument("--models", nargs="+", required=True, help="packaged local models for the likelihood")
    t.add_argument("--statements", type=Path, nargs="+", required=True, help="statements JSONL files")
    t.add_argument("--default-system", default="S0")
    t.add_argument("--answers", type=int, default=8, help="answers, the systems taking turns")
    t.add_argument("--rounds", type=int, default=2)
    t.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml", help="builds the judge")
    t.add_argument("--out", type=Path, default=DATA / "likelihood_timing.json")
    args = parser.parse_args(argv)
    if args.command == "timing":
        print(json.dumps(timing(args.models, args.statements, args.default_system, args.answers, args.rounds,
                                args.config, args.out), indent=1))
        return 0
    if args.command == "compute":
        if args.threads:
            from ragwatch.llm import local

            local.N_THREADS = args.threads
        out = args.out or DATA / f"likelihood_{args.model.removeprefix('local/')}.jsonl"
        compute(args.model, args.statements, out, args.default_system, args.systems)
        return 0
    command = "python benchmarks/statement_likelihood.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    print(measure(args.features, args.likelihood, args.out, args.resamples, command, args.timing, args.labels))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
