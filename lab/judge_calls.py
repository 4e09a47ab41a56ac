"""Calls and wall time per item of the faithfulness judge: batched vs per-statement verification.

Runs the real `FaithfulnessJudge` (our LLM layer, engine and prompts) against `tests/fake_llm_server.py`
at a given concurrency, on deterministic fixtures (answers of 1-4 statements, one context each). The
fake judge decides every statement by one rule (is the statement's first word in the context?), in
both prompt formats, so the two modes must give the same per-statement verdicts.

The server's time per call follows a simple cost model of a real LLM server: a fixed overhead, plus
prefill per prompt word, plus decoding per reply word (so a batched reply that lists several verdicts
costs more than a single one, and a prompt that repeats the context per statement costs more too).

Prints, side by side in one run: calls per item, wall per item, their ratio, and whether the
verdicts agree statement by statement.

Usage:
    python -m lab.judge_calls --items 96 --concurrency 32
    python -m lab.judge_calls --statements 1 2   # short answers (1.5 statements per item)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("RAGWATCH_CACHE_DIR", tempfile.mkdtemp(prefix="ragwatch-bench-"))

from ragwatch.judges.faithfulness import FaithfulnessJudge  # noqa: E402
from ragwatch.llm import LLMClient, LLMSettings  # noqa: E402
from ragwatch.statements import statement_verdicts  # noqa: E402
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext  # noqa: E402
from tests.fake_llm_server import FakeLLMServer, last_user_text  # noqa: E402

SUBJECTS = ["Pipelines", "Steps", "Artifacts", "Stacks", "Orchestrators", "Materializers", "Models", "Secrets"]
FACTS = ["run on the local orchestrator by default", "are cached when inputs do not change",
         "are versioned in the artifact store", "can be registered with the CLI", "carry metadata"]
FILLER = "ZenML is an open-source MLOps framework that helps teams build portable pipelines. " * 6


def fixtures(n: int, lo: int = 1, hi: int = 4, seed: int = 7) -> tuple[list[EvalSample], list[RagAnswer]]:
    """`n` answers of `lo`-`hi` statements; about half the statements are in the context."""
    rng = random.Random(seed)
    samples, answers = [], []
    for i in range(n):
        statements = [f"{rng.choice(SUBJECTS)} {rng.choice(FACTS)}." for _ in range(rng.randint(lo, hi))]
        supported = [s for s in statements if rng.random() < 0.5]
        context = FILLER + " ".join(supported)
        samples.append(EvalSample(id=f"q{i}", question=f"What do you know about item {i}?"))
        answers.append(RagAnswer(question=samples[-1].question, answer=" ".join(statements),
                                 contexts=[RetrievedContext(text=context)]))
    return samples, answers


def _fenced(text: str, label: str) -> list[str]:
    return re.findall(rf"<<<BEGIN {label}>>>\n(.*?)\n<<<END {label}>>>", text, flags=re.DOTALL)


def _decide(statement: str, context: str) -> dict[str, str]:
    """The fake judge's one rule: supported when the statement's subject and fact are in the context."""
    found = statement.rstrip(".") in context
    return {"reason": f"{'stated' if found else 'not stated'} in the context", "verdict": "yes" if found else "no"}


class CostModel:
    """Seconds per call: overhead + prefill per prompt word + decoding per reply word."""

    def __init__(self, overhead_s: float, prefill_s: float, decode_s: float) -> None:
        self.overhead_s, self.prefill_s, self.decode_s = overhead_s, prefill_s, decode_s

    def respond(self, body: dict[str, Any]) -> str:
        user = last_user_text(body)
        if "Split the ANSWER" in user:
            answer = _fenced(user, "ANSWER")[0]
            reply = json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
        else:
            context = " ".join(re.findall(r"<<<BEGIN CONTEXT[^>]*>>>\n(.*?)\n<<<END", user, flags=re.DOTALL))
            numbered = re.findall(r"<<<BEGIN STATEMENT \d+>>>\n(.*?)\n<<<END", user, flags=re.DOTALL)
            if numbered:
                reply = json.dumps({"verdicts": [_decide(s, context) for s in numbered]})
            else:
                reply = json.dumps(_decide(_fenced(user, "STATEMENT")[0], context))
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        time.sleep(self.overhead_s + self.prefill_s * prompt_words + self.decode_s * len(reply.split()))
        return reply


def run(mode: str, samples: list[EvalSample], answers: list[RagAnswer], cost: CostModel,
        concurrency: int) -> dict[str, Any]:
    with FakeLLMServer(responder=cost.respond) as server:
        settings = LLMSettings(model="openai/fake-judge", api_base=server.base_url, concurrency=concurrency,
                               cache=False, max_retries=0)
        LLMClient(settings).generate("warm up litellm's lazy imports")
        server.reset_counts()
        judge = FaithfulnessJudge(LLMClient(settings), model=settings.model, verify=mode,  # type: ignore[arg-type]
                                  statements="llm", max_statements=8)  # the claims split it has always measured
        started = time.perf_counter()
        result = judge.evaluate(samples, answers)
        wall = time.perf_counter() - started
        return {
            "calls": server.calls,
            "wall": wall,
            "failed": result.n_failed,
            "verdicts": [[v.verdict for v in statement_verdicts(it.details)] for it in result.items],
            "score": result.score,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=96)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--statements", type=int, nargs=2, default=(1, 4), metavar=("LO", "HI"),
                        help="statements per answer, drawn uniformly from LO..HI")
    parser.add_argument("--repeats", type=int, default=3, help="runs per mode, alternating; medians reported")
    parser.add_argument("--overhead", type=float, default=0.15, help="seconds per call")
    parser.add_argument("--prefill", type=float, default=0.0005, help="seconds per prompt word")
    parser.add_argument("--decode", type=float, default=0.01, help="seconds per reply word")
    args = parser.parse_args()
    samples, answers = fixtures(args.items, *args.statements)
    cost = CostModel(args.overhead, args.prefill, args.decode)
    n_statements = sum(len([s for s in a.answer.split(".") if s.strip()]) for a in answers)
    print(f"faithfulness judge, {args.items} items ({n_statements / args.items:.2f} statements per item), "
          f"concurrency {args.concurrency}; fake server cost per call: {args.overhead}s + {args.prefill}s/prompt "
          f"word + {args.decode}s/reply word")
    runs: dict[str, list[dict[str, Any]]] = {"per_statement": [], "batched": []}
    for _ in range(args.repeats):  # alternate the modes, so load on the machine hits both alike
        for mode, done in runs.items():
            done.append(run(mode, samples, answers, cost, args.concurrency))
    results = {mode: {**done[0], "wall": statistics.median(r["wall"] for r in done)} for mode, done in runs.items()}
    for mode, r in results.items():
        print(f"  {mode:<13}: {r['calls'] / args.items:.2f} calls/item, {r['wall'] / args.items * 1000:.1f} ms/item "
              f"wall (median of {args.repeats}), failed items {r['failed']}, score {r['score']:.3f}")
    ratio = results["batched"]["wall"] / results["per_statement"]["wall"]
    same = results["batched"]["verdicts"] == results["per_statement"]["verdicts"]
    print(f"  batched / per_statement wall per item: {ratio:.2f} (target <= 0.8); "
          f"calls per item batched {results['batched']['calls'] / args.items:.2f} (target <= 2); "
          f"same per-statement verdicts: {same}")


if __name__ == "__main__":
    main()
