"""The default run's faithfulness judge, asked only where its reply can change a verdict vs about every
statement: seconds per item and verdicts, side by side on the same answers, LLM cache off.

Reads the answers and eval set of the latest completed `full`/`evaluate` run in the local store (run
`make run` first), builds the faithfulness judge as the run does (`configs/evaluate.yaml`), and judges
the first `--items` answered items twice: with the cascade (`faithfulness.cascade`, on in `--quick`)
and without it (the default), in alternating halves so that neither side always runs on a warmer
machine. Prints each side's seconds per item, judge calls, the faithfulness level and verdict share,
and how many statement verdicts agree. One local-model job at a time: run it alone.

    python benchmarks/judge_speed.py --items 30
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def latest_answers() -> tuple[str, list[Any], list[Any]]:
    import zenml_env

    zenml_env.configure_environment()
    zenml_env.ensure_repository()
    from zenml.client import Client

    from ragwatch.evalset.assemble import generation_samples

    for run in Client().list_pipeline_runs(sort_by="desc:created", size=50, status="completed").items:
        if "generate_answers" in run.steps and "assemble_eval_set" in run.steps:
            answers = run.steps["generate_answers"].outputs["rag_answers"][0].load()
            eval_set = run.steps["assemble_eval_set"].outputs["eval_set"][0].load()
            return run.name, generation_samples(eval_set.samples), list(answers.answers)
    raise SystemExit("no completed run with answers in this store: run `make run` first")


def judge_once(judge: Any, samples: list[Any], answers: list[Any]) -> tuple[float, Any, int]:
    before = judge.llm.usage.calls
    started = time.perf_counter()
    result = judge.evaluate_all(samples, answers)["faithfulness"]
    return time.perf_counter() - started, result, judge.llm.usage.calls - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml")
    args = parser.parse_args(argv)

    from ragwatch.config import FullConfig
    from ragwatch.config_loader import load_config
    from ragwatch.judges.config import build_judges
    from ragwatch.llm.client import LLMClient

    run, samples, answers = latest_answers()
    pairs = [(s, a) for s, a in zip(samples, answers, strict=True) if a.answer.strip() and a.contexts][: args.items]
    judges = load_config(args.config, FullConfig).evaluate.judges
    settings = judges.llm.model_copy(update={"cache": False})
    llm = LLMClient(settings)
    (judge,) = build_judges(judges.model_copy(update={"enabled": ["faithfulness"], "llm": settings}), llm)
    llm.generate("Say OK.", max_tokens=2)  # load the model outside the timings
    half = len(pairs) // 2
    totals: dict[bool, list[float]] = {True: [], False: []}
    calls: dict[bool, int] = {True: 0, False: 0}
    results: dict[bool, list[Any]] = {True: [], False: []}
    for part, order in ((pairs[:half], (True, False)), (pairs[half:], (False, True))):
        for cascade in order:
            judge.verifier.cascade = cascade
            seconds, result, n = judge_once(judge, [s for s, _ in part], [a for _, a in part])
            totals[cascade].append(seconds)
            calls[cascade] += n
            results[cascade].append(result)
    print(f"run {run}: {len(pairs)} items, faithfulness judge {settings.model}, LLM cache off\n")
    print("| judge asked | seconds per item | calls | verdict share / level (per half) |")
    print("|---|---|---|---|")
    for cascade in (False, True):
        per_item = sum(totals[cascade]) / len(pairs)
        shares = " ; ".join(f"{r.details.get('verdict_share', r.score):.3f} / {r.score:.3f}" for r in results[cascade])
        name = "where its reply can change a verdict (cascade)" if cascade else "about every statement"
        print(f"| {name} | {per_item:.2f} | {calls[cascade]} | {shares} |")
    ratio = sum(totals[True]) / sum(totals[False])
    same = total = 0
    for on, off in zip(results[True], results[False], strict=True):
        for a, b in zip(on.items, off.items, strict=True):
            for x, y in zip(a.details.get("verdicts", []), b.details.get("verdicts", []), strict=False):
                same += x.get("verdict") == y.get("verdict")
                total += 1
    print(f"\ncascade / every statement: {ratio:.2f}x the time; statement verdicts equal: {same} of {total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
