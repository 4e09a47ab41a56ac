"""The default run's faithfulness judge against another way of asking it: seconds per item, prompt tokens and
verdicts, side by side on the same answers, LLM cache off.

Reads the answers and eval set of the latest completed `full`/`evaluate` run in the local store (run
`make run` first), builds the faithfulness judge as the run does (`configs/evaluate.yaml`), and judges
the first `--items` answered items twice, in alternating halves so that neither side always runs on a
warmer machine: as the run does, and either with the cascade (`faithfulness.cascade`, on in `--quick`:
asked only where its reply can change a verdict) or, with `--against REV`, with the evidence verifier
(its prompts) of git revision REV. Prints each side's seconds per item, judge calls and prompt tokens,
the faithfulness level and verdict share, and how many statement verdicts agree. One local-model job at
a time: run it alone.

    python benchmarks/judge_speed.py --items 30
    python benchmarks/judge_speed.py --items 65 --against ef2f152   # faithfulness-v5's prompts
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def latest_answers() -> tuple[str, list[Any], list[Any]]:
    from ragwatch_zenml import env as zenml_env

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


def verifier_at(revision: str, like: Any) -> Any:
    """The evidence verifier of git revision `revision` (its prompts and plan, on today's other modules),
    with the same settings as `like`."""
    path = "ragwatch/judges/faithfulness/verify_evidence.py"
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{path}"], capture_output=True, text=True,
                            check=True).stdout
    module = types.ModuleType(f"verify_evidence_at_{revision}")
    exec(compile(source, f"{revision}:{path}", "exec"), module.__dict__)  # our own git history
    return module.EvidenceVerifier(sentences_per_statement=like.per_statement, max_sentences=like.max_sentences,
                                   use_logprobs=like.use_logprobs, support_model=like.support_model,
                                   support_threshold=like.threshold, cascade=like.cascade)


def judge_once(judge: Any, samples: list[Any], answers: list[Any]) -> tuple[float, Any, int, int]:
    """Seconds, the faithfulness result, calls and prompt tokens of judging these answers."""
    calls, tokens = judge.llm.usage.calls, judge.llm.usage.prompt_tokens
    started = time.perf_counter()
    result = judge.evaluate_all(samples, answers)["faithfulness"]
    return (time.perf_counter() - started, result, judge.llm.usage.calls - calls,
            judge.llm.usage.prompt_tokens - tokens)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml")
    parser.add_argument("--against", metavar="REV", help="compare with the evidence verifier of this git revision "
                        "(default: compare with the cascade)")
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
    shipped = judge.verifier
    if args.against:
        other, other_name = verifier_at(args.against, shipped), f"the evidence verifier of {args.against}"
    else:
        other = copy.copy(shipped)
        other.cascade, other_name = True, "where its reply can change a verdict (cascade)"
    sides = {"shipped": (shipped, "as the run asks it"), "other": (other, other_name)}
    llm.generate("Say OK.", max_tokens=2)  # load the model outside the timings
    half = len(pairs) // 2
    seconds: dict[str, float] = dict.fromkeys(sides, 0.0)
    calls: dict[str, int] = dict.fromkeys(sides, 0)
    tokens: dict[str, int] = dict.fromkeys(sides, 0)
    results: dict[str, list[Any]] = {side: [] for side in sides}
    for part, order in ((pairs[:half], ("other", "shipped")), (pairs[half:], ("shipped", "other"))):
        for side in order:
            judge.verifier = sides[side][0]
            t, result, n, prompt = judge_once(judge, [s for s, _ in part], [a for _, a in part])
            seconds[side] += t
            calls[side] += n
            tokens[side] += prompt
            results[side].append(result)
    print(f"run {run}: {len(pairs)} items, faithfulness judge {settings.model}, LLM cache off\n")
    print("| judge asked | seconds per item | calls | prompt tokens per call | verdict share / level (per half) |")
    print("|---|---|---|---|---|")
    for side, (_, name) in sides.items():
        shares = " ; ".join(f"{r.details.get('verdict_share', r.score):.3f} / {r.score:.3f}" for r in results[side])
        print(f"| {name} | {seconds[side] / len(pairs):.2f} | {calls[side]} | {tokens[side] / max(calls[side], 1):.0f} "
              f"| {shares} |")
    same = total = 0
    for a_result, b_result in zip(results["other"], results["shipped"], strict=True):
        for a, b in zip(a_result.items, b_result.items, strict=True):
            for x, y in zip(a.details.get("verdicts", []), b.details.get("verdicts", []), strict=False):
                same += x.get("verdict") == y.get("verdict")
                total += 1
    print(f"\n{other_name} / as the run asks it: {seconds['other'] / seconds['shipped']:.2f}x the time; "
          f"statement verdicts equal: {same} of {total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
