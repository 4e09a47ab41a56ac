"""Which offline judge: ROC AUC, balanced accuracy at a tuned threshold and seconds per item, per model x set.

The judges are the product's own paths: sets with a context (QAGS-XSum: article + one-sentence
claim) go through the faithfulness judge's `verify_statements` (the claim is the one statement);
sets without one (TruthfulQA answers, HaluEval responses) through the direct support judge that
`run.py calibrate` uses. A verdict is P(supported) >= a threshold, never the greedy token: the
threshold is chosen (max balanced accuracy) on one half of each set and the balanced accuracy is
measured on the other half, both ways (2-fold cross-fitting, label-stratified, seeded), so every
item is judged by a threshold that never saw it. AUC and balanced accuracy carry 95% bootstrap
intervals; `thr(all)` is the threshold chosen on all items, what the cut-off-only calibrations of
`ragwatch/judges/faithfulness/calibrations.py` ship for the QAGS row. Models run one after another in this one process
(the local llama.cpp model is not thread-safe), with the LLM cache off so seconds are real.

The dev sets are not part of the repository (QAGS has no licence): pass their paths.

    python benchmarks/judge_choice.py --qags /work/shared/data/judge_dev/qags_xsum.jsonl \
        --truthfulqa /work/shared/data/judge_dev/truthfulqa_truth_dev.jsonl \
        --halueval data/sample/eval/halueval_general_sample.jsonl \
        --models local/qwen2.5-0.5b-instruct local/qwen2.5-coder-1.5b-instruct --n-qags 60 --n-other 40 \
        --out reports/judge_choice.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.calibration import (  # noqa: E402
    CalibrationItem,
    SupportJudge,
    load_calibration_set,
    to_eval_pairs,
)
from ragwatch.judges.faithfulness.verify import verify_many  # noqa: E402
from ragwatch.llm.client import LLMClient  # noqa: E402
from ragwatch.llm.types import LLMSettings  # noqa: E402
from ragwatch.statistics.agreement import balanced_accuracy, roc_auc, with_interval  # noqa: E402
from ragwatch.statistics.cutoff import best_threshold  # noqa: E402

DEFAULT_MODELS = ["local/qwen2.5-0.5b-instruct", "local/qwen2.5-coder-1.5b-instruct"]


def judge_probabilities(
    llm: Any, items: Sequence[CalibrationItem], judge: str = "auto"
) -> tuple[list[float | None], list[str | None]]:
    """P(supported) per item through the product's judge, or the reason it has none.

    `auto`: the faithfulness judge's statement verification (verdict, then reason) where items have
    contexts, else the support judge (verdict first, P(yes) read before any reasoning).
    """
    if judge not in ("auto", "faithfulness", "support"):
        raise ValueError(f"judge must be auto, faithfulness or support, not {judge!r}")
    if judge == "faithfulness" or (judge == "auto" and all(it.contexts for it in items)):
        verdicts = verify_many(llm, [(it.contexts, [it.answer]) for it in items], use_logprobs=True,
                               support_threshold=0.5)
        probs = [v[0].p_supported for v in verdicts]
        errors = [None if p is not None else (v[0].error or "no P(supported) in the reply")
                  for v, p in zip(verdicts, probs, strict=True)]
        return probs, errors
    samples, answers = to_eval_pairs(items)
    result = SupportJudge(llm, use_logprobs=True).evaluate(samples, answers)
    probs = [it.details.get("weighted_score") if it.ok else None for it in result.items]
    errors = [it.error if not it.ok else (None if p is not None else "no P(yes) in the reply")
              for it, p in zip(result.items, probs, strict=True)]
    return probs, errors


def cross_fitted_predictions(scores: list[float], labels: list[bool], *, seed: int) -> tuple[list[bool], list[float]]:
    """Each item's verdict from the threshold chosen on the other half (label-stratified halves)."""
    rng = random.Random(seed)
    folds = [0] * len(scores)
    for label in (True, False):
        idx = [i for i, y in enumerate(labels) if y == label]
        rng.shuffle(idx)
        for k, i in enumerate(idx):
            folds[i] = k % 2
    predictions = [False] * len(scores)
    thresholds = []
    for fold in (0, 1):
        train = [i for i in range(len(scores)) if folds[i] != fold]
        t, _ = best_threshold([scores[i] for i in train], [labels[i] for i in train])
        thresholds.append(t)
        for i in range(len(scores)):
            if folds[i] == fold:
                predictions[i] = scores[i] >= t
    return predictions, thresholds


