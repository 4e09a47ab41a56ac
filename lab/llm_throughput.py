"""Throughput of the LLM layer, and the local models' speed and judge quality.

Prints:
  1. N structured calls against the fake server (fixed latency L) at concurrency C, per fault scenario:
     clean; 30% 500s; 15% random 429s (no Retry-After: each item backs off on its own); bursts of 429s
     (every request for 2 s every 10 s, Retry-After = the rest of the burst); and, not a target, 15%
     random 429s each asking Retry-After: 1 s (every one pauses all sends). For each: wall time and its
     ratio to clean, retries, how the bound moved, the seconds until it was back at full concurrency
     after each burst, items scored/failed with reasons, NaN count, scored items equal to the clean run.
     Then the clean batch again from the cache (provider calls counted).
  2. The local provider's per-call time next to raw llama_cpp on the same prompt (ratio).
  3. With --judge: per-call seconds of each local model on a ~800-token judge prompt, and a yes/no
     hallucination judgement on 20 HaluEval items (greedy verdict vs P(yes) from logprobs).

Usage:
    python -m lab.llm_throughput --skip-local            # N=320, latency 1 s, concurrency 32
    python -m lab.llm_throughput --skip-fake --judge --models smollm2-135m-instruct qwen2.5-0.5b-instruct
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("RAGWATCH_CACHE_DIR", tempfile.mkdtemp(prefix="ragwatch-bench-"))

from ragwatch.llm import LLMClient, LLMSettings  # noqa: E402
from ragwatch.llm.logprobs import yes_probability  # noqa: E402
from ragwatch.results import ItemScore, MetricResult  # noqa: E402
from tests.fake_llm_server import Bursts, FakeLLMServer, first_user_text  # noqa: E402

HALUEVAL = Path("/work/shared/data/halueval/general_data.jsonl")


class Answer(BaseModel):
    answer: str


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]


class Scored(BaseModel):
    score: float


def scoring_reply(body: dict) -> str:
    """A judge-like reply: a score fixed by the item's number, so every run must agree item by item."""
    number = int(first_user_text(body).rsplit(" ", 1)[-1])
    return json.dumps({"score": 1 + (number * 7) % 5})


@dataclass(frozen=True)
class Scenario:
    name: str
    random_faults: dict[str, float] | None = None
    bursts: Bursts | None = None
    retry_after: str | None = None
    target: bool = True


SCENARIOS = [
    Scenario("clean"),
    Scenario("30% 500s", random_faults={"500": 0.30}),
    Scenario("15% random 429s", random_faults={"429": 0.15}),
    Scenario("429 bursts (2 s every 10 s)", bursts=Bursts(every_s=10.0, length_s=2.0, first_at_s=4.0)),
    Scenario("15% random 429s, Retry-After 1 s", random_faults={"429": 0.15}, retry_after="1", target=False),
]


def recovery_after_bursts(
    history: list[tuple[float, int]], bound: int, ends: list[float], length_s: float, every_s: float
) -> list[float | None]:
    """Seconds from each burst's end until the bound was back at `bound` (0: it never dropped;
    None: still below when the run ended)."""
    out: list[float | None] = []
    for end in ends:
        start = end - length_s
        drops = [t for t, b in history if start < t < start + every_s and b < bound]
        if not drops:
            out.append(0.0)
            continue
        back = [t for t, b in history if t > drops[0] and b == bound]
        out.append(max(0.0, back[0] - end) if back else None)
    return out


def run_scenario(scenario: Scenario, prompts: list[str], latency: float, concurrency: int) -> dict:
    server = FakeLLMServer(
        responder=scoring_reply,
        latency_s=latency,
        random_faults=scenario.random_faults,
        bursts=scenario.bursts,
        retry_after=scenario.retry_after,
        seed=13,
    )
    with server:
        settings = LLMSettings(model="openai/fake", api_base=server.base_url, concurrency=concurrency, cache=False)
        client = LLMClient(settings)
        server.reset_counts()  # also starts the burst clock
        started = time.perf_counter()
        gens = client.generate_many(prompts, schema=Scored, desc=scenario.name)
        wall = time.perf_counter() - started
        limiter = client.last_limiter
        assert limiter is not None
        stats = limiter.stats
        ends = [server.epoch + e for e in scenario.bursts.ends(wall)] if scenario.bursts else []
        ends = [e for e in ends if e - server.epoch < wall]
        return {
            "wall": wall,
            "gens": gens,
            "calls": server.calls,
            "behaviours": dict(server.behaviours),
            "peak": server.peak_in_flight,
            "decreases": stats.decreases,
            "pauses": stats.pauses,
            "lowest": stats.lowest,
            "recovery": recovery_after_bursts(
                stats.history, limiter.flow.max_limit, ends, *(
                    (scenario.bursts.length_s, scenario.bursts.every_s) if scenario.bursts else (0.0, 0.0)
                )
            ),
            "retries": client.usage.retries,
        }


