"""Local inference throughput: the serial provider path vs the batch engine, on the default run's calls.

Builds real default-run work from `configs/full.yaml` and the bundled corpus: synthetic pairs
(`testset.build_prompt` on sampled chunks, the testset generator), RAG answers to those questions
(`BuiltinRAG` as configured: hybrid retrieval, top 3, 2400 context characters, the 0.5B generator,
answer logprobs) and the faithfulness judge on those answers (the configured judge: the 1.5B model,
the answer's sentences as statements, one batched verification call per item, logprobs for
P(supported)). Each stage runs through the product's own code (`LLMClient.generate_many`, the judge
engine), once on the serial path (`local.SERIAL`, concurrency 1: what ragwatch did before) and once
on the batch engine (concurrency = slots), alternating which goes first round by round in one
process, so that load on a shared machine hits both alike. No LLM cache.

Prints per stage and path: items per minute and the ratio new/old per round, prompt vs generated
tokens per call, prompt-eval and decode tokens/s, where the time goes (prompt processing, decoding,
sampling with the grammar, logprobs, the rest: Python, litellm, templating), and whether the replies
and verdicts agree; then peak RSS.

    python -m benchmarks local_throughput [--items 12] [--rounds 2] [--slots 4] [--stages pairs answers judge]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("RAGWATCH_CACHE_DIR", tempfile.mkdtemp(prefix="ragwatch-bench-"))

STAGES = ("pairs", "answers", "judge")


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Timing:
    """One stage on one path, summed over rounds."""

    walls: list[float] = field(default_factory=list)  # per round
    items: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_prompt_tokens: int = 0  # prompt tokens actually read (prefix reuse excluded)
    prompt_s: float = 0.0
    decode_s: float = 0.0
    decode_steps: int = 0
    sample_s: float = 0.0
    logprob_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def wall(self) -> float:
        return sum(self.walls)


class SerialProbe:
    """Counters of the serial path: llama.cpp's perf data of the context plus timed sampling."""

    sample_s = 0.0  # every serial sampling call (grammar, greedy, the logprob recorder inside it)
    logprob_s = 0.0
    _patched = False

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        if not SerialProbe._patched:
            SerialProbe._patch(type(llm))

    @staticmethod
    def _patch(cls: Any) -> None:
        from ragwatch.llm import local

        original_sample = cls.sample
        original_record = local.LogprobRecorder.__call__

        def sample(this: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original_sample(this, *args, **kwargs)
            finally:
                SerialProbe.sample_s += time.perf_counter() - started

        def record(this: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original_record(this, *args, **kwargs)
            finally:
                SerialProbe.logprob_s += time.perf_counter() - started

        cls.sample = sample
        local.LogprobRecorder.__call__ = record
        SerialProbe._patched = True

    def reset(self) -> None:
        import llama_cpp

        llama_cpp.llama_perf_context_reset(self.llm.ctx)
        SerialProbe.sample_s = SerialProbe.logprob_s = 0.0

    def read(self) -> dict[str, float]:
        import llama_cpp

        perf = llama_cpp.llama_perf_context(self.llm.ctx)
        return {"prompt_s": perf.t_p_eval_ms / 1000, "prompt_n": perf.n_p_eval, "decode_s": perf.t_eval_ms / 1000,
                "decode_n": perf.n_eval, "sample_s": SerialProbe.sample_s - SerialProbe.logprob_s,
                "logprob_s": SerialProbe.logprob_s}


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        from ragwatch.corpus.chunking import chunk_documents
        from ragwatch.corpus.documents import load_documents
        from ragwatch.evalset.synthetic import sample_chunks
        from ragwatch.indexing.embeddings import get_embedder
        from ragwatch.indexing.index import Index
        from ragwatch.preflight import preflight

        self.args = args
        self.config = config = preflight("full", ROOT / "configs" / "full.yaml")
        started = time.perf_counter()
        documents = load_documents(config.ingest.corpus.paths).documents
        self.embedder = get_embedder(config.ingest.embedding)
        chunks = chunk_documents(documents, config.ingest.chunking, self.embedder.count_tokens,
                                 self.embedder.max_input_tokens)
        self.index = Index.build(chunks, self.embedder, bm25=config.ingest.bm25)
        settings = config.testset.testset.model_copy(update={"n_chunks": args.items})
        self.testset_settings = settings
        self.chunks, _ = sample_chunks(self.index.chunks, settings, self.embedder.count_tokens)
        print(f"setup: {len(documents)} documents, {len(chunks)} chunks, {len(self.chunks)} sampled, "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        self.samples: list[Any] = []
        self.answers: list[Any] = []
        self.timings: dict[tuple[str, str], Timing] = {}
        self.agreement: dict[str, list[str]] = {}
        self.baseline: dict[str, list[str]] = {}
        self.probes: dict[str, SerialProbe] = {}
        self.rss: dict[str, float] = {"after setup": rss_mb()}

    # ------------------------------------------------------------------------------- clients
    def client(self, settings: Any, path: str) -> Any:
        from ragwatch.llm import LLMClient, local

        name = settings.model.removeprefix("local/")
        local.SERIAL = path == "old"
        concurrency = 1 if path == "old" else self.args.slots
        client = LLMClient(settings.model_copy(update={"cache": False, "concurrency": concurrency}))
        llm, _ = local.load(name)
        if name not in self.probes:
            self.probes[name] = SerialProbe(llm)
            self.rss[f"{name}: model loaded"] = rss_mb()
        if path == "new" and local.engine(name) is not None and f"{name}: engine" not in self.rss:
            self.rss[f"{name}: engine"] = rss_mb()
        return client

    # -------------------------------------------------------------------------------- stages
    def run_stage(self, stage: str, path: str, items: slice) -> tuple[list[Any], float, dict[str, Any]]:
        """One stage on one path for `items`; returns (outputs, wall, counters)."""
        from ragwatch.llm import local

        settings = {"pairs": self.config.testset.generator, "answers": self.config.evaluate.system.generator,
                    "judge": self.config.evaluate.judges.llm}[stage]
        client = self.client(settings, path)
        name = settings.model.removeprefix("local/")
        probe = self.probes[name]
        probe.reset()
        engine = local.engine(name) if path == "new" else None
        mark = engine.stats.since(type(engine.stats)()) if engine is not None else None
        cpu0 = sum(os.times()[:2])
        started = time.perf_counter()
        outputs = getattr(self, f"_{stage}")(client, items)
        wall = time.perf_counter() - started
        cpu = sum(os.times()[:2]) - cpu0
        usage = client.usage
        counters: dict[str, Any] = {"calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
                                    "completion_tokens": usage.completion_tokens, "cpu_s": cpu}
        if engine is not None and mark is not None:
            delta = engine.stats.since(mark)
            counters.update(prompt_s=delta.prompt_step_s, decode_s=delta.decode_step_s,
                            decode_steps=delta.decode_steps, sample_s=delta.sample_s, logprob_s=delta.logprob_s,
                            evaluated=delta.prompt_tokens - delta.reused_tokens)
        else:
            perf = probe.read()
            counters.update(prompt_s=perf["prompt_s"], decode_s=perf["decode_s"], decode_steps=perf["decode_n"],
                            sample_s=perf["sample_s"], logprob_s=perf["logprob_s"], evaluated=perf["prompt_n"])
        return outputs, wall, counters

    def _pairs(self, client: Any, items: slice) -> list[Any]:
        from ragwatch.evalset.synthetic import build_prompt, kinds_for, qa_schema

        settings = self.testset_settings
        picked = list(enumerate(self.chunks))[items]
        return client.generate_many([build_prompt(c, kinds_for(i, settings)) for i, c in picked],
                                    schema=qa_schema(settings.questions_per_chunk), desc="pairs",
                                    max_tokens=settings.max_tokens)

    def _answers(self, client: Any, items: slice) -> list[Any]:
        from ragwatch.rag import BuiltinRAG

        rag = BuiltinRAG(self.index, self.embedder, client, self.config.evaluate.system.rag)
        return rag.answer_many([s.question for s in self.samples[items]])

    def _judge(self, client: Any, items: slice) -> list[Any]:
        from ragwatch.judges.config import build_judges

        config = self.config.evaluate.judges.model_copy(update={"enabled": ["faithfulness"]})
        (judge,) = build_judges(config, client, embedder=self.embedder)
        return judge.evaluate(self.samples[items], self.answers[items]).items

    # ---------------------------------------------------------------------------------- run
    def run(self) -> None:
        from ragwatch.evalset.synthetic import kinds_for, pairs_from_generation

        if "pairs" not in self.args.stages:
            raise SystemExit("the answer and judge stages need the pairs stage's questions")
        n = len(self.chunks)
        for stage in self.args.stages:
            outputs: dict[str, list[Any]] = {"old": [], "new": []}
            for r in range(self.args.rounds):
                order = ("old", "new") if r % 2 == 0 else ("new", "old")
                walls = {}
                for path in order:
                    out, wall, counters = self.run_stage(stage, path, slice(0, n))
                    walls[path] = wall
                    self.add(stage, path, wall, len(out), counters)
                    if r == 0:
                        outputs[path] = out
                print(f"{stage} round {r + 1}: old {walls['old']:.0f} s, new {walls['new']:.0f} s, "
                      f"ratio {walls['old'] / walls['new']:.2f}x", file=sys.stderr, flush=True)
            self.agreement[stage] = self.compare(stage, outputs["old"], outputs["new"])
            if self.args.baseline and stage in ("answers", "judge"):
                # the serial path against itself with another call history (items in reverse order):
                # its logits depend on which prefix the previous call left in the cache
                again, _, _ = self.run_stage(stage, "old", slice(None, None, -1))
                self.baseline[stage] = self.compare(stage, outputs["old"], list(reversed(again)))
            if stage == "pairs":
                self.samples = []
                for i, (chunk, gen) in enumerate(zip(self.chunks, outputs["old"], strict=True)):
                    if gen.ok:
                        self.samples += pairs_from_generation(chunk, kinds_for(i, self.testset_settings), gen,
                                                              self.testset_settings.seed)[:1]
                self.samples = self.samples[:n]
            if stage == "answers":
                self.answers = outputs["old"]

    def add(self, stage: str, path: str, wall: float, items: int, c: dict[str, Any]) -> None:
        t = self.timings.setdefault((stage, path), Timing())
        t.walls.append(wall)
        t.items += items
        t.calls += c["calls"]
        t.prompt_tokens += c["prompt_tokens"]
        t.completion_tokens += c["completion_tokens"]
        t.evaluated_prompt_tokens += c["evaluated"]
        t.prompt_s += c["prompt_s"]
        t.decode_s += c["decode_s"]
        t.decode_steps += c["decode_steps"]
        t.sample_s += c["sample_s"]
        t.logprob_s += c["logprob_s"]
        t.cpu_s += c["cpu_s"]

    def compare(self, stage: str, old: list[Any], new: list[Any]) -> list[str]:
        if stage == "pairs":
            same = sum(a.text == b.text for a, b in zip(old, new, strict=True))
            return [f"identical replies {same}/{len(old)}"]
        if stage == "answers":
            same = sum(a.answer == b.answer for a, b in zip(old, new, strict=True))
            diffs = [abs(a.mean_logprob - b.mean_logprob) for a, b in zip(old, new, strict=True)
                     if a.mean_logprob is not None and b.mean_logprob is not None and a.answer == b.answer]
            return [f"identical answers {same}/{len(old)}",
                    f"mean token logprob |diff| on identical answers: max {max(diffs, default=0):.2e}"]
        verdicts = same_items = statements = 0
        p_diffs: list[float] = []
        for a, b in zip(old, new, strict=True):
            from ragwatch.statements import statement_verdicts

            va, vb = statement_verdicts(a.details), statement_verdicts(b.details)
            same_items += [v.reason for v in va] == [v.reason for v in vb] and a.score == b.score
            for x, y in zip(va, vb, strict=False):
                statements += 1
                verdicts += x.verdict == y.verdict
                if x.p_supported is not None and y.p_supported is not None:
                    p_diffs.append(abs(x.p_supported - y.p_supported))
        return [f"identical judge replies (reasons and score) {same_items}/{len(old)} items",
                f"identical verdicts at the cut-off {verdicts}/{statements} statements",
                f"P(supported) |diff|: max {max(p_diffs, default=0):.3f}, "
                f"median {statistics.median(p_diffs) if p_diffs else 0:.4f}"]

    # -------------------------------------------------------------------------------- report
    def report(self) -> None:
        print(f"\n{os.cpu_count()} cores, {self.args.items} items per stage, {self.args.rounds} rounds "
              f"(old/new alternating), batch engine with {self.args.slots} slots, load average at the end "
              f"{os.getloadavg()[0]:.1f}")
        print("\n| stage | path | items/min | ratio new/old (per round) | tokens/call: prompt (read) -> generated "
              "| prompt read tok/s | decode tok/s | decode steps (seqs/step) | CPU s/item |")
        print("|---|---|---|---|---|---|---|---|---|")
        for stage in self.args.stages:
            old, new = self.timings[(stage, "old")], self.timings[(stage, "new")]
            ratios = [o / w for o, w in zip(old.walls, new.walls, strict=True)]
            for path, t in (("old", old), ("new", new)):
                per_min = t.items / t.wall * 60
                ratio = (f"**{old.wall / new.wall:.2f}x** ({', '.join(f'{r:.2f}' for r in ratios)}; "
                         f"median {statistics.median(ratios):.2f})" if path == "new" else "")
                seqs = t.completion_tokens / t.decode_steps if t.decode_steps else 0
                read = t.evaluated_prompt_tokens / max(t.prompt_s, 1e-9)
                print(f"| {stage} | {path} | {per_min:.2f} | {ratio} | {t.prompt_tokens / t.calls:.0f} "
                      f"({t.evaluated_prompt_tokens / t.calls:.0f}) -> "
                      f"{t.completion_tokens / t.calls:.0f} | {read:.0f} | "
                      f"{t.completion_tokens / max(t.decode_s, 1e-9):.1f} | {t.decode_steps} ({seqs:.2f}) | "
                      f"{t.cpu_s / t.items:.1f} |")
        print("\nWhere the time goes (share of the stage's wall time):")
        print("| stage | path | s/item | prompt reading | decoding | sampling + grammar | logprobs | rest |")
        print("|---|---|---|---|---|---|---|---|")
        for stage in self.args.stages:
            for path in ("old", "new"):
                t = self.timings[(stage, path)]
                parts = [t.prompt_s, t.decode_s, t.sample_s, t.logprob_s]
                rest = t.wall - sum(parts)
                print(f"| {stage} | {path} | {t.wall / t.items:.2f} | "
                      + " | ".join(f"{p / t.wall:.0%}" for p in [*parts, rest]) + " |")
        print("\nEquivalence (first round, old vs new on the same inputs):")
        for stage, lines in self.agreement.items():
            print(f"- {stage}: " + "; ".join(lines))
        if self.baseline:
            print("\nFor scale, the serial path against itself, items in reverse order (another cache history):")
            for stage, lines in self.baseline.items():
                print(f"- {stage}: " + "; ".join(lines))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\nMemory: peak RSS {peak:.0f} MB; RSS "
              + ", ".join(f"{k} {v:.0f} MB" for k, v in self.rss.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=12, help="chunks sampled = pairs = answers = judged items")
    parser.add_argument("--rounds", type=int, default=2, help="old/new runs per stage, alternating the order")
    parser.add_argument("--slots", type=int, default=4, help="requests the batch engine decodes together")
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    parser.add_argument("--baseline", action="store_true",
                        help="also run the serial path on the items in reverse order (how much its own replies move)")
    args = parser.parse_args()
    from ragwatch.llm import local

    local.MAX_SLOTS = max(local.MAX_SLOTS, args.slots)
    bench = Bench(args)
    try:
        bench.run()
        bench.report()
    finally:
        local.close_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
