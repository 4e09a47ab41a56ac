"""Does `monitor` find planted drift and leave no-drift alone, and how many answers per window does
that take? A generated log, measured at several window sizes.

The log: questions written from passages of the bundled sample corpus (a content sentence of a chunk
turned into a question, from up to two spans of its words; its page is the relevant document, the
sentence the reference answer), answered by the built-in system (BM25 retrieval over the sample
corpus, top 3, the default prompt) with the extractive stand-in generator of benchmarks/gate_power.py
behind tests/fake_llm_server.py (it answers with the context sentence that best matches the question:
cheap and deterministic). Planted worse systems answer the SAME pool of questions: "invents" (the same
retrieval, a generator that adds an invented sentence to every answer) and "fewer contexts" (top 1
instead of 3).

Measured with the monitor's own code: `evaluate_logged` (the system-as-run metrics: what the monitor
measures on every answer of a window, no LLM call, no judge) once per system, then the drift decision
(`ragwatch.monitoring.drift.decide`, what `compare_windows` runs: unpaired MOVER intervals, Holm over the
metrics for "drift", two one-sided tests per metric for "no drift") on seeded windows of n answers with
DISJOINT questions:
- no drift: two windows of the same system; a false alarm when any metric reads "drift"; "all no
  drift" when every metric reads "no drift" (the issue's bar: 19 of 20 repetitions);
- power: a window of the same system against a window of a planted system (different questions too):
  the share of repetitions reading "drift (worse)" on each metric.

`--write-logs DIR` writes the monitor's sample log instead (6 days, the last one "invents", system
version v2) in the formats the monitor reads, gzip-compressed: answers.jsonl.gz, answers.csv.gz,
spans.jsonl.gz (OpenInference) and langfuse.json.gz, as committed in data/sample/logs/.

Usage:
    python -m benchmarks drift                            # ~5-10 min: n = 250, 500, 1000 answers per window
    python -m benchmarks drift --sizes 250 500 --reps 20
    python -m benchmarks drift --reps 0 --write-logs data/sample/logs   # the sample log only, ~30 s
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import random
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from gate_power import extractive_reply  # noqa: E402

from ragwatch.corpus.chunking import ChunkingSettings, chunk_documents  # noqa: E402
from ragwatch.corpus.documents import load_documents  # noqa: E402
from ragwatch.evalset.logged import log_samples  # noqa: E402
from ragwatch.indexing.index import Index  # noqa: E402
from ragwatch.judges import JudgesConfig  # noqa: E402
from ragwatch.llm.client import LLMClient  # noqa: E402
from ragwatch.llm.types import LLMSettings  # noqa: E402
from ragwatch.logsources.records import LogContext, LogRecord  # noqa: E402
from ragwatch.monitoring.drift import DriftRow, Pair, decide  # noqa: E402
from ragwatch.monitoring.evaluate import evaluate_logged  # noqa: E402
from ragwatch.monitoring.settings import DriftSettings  # noqa: E402
from ragwatch.rag import BuiltinRAG, RagSettings  # noqa: E402
from ragwatch.results import MetricInfo  # noqa: E402
from ragwatch.retrieval import MatchSettings  # noqa: E402
from ragwatch.types import Chunk, RagAnswer  # noqa: E402
from tests.fake_llm_server import FakeLLMServer  # noqa: E402

CORPUS = ROOT / "data" / "sample" / "zenml_docs"
# an invented sentence added to an answer lowers its grounding; the reference's words are still all there
SHOULD_MOVE = {"invents": ["answer/context_support"],
               "fewer contexts": ["system/context_recall", "system/hit_rate"]}
INVENTED = ("It also needs the Zephyr orchestration plugin version 7, which ships only with the enterprise "
            "edition and runs on Mondays.")
LAST_DAY = datetime(2026, 11, 20, tzinfo=UTC)
FEEDBACK_RATE = 0.2  # the share of answers a user rates (at random: the monitor's level assumes it)
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


def questions(chunks: list[Chunk], seed: int = 0, per_chunk: int = 3, spans: int = 1) -> list[tuple[str, str, str]]:
    """(question, reference sentence, relevant page) from up to `per_chunk` content sentences of each chunk,
    `spans` questions (different runs of five of its words) per sentence; each question once."""
    rng = random.Random(seed)
    out, seen = [], set()
    for chunk in chunks:
        sentences = [s.strip() for s in _SENTENCE.split(chunk.text.replace("\n", " "))
                     if 8 <= len(s.split()) <= 40 and not s.strip().startswith(("|", "#", "`", "!", "<"))]
        for sentence in rng.sample(sentences, min(per_chunk, len(sentences))):
            words = _WORD.findall(sentence)
            if len(words) < 4:
                continue
            starts = list(range(max(1, len(words) - 5)))
            for start in rng.sample(starts, min(spans, len(starts))):
                question = f"What does the documentation say about {' '.join(words[start:start + 5]).lower()}?"
                if question not in seen:
                    seen.add(question)
                    out.append((question, sentence, chunk.source))
    rng.shuffle(out)
    return out


def answer_all(index: Index, qs: list[tuple[str, str, str]], reply, top_k: int) -> list[RagAnswer]:
    with FakeLLMServer(responder=reply) as server:
        llm = LLMClient(LLMSettings(model="openai/extractive", api_base=server.base_url, cache=False,
                                    max_tokens=120, concurrency=8))
        rag = BuiltinRAG(index, None, llm, RagSettings(retrieval_mode="bm25", top_k=top_k))
        return rag.answer_many([q for q, _, _ in qs])


def served(answer: str, reference: str) -> bool:
    """The answer says what the question was written from: most of the reference sentence's words are in it."""
    words = {w.lower() for w in _WORD.findall(reference)}
    return bool(words) and sum(w in answer.lower() for w in words) / len(words) >= 0.6