def reason(error: str) -> str:
    """The kind of a failure, without its item-specific details."""
    return error.split(":")[0] + (": " + error.split(":")[1].split("(")[0].strip() if ":" in error else "")


def bench_fake(n: int, latency: float, concurrency: int, scenarios: list[str] | None) -> None:
    prompts = [f"score item {i}" for i in range(n)]
    with FakeLLMServer() as server:  # litellm's lazy imports happen here, not in the first timed run
        LLMClient(LLMSettings(model="openai/fake", api_base=server.base_url, cache=False)).generate("warm up")
    ideal = n * latency / concurrency
    print(f"fake server: N={n}, latency {latency}s, concurrency {concurrency}; ideal clean {ideal:.1f}s")
    clean_scores: dict[int, float] | None = None
    clean_wall = None
    for scenario in SCENARIOS:
        if scenarios and scenario.name != "clean" and not any(k in scenario.name for k in scenarios):
            continue
        r = run_scenario(scenario, prompts, latency, concurrency)
        items = [
            ItemScore(item_id=str(i), score=g.parsed.score) if g.ok else ItemScore(item_id=str(i), error=g.error)
            for i, g in enumerate(r["gens"])
        ]
        result = MetricResult.from_items("fake judge", items)
        scores = {i: it.score for i, it in enumerate(items) if it.score is not None}
        nan = sum(1 for v in scores.values() if math.isnan(v))
        if clean_scores is None:
            clean_scores, clean_wall = scores, r["wall"]
        same = sum(clean_scores.get(i) == v for i, v in scores.items())
        failed = Counter(reason(it.error) for it in items if it.error)
        ratio = r["wall"] / clean_wall
        recovery = ", ".join("still low at the end" if x is None else f"{x:.1f}s" for x in r["recovery"]) or "-"
        verdict = ("ok" if ratio <= 2.0 else "OVER 2x") if scenario.target else "not a target"
        print(
            f"  {scenario.name:34s} wall {r['wall']:6.1f}s  x{ratio:4.2f} clean ({verdict})  "
            f"scored {result.n_scored}/{n} failed {result.n_failed}  NaN {nan}  same as clean {same}/{len(scores)}  "
            f"retries {r['retries']}  calls {r['calls']}  peak in flight {r['peak']}  bound: lowest {r['lowest']}, "
            f"decreases {r['decreases']}, pauses {r['pauses']}  back to {concurrency} after bursts: {recovery}"
        )
        for why, count in failed.most_common():
            print(f"      failed {count}: {why}")
        if scenario.name == "clean":
            bench_cache(prompts, latency, concurrency)


def bench_cache(prompts: list[str], latency: float, concurrency: int) -> None:
    with FakeLLMServer(responder=scoring_reply, latency_s=latency) as server, tempfile.TemporaryDirectory() as cache:
        settings = LLMSettings(model="openai/fake", api_base=server.base_url, concurrency=concurrency, cache_dir=cache)
        LLMClient(settings).generate_many(prompts, schema=Scored)
        server.reset_counts()
        started = time.perf_counter()
        again = LLMClient(settings).generate_many(prompts, schema=Scored)
        wall = time.perf_counter() - started
        print(
            f"  {'clean again, from the cache':34s} wall {wall:6.2f}s ({wall / len(prompts) * 1000:.2f} ms/item), "
            f"cached {sum(g.cached for g in again)}/{len(prompts)}, provider calls {server.calls}"
        )


def bench_local_vs_raw(model: str, repeats: int, long_prompt: bool) -> None:
    from ragwatch.llm import local

    if long_prompt:  # a ~800-token judge-like prompt
        items = halueval_items(20)
        response = " ".join(r["chatgpt_response"] for r in items)[:2600]
        prompt = JUDGE.format(query=items[0]["user_query"], response=response)
    else:
        prompt = "Is Paris the capital of France? Answer yes or no in JSON."
    messages = [{"role": "user", "content": prompt}]
    rf = {"type": "json_object", "schema": Verdict.model_json_schema()}
    client = LLMClient(LLMSettings(model=f"local/{model}", cache=False, max_tokens=16))
    llm, lock = local.load(model)

    def forget_prefix() -> None:
        with lock:  # llama-cpp-python reuses the KV cache of a repeated prompt prefix: time the full call
            llm.reset()

    def raw() -> None:
        with lock:
            llm.create_chat_completion(messages=messages, temperature=0.0, max_tokens=16, seed=0, response_format=rf)

    def ours() -> None:
        assert client.generate(prompt, schema=Verdict).ok

    raw(), ours()  # warm up
    timings: dict[str, list[float]] = {"raw": [], "ours": []}
    for _ in range(repeats):
        for name, fn in (("raw", raw), ("ours", ours)):
            forget_prefix()
            started = time.perf_counter()
            fn()
            timings[name].append(time.perf_counter() - started)
    raw_s, ours_s = statistics.median(timings["raw"]), statistics.median(timings["ours"])
    n_tokens = len(llm.tokenize(prompt.encode()))
    print(
        f"local/{model}: ~{n_tokens}-token prompt, per call {ours_s:.2f} s via LLMClient vs {raw_s:.2f} s raw "
        f"llama_cpp (ratio {ours_s / raw_s:.2f}, median of {repeats}; load average {os.getloadavg()[0]:.1f})"
    )