def summarize(
    model: str, name: str, records: list[dict[str, Any]], *, seed: int, judge: str = "auto"
) -> dict[str, Any]:
    """The figures of one model x set from its per-item records (id, faithful, p, error, seconds)."""
    ok = [r for r in records if r["p"] is not None]
    scores = [float(r["p"]) for r in ok]
    labels = [bool(r["faithful"]) for r in ok]
    row: dict[str, Any] = {
        "model": model, "set": name, "judge": judge, "n": len(records), "n_failed": len(records) - len(ok),
        "failures": sorted({r["error"] for r in records if r["error"]})[:5],
        "s_per_item": sum(r["seconds"] for r in records) / max(len(records), 1),
        "p_range": [min(scores), max(scores)] if scores else None,
    }
    if min(labels.count(True), labels.count(False)) >= 2:
        auc = with_interval(roc_auc, labels, scores, seed=seed)
        predictions, fold_thresholds = cross_fitted_predictions(scores, labels, seed=seed)
        bacc = with_interval(balanced_accuracy, labels, predictions, seed=seed)
        row.update(auc=[auc.value, auc.ci_low, auc.ci_high], balanced_accuracy=[bacc.value, bacc.ci_low, bacc.ci_high],
                   fold_thresholds=fold_thresholds, threshold_all=best_threshold(scores, labels)[0],
                   balanced_accuracy_at_half=balanced_accuracy(labels, [s >= 0.5 for s in scores]))
    return row


def measure(model: str, items: list[CalibrationItem], records: list[dict[str, Any]], *, max_tokens: int,
            save: Any, judge: str = "auto") -> None:
    """Judge the items not yet in `records`, one at a time (so an interrupted run resumes), timing each."""
    llm = LLMClient(LLMSettings(model=model, max_tokens=max_tokens, cache=False, concurrency=1, timeout_s=1800))
    if model.startswith("local/"):
        from ragwatch.llm import local

        local.load(model.removeprefix("local/"))  # load the model outside the timing
    done = {r["id"] for r in records}
    for item in items:
        if item.id in done:
            continue
        start = time.perf_counter()
        (p,), (error,) = judge_probabilities(llm, [item], judge)
        records.append({"id": item.id, "faithful": item.faithful, "p": p, "error": error,
                        "seconds": time.perf_counter() - start})
        save()


def balanced_order(items: list[CalibrationItem], n: int, seed: int) -> list[CalibrationItem]:
    """`n` items alternating faithful / not (seeded), so any prefix of the run is balanced."""
    rng = random.Random(seed)
    pos = [it for it in items if it.faithful]
    neg = [it for it in items if not it.faithful]
    rng.shuffle(pos)
    rng.shuffle(neg)
    mixed = [it for pair in zip(pos, neg, strict=False) for it in pair]
    return mixed[:n]


def load_sets(args: argparse.Namespace) -> dict[str, list[CalibrationItem]]:
    wanted = {"qags": (args.qags, args.n_qags), "truthfulqa": (args.truthfulqa, args.n_other),
              "halueval": (args.halueval, args.n_other)}
    sets = {}
    for name, (path, n) in wanted.items():
        if path is None:
            continue
        if not Path(path).is_file():
            sys.exit(f"--{name}: {path} not found; pass the path of the JSONL file")
        sets[name] = balanced_order(load_calibration_set(path), n, args.seed)
    if not sets:
        sys.exit("pass at least one set: --qags, --truthfulqa or --halueval")
    return sets


def _ci(values: list[float] | None) -> str:
    return "-" if not values else f"{values[0]:.2f} [{values[1]:.2f}, {values[2]:.2f}]"


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | set | judge | n (failed) | ROC AUC | balanced acc. (cross-fitted thr.) | bal. acc. at 0.5 "
             "| thr(all) | P range | s/item |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        half = "-" if r.get("balanced_accuracy_at_half") is None else f"{r['balanced_accuracy_at_half']:.2f}"
        thr = "-" if r.get("threshold_all") is None else f"{r['threshold_all']:.3f}"
        prange = "-" if not r.get("p_range") else f"{r['p_range'][0]:.2f}-{r['p_range'][1]:.2f}"
        lines.append(f"| {r['model'].removeprefix('local/')} | {r['set']} | {r['judge']} | {r['n']} ({r['n_failed']}) "
                     f"| {_ci(r.get('auc'))} | {_ci(r.get('balanced_accuracy'))} | {half} | {thr} | {prange} "
                     f"| {r['s_per_item']:.1f} |")
    return "\n".join(lines)