def thumbs_up_chance(answer: str, reference: str) -> float:
    """A user's chance of a thumb up: high when the answer served them, low when it did not, and an
    invented sentence costs some (noisy: users disagree, misclick, and rate the tone too)."""
    chance = 0.85 if served(answer, reference) else 0.3
    return chance - (0.25 if INVENTED in answer else 0.0)


def records(qs: list[tuple[str, str, str]], answers: list[RagAnswer], day: datetime, version: str,
            prefix: str) -> list[LogRecord]:
    rng = random.Random(f"{prefix}{day}")
    out = []
    for i, ((question, reference, page), answer) in enumerate(zip(qs, answers, strict=True)):
        feedback = None
        if rng.random() < FEEDBACK_RATE:  # a user in five clicks a thumb, whatever the answer
            up = rng.random() < thumbs_up_chance(answer.answer, reference)
            feedback = {"kind": "thumbs", "value": float(up)}
        out.append(LogRecord(
            trace_id=f"{prefix}-{day:%Y%m%d}-{i:04d}", question=question, answer=answer.answer,
            contexts=[LogContext(text=c.text, id=c.chunk_id, source=c.source) for c in answer.contexts],
            timestamp=day + timedelta(seconds=int(86_399 * (i + 0.5) / len(qs))), reference_answer=reference,
            system_version=version, relevant=[page], feedback=feedback))
    return out


def item_scores(recs: list[LogRecord]) -> tuple[dict[str, np.ndarray], dict[str, MetricInfo]]:
    """Per metric, the score of every record (NaN where it failed), in the records' order, and its info."""
    metrics = evaluate_logged(log_samples(recs), JudgesConfig(enabled=[]), MatchSettings(on="auto")).metrics
    order = {r.trace_id: i for i, r in enumerate(recs)}
    scores, infos = {}, {}
    for name, result in metrics.items():
        values = np.full(len(recs), np.nan)
        for it in result.items:
            if it.ok and it.score is not None:
                values[order[it.item_id]] = it.score
        scores[name], infos[name] = values, result.info
    return scores, infos


def compare(a: dict[str, np.ndarray], b: dict[str, np.ndarray], infos: dict[str, MetricInfo], drift: DriftSettings
            ) -> list[DriftRow]:
    """Window b (new) against window a (old): what `compare_windows` decides on these item scores."""
    pairs = {m: Pair(b[m][~np.isnan(b[m])], a[m][~np.isnan(a[m])], infos[m].scale, infos[m].higher_is_better)
             for m in sorted(infos)}
    return decide(pairs, drift)