def halueval_items(k: int) -> list[dict]:
    rows = [json.loads(line) for line in HALUEVAL.open()]
    yes = [r for r in rows if r["hallucination"] == "yes"][: k // 2]
    no = [r for r in rows if r["hallucination"] == "no"][: k - k // 2]
    return yes + no


JUDGE = (
    "You check answers for hallucinations. A response is hallucinated if any part of it is false, "
    "made up or not supported by facts.\n\nUser query: {query}\n\nResponse: {response}\n\n"
    'Is the response hallucinated? Reply with JSON {{"verdict": "yes"}} or {{"verdict": "no"}}.'
)


def auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    pairs = [(1.0 if p > q else 0.5 if p == q else 0.0) for p in pos for q in neg]
    return sum(pairs) / len(pairs)


def bench_judge(model: str, k: int) -> None:
    client = LLMClient(LLMSettings(model=f"local/{model}", cache=False, max_tokens=16))
    # ~800 prompt tokens, a different prompt per call: llama.cpp reuses the KV cache of a repeated prefix
    items = halueval_items(60)
    client.generate("warm up", max_tokens=4)
    times, tokens = [], []
    for i in range(3):
        response = " ".join(r["chatgpt_response"] for r in items[i * 20 : (i + 1) * 20])[:2600]
        gen = client.generate(JUDGE.format(query=items[i * 20]["user_query"], response=response), schema=Verdict)
        times.append(gen.latency_s)
        tokens.append(gen.prompt_tokens)
    print(
        f"local/{model}: ~{int(statistics.mean(tokens))}-token judge call: {statistics.median(times):.2f} s "
        f"per call (median of 3 distinct prompts)"
    )

    if k == 0:
        return
    sample = halueval_items(k)
    labels = [r["hallucination"] == "yes" for r in sample]
    prompts = [JUDGE.format(query=r["user_query"], response=r["chatgpt_response"][:1500]) for r in sample]
    started = time.perf_counter()
    gens = client.generate_many(prompts, schema=Verdict, logprobs=True, top_logprobs=10, desc=model)
    wall = time.perf_counter() - started
    greedy = [g.parsed.verdict == "yes" if g.ok else None for g in gens]
    probs = [yes_probability(g) for g in gens]
    n_ok = sum(v is not None for v in greedy)
    acc_greedy = sum(v == y for v, y in zip(greedy, labels, strict=True) if v is not None) / k
    scored = [(p, y) for p, y in zip(probs, labels, strict=True) if p is not None]
    acc_prob = sum((p >= 0.5) == y for p, y in scored) / k
    threshold = statistics.median(p for p, _ in scored) if scored else 0.5
    acc_median = sum((p >= threshold) == y for p, y in scored) / k
    print(
        f"local/{model}: HaluEval {k} items ({sum(labels)} hallucinated), {wall:.1f}s: valid JSON {n_ok}/{k}, "
        f"greedy 'yes' {sum(bool(v) for v in greedy)}/{k}, accuracy greedy {acc_greedy:.2f}, "
        f"P(yes)>=0.5 {acc_prob:.2f}, P(yes) at median split {acc_median:.2f}, "
        f"AUC {auc([p for p, _ in scored], [y for _, y in scored]):.2f} (P(yes) found {len(scored)}/{k})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=320)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--scenarios", nargs="*", help="substrings of scenario names to run (clean always runs)")
    parser.add_argument("--skip-fake", action="store_true")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--models", nargs="+", default=["smollm2-135m-instruct"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--judge", action="store_true", help="also time a ~800-token judge call and run HaluEval")
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--judge-timing-only", action="store_true", help="with --judge: skip HaluEval")
    args = parser.parse_args()
    if not args.skip_fake:
        bench_fake(args.n, args.latency, args.concurrency, args.scenarios)
    if not args.skip_local:
        for model in args.models:
            bench_local_vs_raw(model, args.repeats, long_prompt=False)
            bench_local_vs_raw(model, args.repeats, long_prompt=True)
            if args.judge:
                bench_judge(model, 0 if args.judge_timing_only else args.items)


if __name__ == "__main__":
    main()
