"""The default judge step of two whole code trees side by side: seconds per answer of the faithfulness judge at
git revision `--old` and at `--new` (default HEAD), on the same answers, LLM cache off.

`benchmarks/judge_speed.py --against REV` swaps one module into today's code; this one runs each revision's
whole tree, so everything between the answers and the verdicts (config defaults, statements, verifier,
features, calibration, the local-model layer) is that revision's. Each tree is a `git worktree` of its
revision, judged in a fresh subprocess of this venv with `PYTHONPATH=<tree>` (so `ragwatch` is the tree's),
which loads `<tree>/configs/evaluate.yaml` as `run.py evaluate` does, keeps only `faithfulness`, turns the
judge LLM's cache off, loads the model with one tiny warm-up item (timed apart) and times
`ragwatch.evaluation.judge_answers` alone.

The answers are the embedded default system's own, with the contexts it retrieved, from
`data/judge_dev/rag_statements/statements.jsonl` (one answer per item). They are split in halves A and B and
judged in the order new A, old A, old B, new B, so that neither tree always runs on a warmer machine; the
two halves' ratios are the spread of the comparison. One local-model job at a time on this machine:

    flock /tmp/ragwatch-model.lock python benchmarks/judge_step_trees.py --old 831ffc6 \\
        --out benchmarks/results/judge_step_trees.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = ROOT / "data" / "judge_dev" / "rag_statements" / "statements.jsonl"
# A one-statement answer judged before the timing: it loads the judge model and everything the judge reads on
# first use (support model, calibration), so the timed call is the judging alone.
WARM_UP = {"id": "warm-up", "question": "What is ZenML?", "answer": "ZenML is an MLOps framework.",
           "contexts": [{"text": "ZenML is an extensible, open-source MLOps framework for creating pipelines.",
                         "source": "warm-up.md"}]}


def load_answers(path: Path) -> list[dict[str, Any]]:
    """One answer per item of the statements file (its rows are statements): question, answer, contexts."""
    if not path.is_file():
        raise SystemExit(f"{path} not found: run this from a ragwatch checkout")
    from statement_features import load_answers as statement_answers  # the parent's only: it imports ragwatch

    out = []
    for answer in statement_answers(path):
        row = answer["rows"][0]
        sources = row.get("context_sources") or [None] * len(answer["contexts"])
        out.append({"id": answer["id"], "question": answer["question"], "answer": row["answer"],
                    "contexts": [{"text": text, "source": source}
                                 for text, source in zip(answer["contexts"], sources, strict=True)]})
    return out


def worktree(revision: str, where: Path) -> tuple[Path, str]:
    """A detached worktree of `revision` under `where`, and the revision's short commit id."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", f"{revision}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    path = where / f"tree-{commit}"
    done = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), commit],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git worktree add {path} {commit} failed: {done.stderr.strip()} (an old one is removed "
                         f"with: git worktree remove --force {path})")
    return path, commit