def repetitions(base: dict[str, np.ndarray], other: dict[str, np.ndarray] | None, infos: dict[str, MetricInfo],
                n: int, reps: int, drift: DriftSettings) -> list[dict[str, DriftRow]]:
    """Per repetition: metric -> row of window B against window A, n answers each, disjoint questions
    (B answered by `other` when given, else by the same system)."""
    size = len(next(iter(base.values())))
    out = []
    for seed in range(reps):
        order = np.random.default_rng(seed).permutation(size)
        a, b = order[:n], order[n:2 * n]
        window_b = {m: (other if other is not None else base)[m][b] for m in infos}
        rows = compare({m: base[m][a] for m in infos}, window_b, infos, drift)
        out.append({r.metric: r for r in rows})
    return out


@contextmanager
def _gz_text(path: Path) -> Iterator[IO[str]]:
    """A gzip text file written byte for byte the same on every run (no time or name in its header)."""
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed, \
            io.TextIOWrapper(packed, encoding="utf-8", newline="") as out:
        yield out


def write_logs(directory: Path, days: list[list[LogRecord]]) -> None:
    """The log in the formats the monitor reads, gzip-compressed (the monitor reads .gz as it is)."""
    directory.mkdir(parents=True, exist_ok=True)
    flat = [r for day in days for r in day]

    def row(r: LogRecord) -> dict[str, Any]:
        return {"trace_id": r.trace_id, "timestamp": r.timestamp.isoformat().replace("+00:00", "Z"),
                "question": r.question, "answer": r.answer,
                "contexts": [{"text": c.text, "id": c.id, "source": c.source} for c in r.contexts],
                "reference_answer": r.reference_answer, "system_version": r.system_version, "relevant": r.relevant,
                "feedback": None if r.feedback is None else ("up" if r.feedback.value else "down")}

    with _gz_text(directory / "answers.jsonl.gz") as out:
        for r in flat:
            out.write(json.dumps(row(r)) + "\n")
    with _gz_text(directory / "answers.csv.gz") as out:
        writer = csv.DictWriter(out, fieldnames=list(row(flat[0])))
        writer.writeheader()
        for r in flat:
            writer.writerow({k: json.dumps(v) if isinstance(v, list) else ("" if v is None else v)
                             for k, v in row(r).items()})
    with _gz_text(directory / "spans.jsonl.gz") as out:
        for r in flat:
            for span in _spans(r, row(r)):
                out.write(json.dumps(span) + "\n")
    with _gz_text(directory / "langfuse.json.gz") as out:
        out.write(json.dumps({"data": [_langfuse(r, row(r)) for r in flat]}))


def _spans(r: LogRecord, row: dict[str, Any]) -> list[dict[str, Any]]:
    tid = hashlib.sha256(r.trace_id.encode()).hexdigest()[:32]  # OpenInference ids: 32 hex (trace), 16 (span)
    span = {kind: hashlib.sha256(f"{r.trace_id}/{kind}".encode()).hexdigest()[:16] for kind in ("r", "g")}
    meta = {"system_version": r.system_version, "reference_answer": r.reference_answer, "relevant": r.relevant,
            "feedback": row["feedback"]}
    root = {"name": "query", "span_kind": "CHAIN", "parent_id": None, "start_time": row["timestamp"],
            "context.trace_id": tid, "context.span_id": tid[:16], "attributes.input.value": r.question,
            "attributes.output.value": r.answer, "attributes.metadata": json.dumps(meta)}
    retriever = {"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": tid[:16], "start_time": row["timestamp"],
                 "context.trace_id": tid, "context.span_id": span["r"], "attributes.input.value": r.question}
    for i, c in enumerate(r.contexts):
        retriever[f"attributes.retrieval.documents.{i}.document.content"] = c.text
        retriever[f"attributes.retrieval.documents.{i}.document.id"] = c.id
        retriever[f"attributes.retrieval.documents.{i}.document.metadata"] = json.dumps({"source": c.source})
    llm = {"name": "generate", "span_kind": "LLM", "parent_id": tid[:16], "start_time": row["timestamp"],
           "context.trace_id": tid, "context.span_id": span["g"], "attributes.output.value": r.answer,
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
            "scores": scores, "metadata": {"reference_answer": r.reference_answer, "relevant": r.relevant}}


