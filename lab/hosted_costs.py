"""What the default evaluation costs on hosted models: estimated vs recorded tokens and dollars,
online vs batch, and the batch wall time.

`python run.py full` runs twice, in subprocesses, on the bundled default config with every LLM role
on `openai/gpt-4o-mini` (litellm's prices) served by the fake OpenAI-compatible server
(`tests/fake_llm_server.py`: usage counted with gpt-4o-mini's own tokenizer, replies written from
the prompt's passage, so reply lengths are those of short real answers):

1. online, a fresh LLM cache: the estimate made before it (no history: replies at max_tokens, an
   upper bound) vs what the run recorded;
2. `batch: true` on every role, a fresh LLM cache: the estimate made before it (now with the usage
   history of run 1) vs what the run recorded; its cost vs the online run's; its wall time.

Usage:
    python -m lab.hosted_costs                  # about 5-10 minutes on 2 busy cores
    python -m lab.hosted_costs --batch-delay 5  # seconds each fake batch stays in progress
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORK = Path(tempfile.mkdtemp(prefix="ragwatch-hosted-costs-"))
os.environ["RAGWATCH_CACHE_DIR"] = str(WORK / "shared")  # the usage history and chunk cache: shared by runs
os.environ["ZENML_CONFIG_PATH"] = str(WORK / "zenml")

from ragwatch.config import FullConfig  # noqa: E402
from ragwatch.config_loader import load_config  # noqa: E402
from ragwatch.estimate import Estimate, estimate_pipeline, format_estimate  # noqa: E402
from ragwatch.llm.history import StageRecord, read_history  # noqa: E402
from tests.fake_llm_server import FakeLLMServer, _schema_of, last_user_text, schema_reply  # noqa: E402

MODEL = "openai/gpt-4o-mini"
ROLES = {"testset": ("testset", "generator", 400), "system": ("evaluate", "system", "generator", 160),
         "judges": ("evaluate", "judges", "llm", 384)}
SENTENCE = re.compile(r"[^.!?\n]{30,300}[.!?]")


def tokens(text: str) -> int:
    import litellm

    return litellm.token_counter(model="gpt-4o-mini", text=text)


def _sentences(text: str) -> list[str]:
    body = "\n".join(line for line in text.splitlines()
                     if not line.startswith(("[", "```", "Passage", "Question", "Answer", "Reply", "Rules", "-")))
    return [s.strip() for s in SENTENCE.findall(body)] or ["The documentation describes it."]


def responder(body: dict[str, Any]) -> str:
    """Replies shaped like a real model's: questions and answers from the passage, short answers
    from the context, and schema-valid verdicts for the judges."""
    text = last_user_text(body)
    schema = _schema_of(body) or {}
    props = schema.get("properties", {})
    sentences = _sentences(text)
    if "pairs" in props:
        words = re.findall(r"[A-Za-z][\w-]+", sentences[0])[:6]
        pair = {"question": f"What does the documentation say about {' '.join(words)}?",
                "answer": sentences[0][:300]}
        return json.dumps({"pairs": [pair]})
    if set(props) == {"answer"}:
        return json.dumps({"answer": " ".join(sentences[:2])[:600]})
    if not schema:
        return " ".join(sentences[:3])
    return schema_reply(body)


def write_config(server: FakeLLMServer, cache: Path, batch: bool) -> Path:
    llm = {"model": MODEL, "api_base": server.base_url, "concurrency": 8, "cache_dir": str(cache),
           "batch": batch, "batch_poll_s": 0.5}
    config = {"include": [str(ROOT / "configs" / "full.yaml")], "reports_dir": str(WORK / "reports"),
              "testset": {"generator": {**llm, "max_tokens": 400}},
              "evaluate": {"system": {"generator": {**llm, "max_tokens": 160}},
                           "judges": {"llm": {**llm, "max_tokens": 384}}}}
    path = WORK / f"hosted-{'batch' if batch else 'online'}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run(config: Path) -> tuple[float, list[StageRecord], str]:
    started_at, started = time.time(), time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "full", "--no-cache", "--config", str(config)],
                          capture_output=True, text=True, env={**os.environ}, cwd=WORK)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"run.py failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return seconds, read_history(since=started_at), done.stdout


def totals(records: list[StageRecord]) -> tuple[int, int, int, float]:
    return (sum(r.calls for r in records), sum(r.prompt_tokens for r in records),
            sum(r.completion_tokens for r in records), sum(r.cost_usd for r in records))


def compare(title: str, estimate: Estimate, records: list[StageRecord]) -> dict[str, float]:
    """Per stage and in total: estimated vs recorded calls, tokens and dollars, with the error."""
    print(f"\n{title}")
    print(f"{'stage':<34} {'calls est/rec':>14} {'in tok est/rec':>18} {'out tok est/rec':>17} "
          f"{'cost est/rec':>20} {'cost err':>9}")
    stages = list(dict.fromkeys([r.stage for r in estimate.rows] + [r.stage for r in records]))
    for stage in stages:
        est = [r for r in estimate.rows if r.stage == stage]
        rec = [r for r in records if r.stage == stage]
        e = (sum(r.calls for r in est), sum(r.prompt_tokens for r in est), sum(r.completion_tokens for r in est),
             sum(r.cost_usd for r in est))
        a = totals(rec)
        err = f"{(e[3] - a[3]) / a[3]:+.1%}" if a[3] else "n/a"
        print(f"{stage[:34]:<34} {f'{e[0]}/{a[0]}':>14} {f'{e[1]}/{a[1]}':>18} {f'{e[2]}/{a[2]}':>17} "
              f"{f'${e[3]:.4f}/${a[3]:.4f}':>20} {err:>9}")
    a = totals(records)
    e_tokens = sum(r.prompt_tokens + r.completion_tokens for r in estimate.rows)
    out = {"tokens_error": (e_tokens - (a[1] + a[2])) / (a[1] + a[2]), "cost_error": (estimate.cost_usd - a[3]) / a[3],
           "estimated_usd": estimate.cost_usd, "recorded_usd": a[3]}
    print(f"{'TOTAL':<34} {f'{sum(r.calls for r in estimate.rows)}/{a[0]}':>14} "
          f"{f'{sum(r.prompt_tokens for r in estimate.rows)}/{a[1]}':>18} "
          f"{f'{sum(r.completion_tokens for r in estimate.rows)}/{a[2]}':>17} "
          f"{f'${estimate.cost_usd:.4f}/${a[3]:.4f}':>20} {out['cost_error']:>+9.1%}")
    print(f"tokens (in + out): estimate {out['tokens_error']:+.1%} vs recorded; cost {out['cost_error']:+.1%}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-delay", type=float, default=3.0, help="seconds a fake batch stays in progress")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per online call of the fake server")
    args = parser.parse_args()
    with FakeLLMServer(responder=responder, token_counter=tokens, latency_s=args.latency,
                       batch_delay_s=args.batch_delay, lifetime_s=3600) as server:
        results = {}
        for name, batch in (("online", False), ("batch", True)):
            config_path = write_config(server, WORK / f"llm-cache-{name}", batch)
            config = load_config(config_path, FullConfig)
            estimate = estimate_pipeline("full", config)
            print(f"\n=== {name} run ===\n{format_estimate(estimate)}")
            server.reset_counts()
            seconds, records, _ = run(config_path)
            basis = "history of the online run" if batch else "no history: replies at max_tokens"
            results[name] = {**compare(f"{name}: estimate ({basis}) vs recorded", estimate, records),
                             "seconds": seconds, "chat_calls": server.calls, "batches": len(server.batches),
                             "batch_wall_s": sum(r.wall_s for r in records if r.batch)}
    online, batch = results["online"], results["batch"]
    print("\n=== summary ===")
    print(f"online: recorded ${online['recorded_usd']:.4f} in {online['seconds']:.0f} s "
          f"({online['chat_calls']} chat calls); estimate {online['cost_error']:+.1%} (no history, upper bound)")
    print(f"batch:  recorded ${batch['recorded_usd']:.4f} in {batch['seconds']:.0f} s ({batch['batches']} batches, "
          f"{batch['chat_calls']} chat calls, {batch['batch_wall_s']:.0f} s waiting on batches at "
          f"{args.batch_delay:g} s each); estimate tokens {batch['tokens_error']:+.1%}, "
          f"cost {batch['cost_error']:+.1%}")
    print(f"batch / online recorded cost: {batch['recorded_usd'] / online['recorded_usd']:.3f}")
    print(f"(work directory: {WORK})")


if __name__ == "__main__":
    main()
