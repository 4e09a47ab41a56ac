"""Does `monitor` find planted drift and leave no-drift alone? A generated log, measured.

The log: questions written from passages of the bundled sample corpus (a content sentence of a chunk
turned into a question; its page is the relevant document, the sentence the reference answer), answered
by the built-in system (BM25 retrieval over the sample corpus, top 3, the default prompt) with the
extractive stand-in generator of benchmarks/gate_power.py behind tests/fake_llm_server.py (it answers
with the context sentence that best matches the question: cheap and deterministic). Planted worse
systems: "invents" (the same retrieval, a generator that adds an invented sentence to every answer)
and "fewer contexts" (top 1 instead of 3).

Measured with the monitor's own code (`evaluate_logged` on the system-as-run metrics, no judge;
`compare_windows`: unpaired, Bonferroni over the metrics):
- false alarms: 20 seeded repetitions of two windows of the same system with different questions;
  a repetition is a false alarm when any metric reads "drift"; "no drift" when every metric does;
- power: 20 seeded repetitions of a same-system window against a planted worse window: the share
  that reads "drift (worse)" on the metrics that should move.

`--write-logs DIR` also writes the monitor's sample log (6 days, the last one "invents", system
version v2) in the three formats: answers.jsonl, answers.csv, spans.jsonl (OpenInference) and
langfuse.json, as shipped in data/sample/logs/.

Usage:
    python benchmarks/drift.py                       # ~3 min: figures for n = 250 answers per window
    python benchmarks/drift.py --n 100 --reps 20
    python benchmarks/drift.py --reps 0 --write-logs data/sample/logs   # the sample log only, ~1 min
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

from fake_llm_server import FakeLLMServer  # noqa: E402
from gate_power import extractive_reply  # noqa: E402

from ragwatch.corpus.chunking import ChunkingSettings, chunk_documents  # noqa: E402
from ragwatch.corpus.documents import load_documents  # noqa: E402
from ragwatch.indexing.index import Index  # noqa: E402
from ragwatch.judges import JudgesConfig  # noqa: E402
from ragwatch.llm.client import LLMClient  # noqa: E402
from ragwatch.llm.types import LLMSettings  # noqa: E402
from ragwatch.logs.drift import compare_windows  # noqa: E402
from ragwatch.logs.evaluate import evaluate_logged, log_samples  # noqa: E402
from ragwatch.logs.records import LogContext, LogRecord  # noqa: E402
from ragwatch.logs.settings import DriftSettings  # noqa: E402
from ragwatch.rag import BuiltinRAG, RagSettings  # noqa: E402
from ragwatch.retrieval import MatchSettings  # noqa: E402
from ragwatch.types import Chunk, RagAnswer  # noqa: E402

CORPUS = ROOT / "data" / "sample" / "zenml_docs"
# an invented sentence added to an answer lowers its grounding; the reference's words are still all there
SHOULD_MOVE = {"invents": ["answer/context_support"],
               "fewer contexts": ["system/context_recall", "system/hit_rate"]}
INVENTED = ("It also needs the Zephyr orchestration plugin version 7, which ships only with the enterprise "
            "edition and runs on Mondays.")
LAST_DAY = datetime(2026, 11, 20, tzinfo=UTC)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]{3,}")


class _NoVectors:
    """BM25 retrieval needs no embedding: a constant vector keeps `Index.build` happy."""

    identity = "none"
    dim = 4
    max_input_tokens = 10_000

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.full((len(texts), self.dim), 0.5, dtype=np.float32)


def inventing_reply(body: dict[str, Any]) -> str:
    return extractive_reply(body) + " " + INVENTED


def corpus_index() -> Index:
    embedder = _NoVectors()
    docs = load_documents([str(CORPUS)], root=CORPUS).documents
    chunks = chunk_documents(docs, ChunkingSettings(max_tokens=220, overlap_tokens=20), embedder.count_tokens,
                             max_window=embedder.max_input_tokens)
    return Index.build(chunks, embedder)  # type: ignore[arg-type]


def questions(chunks: list[Chunk], seed: int = 0, per_chunk: int = 3) -> list[tuple[str, str, str]]:
    """(question, reference sentence, relevant page) from up to `per_chunk` content sentences of each chunk."""
    rng = random.Random(seed)
    out = []
    for chunk in chunks:
        sentences = [s.strip() for s in _SENTENCE.split(chunk.text.replace("\n", " "))
                     if 8 <= len(s.split()) <= 40 and not s.strip().startswith(("|", "#", "`", "!", "<"))]
        for sentence in rng.sample(sentences, min(per_chunk, len(sentences))):
            words = _WORD.findall(sentence)
            if len(words) < 4:
                continue
            start = rng.randrange(0, max(1, len(words) - 5))
            out.append((f"What does the documentation say about {' '.join(words[start:start + 5]).lower()}?",
                        sentence, chunk.source))
    rng.shuffle(out)
    return out


def answer_all(index: Index, qs: list[tuple[str, str, str]], reply, top_k: int) -> list[RagAnswer]:
    with FakeLLMServer(responder=reply) as server:
        llm = LLMClient(LLMSettings(model="openai/extractive", api_base=server.base_url, cache=False,
                                    max_tokens=120, concurrency=8))
        rag = BuiltinRAG(index, None, llm, RagSettings(retrieval_mode="bm25", top_k=top_k))
        return rag.answer_many([q for q, _, _ in qs])


def records(qs: list[tuple[str, str, str]], answers: list[RagAnswer], day: datetime, version: str,
            prefix: str) -> list[LogRecord]:
    rng = random.Random(f"{prefix}{day}")
    out = []
    for i, ((question, reference, page), answer) in enumerate(zip(qs, answers, strict=True)):
        feedback = None
        if rng.random() < 0.3:  # three users in ten click a thumb; an invented sentence annoys some
            up = rng.random() < (0.55 if INVENTED in answer.answer else 0.75)
            feedback = {"kind": "thumbs", "value": float(up)}
        out.append(LogRecord(
            trace_id=f"{prefix}-{day:%Y%m%d}-{i:04d}", question=question, answer=answer.answer,
            contexts=[LogContext(text=c.text, id=c.chunk_id, source=c.source) for c in answer.contexts],
            timestamp=day + timedelta(seconds=int(86_399 * (i + 0.5) / len(qs))), reference_answer=reference,
            system_version=version, relevant=[page], feedback=feedback))
    return out


def metrics_of(recs: list[LogRecord]):
    return evaluate_logged(log_samples(recs), JudgesConfig(enabled=[]), MatchSettings(on="auto")).metrics


def repetitions(pool: list[LogRecord], other: list[LogRecord] | None, n: int, reps: int, drift: DriftSettings
                ) -> list[dict[str, tuple[str, str]]]:
    """Per repetition: metric -> (verdict, direction) of window B against window A (n answers each)."""
    out = []
    for seed in range(reps):
        rng = random.Random(seed)
        if other is None:
            drawn = rng.sample(pool, 2 * n)  # two windows of the same system, different questions
            a, b = drawn[:n], drawn[n:]
        else:
            a, b = rng.sample(pool, n), rng.sample(other, n)
        cmp = compare_windows(metrics_of(b), metrics_of(a), drift)
        out.append({r.metric: (r.verdict, r.direction) for r in cmp.rows})
    return out


def write_logs(directory: Path, days: list[list[LogRecord]]) -> None:
    """The log in the three formats the monitor reads."""
    directory.mkdir(parents=True, exist_ok=True)
    flat = [r for day in days for r in day]

    def row(r: LogRecord) -> dict[str, Any]:
        return {"trace_id": r.trace_id, "timestamp": r.timestamp.isoformat().replace("+00:00", "Z"),
                "question": r.question, "answer": r.answer,
                "contexts": [{"text": c.text, "id": c.id, "source": c.source} for c in r.contexts],
                "reference_answer": r.reference_answer, "system_version": r.system_version, "relevant": r.relevant,
                "feedback": None if r.feedback is None else ("up" if r.feedback.value else "down")}

    with (directory / "answers.jsonl").open("w", encoding="utf-8") as out:
        for r in flat:
            out.write(json.dumps(row(r)) + "\n")
    with (directory / "answers.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(row(flat[0])))
        writer.writeheader()
        for r in flat:
            writer.writerow({k: json.dumps(v) if isinstance(v, list) else ("" if v is None else v)
                             for k, v in row(r).items()})
    with (directory / "spans.jsonl").open("w", encoding="utf-8") as out:
        for r in flat:
            for span in _spans(r, row(r)):
                out.write(json.dumps(span) + "\n")
    traces = [_langfuse(r, row(r)) for r in flat]
    (directory / "langfuse.json").write_text(json.dumps({"data": traces}), encoding="utf-8")


def _spans(r: LogRecord, row: dict[str, Any]) -> list[dict[str, Any]]:
    tid = r.trace_id.encode().hex()[:32].ljust(32, "0")
    meta = {"system_version": r.system_version, "reference_answer": r.reference_answer, "feedback": row["feedback"]}
    root = {"name": "query", "span_kind": "CHAIN", "parent_id": None, "start_time": row["timestamp"],
            "context.trace_id": tid, "context.span_id": tid[:16], "attributes.input.value": r.question,
            "attributes.output.value": r.answer, "attributes.metadata": json.dumps(meta)}
    retriever = {"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": tid[:16], "start_time": row["timestamp"],
                 "context.trace_id": tid, "context.span_id": tid[16:] + "r", "attributes.input.value": r.question}
    for i, c in enumerate(r.contexts):
        retriever[f"attributes.retrieval.documents.{i}.document.content"] = c.text
        retriever[f"attributes.retrieval.documents.{i}.document.id"] = c.id
        retriever[f"attributes.retrieval.documents.{i}.document.metadata"] = json.dumps({"source": c.source})
    llm = {"name": "generate", "span_kind": "LLM", "parent_id": tid[:16], "start_time": row["timestamp"],
           "context.trace_id": tid, "context.span_id": tid[16:] + "g", "attributes.output.value": r.answer,
           "attributes.llm.model_name": "extractive"}
    return [root, retriever, llm]


def _langfuse(r: LogRecord, row: dict[str, Any]) -> dict[str, Any]:
    observations = [
        {"id": f"{r.trace_id}-r", "traceId": r.trace_id, "type": "RETRIEVER", "name": "retrieve",
         "startTime": row["timestamp"], "input": {"query": r.question},
         "output": [{"page_content": c.text, "metadata": {"source": c.source, "id": c.id}} for c in r.contexts]},
        {"id": f"{r.trace_id}-g", "traceId": r.trace_id, "type": "GENERATION", "name": "generate",
         "startTime": row["timestamp"], "model": "extractive", "output": {"role": "assistant", "content": r.answer}},
    ]
    scores = [] if r.feedback is None else [{"name": "user_feedback", "dataType": "BOOLEAN", "value": r.feedback.value}]
    return {"id": r.trace_id, "timestamp": row["timestamp"], "name": "rag", "input": {"question": r.question},
            "output": {"answer": r.answer}, "version": r.system_version, "observations": observations,
            "scores": scores, "metadata": {"reference_answer": r.reference_answer}}


def measure(index: Index, qs: list[tuple[str, str, str]], args: argparse.Namespace) -> None:
    """False alarms and power (module docstring), printed."""
    started = time.perf_counter()
    need = 2 * args.n
    if len(qs) < need + args.n:
        raise SystemExit(f"only {len(qs)} questions in the corpus; use a smaller --n (at most {len(qs) // 3})")
    same_qs, worse_qs = qs[:need], qs[need:need + args.n]
    day = LAST_DAY
    base = records(same_qs, answer_all(index, same_qs, extractive_reply, 3), day, "v1", "base")
    planted = {
        "invents": records(worse_qs, answer_all(index, worse_qs, inventing_reply, 3), day, "v2", "inv"),
        "fewer contexts": records(worse_qs, answer_all(index, worse_qs, extractive_reply, 1), day, "v2", "k1"),
    }
    print(f"{len(qs)} questions from {len(index.chunks)} chunks of {CORPUS.relative_to(ROOT)}; "
          f"{len(base)} + 2 x {args.n} answers generated in {time.perf_counter() - started:.0f} s (0 LLM judge calls)")
    drift = DriftSettings(tolerance=args.tolerance)
    null = repetitions(base, None, args.n, args.reps, drift)
    alarms = sum(any(v == "drift" for v, _ in rep.values()) for rep in null)
    clean = sum(all(v == "no drift" for v, _ in rep.values()) for rep in null)
    metrics = sorted(null[0])
    print(f"\nsame system, different questions: n = {args.n} per window, {args.reps} repetitions, "
          f"tolerance {args.tolerance:g} of each metric's scale, 95% per window (Bonferroni over {len(metrics)})")
    print(f"  false alarms (any metric 'drift'): {alarms}/{args.reps}")
    print(f"  every metric 'no drift':           {clean}/{args.reps}")
    for m in metrics:
        counts = {v: sum(rep[m][0] == v for rep in null) for v in ("drift", "no drift", "undecided")}
        print(f"    {m:<28} " + ", ".join(f"{k} {c}" for k, c in counts.items()))
    for name, worse in planted.items():
        runs = repetitions(base, worse, args.n, args.reps, drift)
        print(f"\nplanted '{name}' (v2) vs the same system: power = share of {args.reps} repetitions reading "
              "'drift (worse)'")
        for m in metrics:
            hits = sum(rep[m] == ("drift", "worse") for rep in runs)
            other = sum(rep[m][0] == "drift" and rep[m][1] != "worse" for rep in runs)
            mark = "  <- should move" if m in SHOULD_MOVE[name] else ""
            print(f"    {m:<28} {hits}/{args.reps}" + (f" (better: {other})" if other else "") + mark)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=250, help="answers per window (default 250)")
    parser.add_argument("--reps", type=int, default=20, help="seeded repetitions (default 20; 0: measure nothing)")
    parser.add_argument("--tolerance", type=float, default=DriftSettings().tolerance)
    parser.add_argument("--write-logs", type=Path, help="also write the 6-day sample log in three formats here")
    parser.add_argument("--per-day", type=int, default=90, help="answers per day of the written log (default 90)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    index = corpus_index()
    qs = questions(index.chunks)
    if args.reps > 0:
        measure(index, qs, args)
    if args.write_logs:
        per_day = args.per_day
        pool = qs[: per_day * 6]
        days = []
        for d in range(6):
            chunk = pool[d * per_day:(d + 1) * per_day]
            when = LAST_DAY - timedelta(days=5 - d)
            if d < 5:
                days.append(records(chunk, answer_all(index, chunk, extractive_reply, 3), when, "v1", "log"))
            else:
                days.append(records(chunk, answer_all(index, chunk, inventing_reply, 3), when, "v2", "log"))
        write_logs(args.write_logs, days)
        print(f"\nwrote {sum(len(d) for d in days)} answers over 6 days (the last: v2, 'invents') to {args.write_logs}")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