def judge_in_tree(tree: Path, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Run this file's `--child` mode on `answers` with `tree`'s `ragwatch`; its JSON result."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"tree": str(tree), "answers": answers}, f)
    try:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", f.name], cwd=tree, env=env,
                              capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        raise SystemExit(f"judging in {tree} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def child(payload_path: str) -> int:
    """The judge step of the tree on PYTHONPATH, on the answers in `payload_path`; prints one JSON line."""
    payload = json.loads(Path(payload_path).read_text(encoding="utf-8"))
    tree = Path(payload["tree"]).resolve()
    import ragwatch

    if not Path(ragwatch.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"ragwatch imported from {ragwatch.__file__}, not from the tree {tree}")
    from ragwatch.config import FullConfig
    from ragwatch.config_loader import load_config
    from ragwatch.evaluation import judge_answers
    from ragwatch.types import EvalSample, RagAnswer, RetrievedContext

    def build(rows: Sequence[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        samples = [EvalSample(id=r["id"], question=r["question"]) for r in rows]
        answers = [RagAnswer(question=r["question"], answer=r["answer"],
                             contexts=[RetrievedContext(**c) for c in r["contexts"]]) for r in rows]
        return samples, answers

    judges = load_config(tree / "configs" / "evaluate.yaml", FullConfig).evaluate.judges
    settings = judges.llm.model_copy(update={"cache": False})
    judges = judges.model_copy(update={"enabled": ["faithfulness"], "llm": settings})
    started = time.perf_counter()
    judge_answers(*build([WARM_UP]), judges)
    warm_up = time.perf_counter() - started
    samples, answers = build(payload["answers"])
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    group = judge_answers(samples, answers, judges)
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()[0]
    metric = group.metrics["faithfulness"]
    usage = group.details["usage"]
    statements = sum(len(item.details.get("statements") or []) for item in metric.items)
    print(json.dumps({
        "seconds": seconds, "warm_up_seconds": warm_up, "load_before": load_before, "load_after": load_after,
        "calls": usage.get("calls"), "cache_hits": usage.get("cache_hits"), "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"), "model": settings.model,
        "prompt_version": metric.info.prompt_version, "score": metric.score,
        "verdict_share": metric.details.get("verdict_share"), "n_scored": metric.n_scored,
        "n_failed": metric.n_failed, "statements": statements,
    }))
    return 0


def ratio_line(new: float, old: float) -> str:
    return f"{new / old:.2f}" if old > 0 else "undefined (old side took no time)"


def report(command: str, sides: dict[str, str], runs: list[dict[str, Any]], n_answers: int,
           load_start: tuple[float, ...], load_end: tuple[float, ...]) -> str:
    lines = [
        f"Command (from the checkout, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): `{command}`",
        "",
        f"{n_answers} answers of the embedded default system with their retrieved contexts "
        f"(`{ANSWERS.relative_to(ROOT)}`, one per item), halves A and B; the faithfulness judge alone, LLM cache "
        "off, each run a fresh process on the whole tree of its revision (`configs/evaluate.yaml` of that tree). "
        "Seconds are `judge_answers` alone; the model load is the warm-up (one one-statement answer) beside it.",
        f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_start)}; after: "
        f"{', '.join(f'{x:.2f}' for x in load_end)}.",
        "",
        "| order | tree | half | answers | seconds | s per answer | LLM calls | cache hits | prompt tokens per call "
        "| statements | level (verdict share) | failed | warm-up s | load 1 min before / after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, run in enumerate(runs, start=1):
        calls = run["calls"] or 0
        share = run["verdict_share"]
        score = f"{run['score']:.3f}" if run["score"] is not None else "none scored"
        lines.append(
            f"| {i} | {run['side']} {sides[run['side']]} | {run['half']} | {run['n']} | {run['seconds']:.1f} "
            f"| {run['seconds'] / run['n']:.2f} | {calls} | {run['cache_hits']} "
            f"| {(run['prompt_tokens'] or 0) / max(calls, 1):.0f} | {run['statements']} "
            f"| {score}" + (f" ({share:.3f})" if isinstance(share, float) else "")
            + f" | {run['n_failed']} | {run['warm_up_seconds']:.1f} "
            f"| {run['load_before']:.2f} / {run['load_after']:.2f} |"
        )
    total = {side: sum(r["seconds"] for r in runs if r["side"] == side) for side in sides}
    calls = {side: sum(r["calls"] or 0 for r in runs if r["side"] == side) for side in sides}
    halves = sorted({r["half"] for r in runs})
    by_half = {h: {r["side"]: r["seconds"] for r in runs if r["half"] == h} for h in halves}
    half_ratios = {h: by_half[h]["new"] / by_half[h]["old"] for h in halves if by_half[h]["old"] > 0}
    overall = total["new"] / total["old"] if total["old"] > 0 else None
    lines += ["", "| tree | commit | judge model, prompt version | seconds | s per answer | LLM calls per answer |",
              "|---|---|---|---|---|---|"]
    for side in sides:
        first = next(r for r in runs if r["side"] == side)
        lines.append(f"| {side} | {sides[side]} | {first['model']}, {first['prompt_version']} | {total[side]:.1f} "
                     f"| {total[side] / n_answers:.2f} | {calls[side] / n_answers:.2f} |")
    spread = ", ".join(f"half {h} {r:.2f}" for h, r in half_ratios.items())
    lines += ["", f"Ratio new/old: **{ratio_line(total['new'], total['old'])}** ({spread})."]
    if overall is not None and half_ratios:
        low, high = min(half_ratios.values()), max(half_ratios.values())
        if high <= 1.0:
            verdict = "the new tree's judge step is no slower than the old one's on either half"
        elif low <= 1.0:
            verdict = (f"the halves disagree ({low:.2f} to {high:.2f}): the difference is within the spread of the "
                       "halves, so this run cannot tell the two apart (not measurably slower)")
        else:
            verdict = (f"the new tree's judge step is slower on both halves ({low:.2f} to {high:.2f} times the "
                       "old one's time)")
        lines += ["", f"For the criterion (default judge step no slower than at {sides['old']}): {verdict}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=False, help="the revision to compare with (e.g. 831ffc6)")
    parser.add_argument("--new", default="HEAD", help="the revision measured (default: HEAD, as committed)")
    parser.add_argument("--answers", type=Path, default=ANSWERS, help="statements JSONL (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="also write the Markdown table here")
    parser.add_argument("--limit", type=int, help="only the first N answers (a smoke test; decides nothing)")
    parser.add_argument("--keep-trees", action="store_true", help="leave the worktrees in place afterwards")
    parser.add_argument("--child", metavar="PAYLOAD", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child)
    if not args.old:
        parser.error("--old REV is required (the revision to compare the judge step with)")
    answers = load_answers(args.answers)[: args.limit]  # a limit of None keeps every answer
    if len(answers) < 2:
        raise SystemExit(f"{args.answers}: {len(answers)} answer(s) to judge (--limit {args.limit}); "
                         "two halves need at least two")
    half = len(answers) // 2
    parts = {"A": answers[:half], "B": answers[half:]}
    given = argv if argv is not None else sys.argv[1:]
    command = "python " + " ".join([str(Path(__file__).resolve().relative_to(ROOT)), *given])
    trees: dict[str, Path] = {}
    sides: dict[str, str] = {}
    try:
        for side, revision in (("new", args.new), ("old", args.old)):
            trees[side], sides[side] = worktree(revision, Path(tempfile.gettempdir()))
        load_start = os.getloadavg()
        print(f"new {sides['new']}, old {sides['old']}: {len(answers)} answers; load {load_start}", flush=True)
        runs = []
        for side, part in (("new", "A"), ("old", "A"), ("old", "B"), ("new", "B")):
            result = judge_in_tree(trees[side], parts[part])
            runs.append({**result, "side": side, "half": part, "n": len(parts[part])})
            print(f"{side} {sides[side]} half {part}: {result['seconds']:.1f} s for {len(parts[part])} answers, "
                  f"{result['calls']} calls, load {result['load_before']:.2f} -> {result['load_after']:.2f}",
                  flush=True)
        load_end = os.getloadavg()
    finally:
        if not args.keep_trees:
            for path in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                               capture_output=True, text=True)
    text = report(command, sides, runs, len(answers), load_start, load_end)
    print("\n" + text)
    if args.out:
        args.out.write_text("# The judge step of two code trees, side by side\n\n" + text, encoding="utf-8")
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