def records_store(args: argparse.Namespace) -> tuple[dict[str, list[dict[str, Any]]], Callable[[], None]]:
    """The per-item records already in `--out` (a run resumes) and the function that saves them;
    `--threads` set for local models (on a loaded machine one thread wastes less time waiting)."""
    if args.threads:
        from ragwatch.llm import local

        local.N_THREADS = args.threads
    store: dict[str, list[dict[str, Any]]] = (
        json.loads(args.out.read_text()) if args.out and args.out.is_file() else {})

    def save() -> None:
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(store, indent=1))

    return store, save


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qags", help="QAGS-XSum JSONL (context, claim, label)")
    parser.add_argument("--truthfulqa", help="TruthfulQA judgments JSONL (question, answer, label)")
    parser.add_argument("--halueval", help="HaluEval general JSONL (data/sample/eval/...)")
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS, help="litellm model strings, run in order")
    parser.add_argument("--n-qags", type=int, default=60, help="items sampled from QAGS (balanced, seeded)")
    parser.add_argument("--n-other", type=int, default=40, help="items sampled from each other set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--judge", choices=["auto", "faithfulness", "support"], default="auto",
                        help="auto: faithfulness verification with contexts, the support judge without")
    parser.add_argument("--threads", type=int, help="llama.cpp threads of local models (default: the provider's)")
    parser.add_argument("--out", type=Path, help="per-item JSON results; items already there are not judged again")
    parser.add_argument("--rag", type=Path, help="labelled RAG answer statements (statements.jsonl): the verifier "
                        "candidates and their fitted combination, cross-fitted by answer, beside --qags")
    parser.add_argument("--candidates", nargs="+", default=["windows", "evidence4"],
                        help="verifiers compared with --rag: windows (all contexts), evidence<k> (k best sentences)")
    parser.add_argument("--no-llm-cache", action="store_true", help="with --rag: every call for real (timings)")
    parser.add_argument("--rag-answers", type=int, help="only the first N answers of --rag (a side-by-side timing)")
    args = parser.parse_args(argv)
    if args.rag:
        return compare_candidates(args)

    sets = load_sets(args)
    store, save = records_store(args)

    # set by set (QAGS first: it chooses the default), one model at a time in this one process
    for name, items in sets.items():
        for model in args.models:
            records = store.setdefault(f"{model} | {name} | {args.judge}", [])
            print(f"{model} on {name}: {len(items)} items ...", file=sys.stderr, flush=True)
            measure(model, items, records, max_tokens=args.max_tokens, save=save, judge=args.judge)
            row = summarize(model, name, records, seed=args.seed, judge=args.judge)
            print(table([row]).splitlines()[-1], file=sys.stderr, flush=True)
            if model.startswith("local/"):
                from ragwatch.llm import local

                local.close_all()  # free this model's memory before loading the next
    print(table([summarize(model, name, store[f"{model} | {name} | {args.judge}"], seed=args.seed, judge=args.judge)
                 for name in sets for model in args.models]))
    return 0


def compare_candidates(args: argparse.Namespace) -> int:
    """Each candidate verifier on the RAG statements (and QAGS claims): judge alone, lexical, combined."""
    from rag_statements import fit_report, judge_answers, load_statements, qags_answers

    sets = {"rag": load_statements(args.rag)[: args.rag_answers]}
    if args.qags:
        sets["qags"] = qags_answers(balanced_order(load_calibration_set(args.qags), args.n_qags, args.seed))
    store, save = records_store(args)

    rows = []
    for model in args.models:
        llm = LLMClient(LLMSettings(model=model, max_tokens=args.max_tokens, cache=not args.no_llm_cache, concurrency=1,
                                    timeout_s=1800))
        for candidate in args.candidates:
            for name, answers in sets.items():
                key = f"{model} | {name} | {candidate}"
                records = store.setdefault(key, [])
                print(f"{key}: {len(answers)} answers ...", file=sys.stderr, flush=True)
                judge_answers(llm, candidate, answers, records, save)
                shipped = model if candidate == "evidence4" else None  # the verifier the calibration is for
                rows.append((key, fit_report(records, seed=args.seed, model=shipped)))
                print(candidate_table(rows[-1:]), file=sys.stderr, flush=True)
        if model.startswith("local/"):
            from ragwatch.llm import local

            local.close_all()
    print(candidate_table(rows))
    return 0


def candidate_table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    lines = ["| model / set / verifier | statements (failed) | judge alone: AUC / bal. acc. / kappa | lexical alone "
             "| judge + lexical (fitted, cross-fitted) | shipped model as is | s/answer | prompt tok/answer |",
             "|---|---|---|---|---|---|---|---|"]
    for key, r in rows:
        cells = [" / ".join(_ci(r[part][m]) for m in ("auc", "balanced_accuracy", "kappa")) if part in r else "-"
                 for part in ("judge", "lexical", "combined", "shipped")]
        lines.append(f"| {key.removeprefix('local/')} | {r['n_statements']} ({r['n_failed']}) | {cells[0]} "
                     f"| {cells[1]} | {cells[2]} | {cells[3]} | {r['s_per_answer']:.1f} "
                     f"| {r['prompt_tokens_per_answer']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