def measure(index: Index, args: argparse.Namespace) -> None:
    """False alarms, "all no drift" and power at each window size (module docstring), printed."""
    started = time.perf_counter()
    qs = questions(index.chunks, per_chunk=10, spans=2)
    need = 2 * max(args.sizes)
    if len(qs) < need:
        raise SystemExit(f"only {len(qs)} questions in the corpus; the largest --sizes is at most {len(qs) // 2}")
    day = LAST_DAY
    systems = {"same": records(qs, answer_all(index, qs, extractive_reply, 3), day, "v1", "base"),
               "invents": records(qs, answer_all(index, qs, inventing_reply, 3), day, "v2", "inv"),
               "fewer contexts": records(qs, answer_all(index, qs, extractive_reply, 1), day, "v2", "k1")}
    scored = {name: item_scores(recs) for name, recs in systems.items()}
    base, infos = scored["same"]
    metrics = sorted(infos)
    print(f"{len(qs)} questions from {len(index.chunks)} chunks of {CORPUS.relative_to(ROOT)}, each answered by the "
          f"3 systems ({3 * len(qs)} answers) and scored in {time.perf_counter() - started:.0f} s (0 LLM judge calls)")
    drift = DriftSettings(tolerance=args.tolerance, confidence=args.confidence)
    print(f"{args.reps} seeded repetitions per size; two windows of n answers each, disjoint questions; tolerance "
          f"{args.tolerance:g} of each metric's scale; 'drift': {args.confidence:.0%} for the window (Holm over "
          f"{len(metrics)} metrics); 'no drift': {args.confidence:.0%} per metric (TOST)")
    summary = []
    for n in args.sizes:
        null = repetitions(base, None, infos, n, args.reps, drift)
        alarms = sum(any(r.verdict == "drift" for r in rep.values()) for rep in null)
        clean = sum(all(r.verdict == "no drift" for r in rep.values()) for rep in null)
        print(f"\n== n = {n} answers per window ==")
        print(f"same system, different questions: false alarms (any metric 'drift') {alarms}/{args.reps}; "
              f"every metric 'no drift' {clean}/{args.reps}")
        for m in metrics:
            counts = {v: sum(rep[m].verdict == v for rep in null) for v in ("drift", "no drift", "undecided")}
            sizes = [rep[m].answers_to_decide for rep in null if rep[m].answers_to_decide]
            need_text = f"; undecided ones named ~{int(np.median(sizes)):,} answers (median)" if sizes else ""
            print(f"    {m:<28} " + ", ".join(f"{k} {c}" for k, c in counts.items()) + need_text)
        powers = {}
        for name in ("invents", "fewer contexts"):
            runs = repetitions(base, scored[name][0], infos, n, args.reps, drift)
            print(f"planted '{name}' vs the same system: share of repetitions reading 'drift (worse)'")
            for m in metrics:
                hits = sum((rep[m].verdict, rep[m].direction) == ("drift", "worse") for rep in runs)
                other = sum(rep[m].verdict == "drift" and rep[m].direction != "worse" for rep in runs)
                moves = m in SHOULD_MOVE[name]
                if moves:
                    powers[f"{name}: {m}"] = hits
                print(f"    {m:<28} {hits}/{args.reps}" + (f" (better: {other})" if other else "")
                      + ("  <- should move" if moves else ""))
        summary.append((n, alarms, clean, min(powers.values())))
    print("\nsummary (per window size: false alarms, all 'no drift', lowest power on a metric that should move)")
    for n, alarms, clean, power in summary:
        print(f"  n = {n:>5}: false alarms {alarms}/{args.reps}, all 'no drift' {clean}/{args.reps}, "
              f"power >= {power}/{args.reps}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000],
                        help="answers per window to measure at (default 250 500 1000)")
    parser.add_argument("--reps", type=int, default=20, help="seeded repetitions (default 20; 0: measure nothing)")
    parser.add_argument("--tolerance", type=float, default=DriftSettings().tolerance)
    parser.add_argument("--confidence", type=float, default=DriftSettings().confidence)
    parser.add_argument("--write-logs", type=Path, help="also write the 6-day sample log in three formats here")
    parser.add_argument("--per-day", type=int, default=90, help="answers per day of the written log (default 90)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    index = corpus_index()
    if args.reps > 0:
        measure(index, args)
    if args.write_logs:
        qs = questions(index.chunks)
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
