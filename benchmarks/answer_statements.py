"""A system's answers as statements, split exactly as the faithfulness judge splits them.

Reads the `rag_answers` of an evaluation run (by default the newest) and its evaluation set, or,
with `--questions` (JSONL: id, question), has the system under test of `--config` answer them
directly (the built-in system on the newest ingested index, retrieval and generation only: no
evaluation set, no judges). Splits every answered item's answer into statements the way the
configured faithfulness judge does with `statements: sentences` (`answer_statements`, at most
`max_statements`), and writes one row per
statement with the contexts exactly as the system returned them: statement_id, item_id, system,
question, contexts, context_sources, answer, statement_index, statement. The rows are the input of
`benchmarks/statement_features.py` and of a labelling packet (statement ids are opaque: a hash of
system, item and index). Answers that failed or are empty
have no statements and are counted, not written.

    python run.py evaluate --config benchmarks/systems/top1.yaml
    python benchmarks/answer_statements.py --system S1 --config benchmarks/systems/top1.yaml --out S1.jsonl
    python benchmarks/answer_statements.py --system S1 --config benchmarks/systems/top1.yaml \
        --questions benchmarks/systems/questions.jsonl --out S1.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from ragwatch_zenml.env import configure_environment  # noqa: E402

configure_environment()

from ragwatch.config import FullConfig  # noqa: E402
from ragwatch.config_loader import load_config  # noqa: E402
from ragwatch.evalset.assemble import generation_samples  # noqa: E402
from ragwatch.judges.faithfulness import answer_statements  # noqa: E402


def opaque_id(system: str, item_id: str, index: int) -> str:
    """A stable statement id that does not tell a reader which system wrote the statement."""
    return "st-" + hashlib.sha256(f"{system}\x1f{item_id}\x1f{index}".encode()).hexdigest()[:12]


def statement_rows(system: str, samples: list[Any], answers: list[Any], max_statements: int,
                   limit: int | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One row per statement of the first `limit` answered items; counts of answered / skipped items."""
    if len(samples) != len(answers):
        raise SystemExit(f"{len(answers)} answers for {len(samples)} answerable samples: not the run's evaluation set")
    rows: list[dict[str, Any]] = []
    counts = {"answered": 0, "failed": 0, "empty": 0}
    for sample, answer in zip(samples, answers, strict=True):
        if limit is not None and counts["answered"] >= limit:
            break
        if not answer.ok or not answer.contexts:
            counts["failed"] += 1
            continue
        statements = answer_statements(answer.answer, max_statements) if answer.answer.strip() else []
        if not statements:
            counts["empty"] += 1
            continue
        counts["answered"] += 1
        for k, statement in enumerate(statements):
            rows.append({"statement_id": opaque_id(system, sample.id, k), "item_id": sample.id, "system": system,
                         "question": sample.question, "contexts": [c.text for c in answer.contexts],
                         "context_sources": [c.source for c in answer.contexts], "answer": answer.answer,
                         "statement_index": k, "statement": statement})
    return rows, counts


def run_outputs(run_name: str | None) -> tuple[Any, Any, Any]:
    """The run, its `rag_answers` and its evaluation set (the newest evaluation run by default)."""
    from zenml.client import Client

    from ragwatch_zenml.readback import evaluation_runs

    run = Client().get_pipeline_run(run_name) if run_name else next(iter(evaluation_runs()), None)
    if run is None:
        raise SystemExit("no evaluation run found: run `python run.py evaluate --config <system config>` first")
    answers = run.steps["generate_answers"].outputs["rag_answers"][0].load()
    eval_set = run.steps["load_eval_set"].outputs["input_eval_set"][0].load()
    return run, answers, eval_set


def answer_directly(config: FullConfig, path: Path, out: Path, system: str, chunk: int = 4,
                    limit: int | None = None) -> tuple[dict[str, int], dict[str, Any]]:
    """Answer the questions of `path` with the configured system, `chunk` at a time, appending each chunk's
    statements to `out` (a run resumes: questions already there are skipped); counts and the system."""
    from ragwatch.config import index_key
    from ragwatch.evaluation import build_system
    from ragwatch.indexing.embeddings import get_embedder
    from ragwatch.types import EvalSample
    from ragwatch_zenml.readback import latest_index

    options = config.evaluate.judges.faithfulness
    samples = [EvalSample(id=r["id"], question=r["question"])
               for r in map(json.loads, path.read_text().splitlines()) if r.get("question")][:limit]
    done = {json.loads(line)["item_id"] for line in out.read_text().splitlines()} if out.is_file() else set()
    todo = [s for s in samples if s.id not in done]
    index = latest_index(index_key(config.ingest)).load()  # the config's corpus, not whichever was ingested last
    rag, _ = build_system(config.evaluate.system, index, get_embedder(config.ingest.embedding))
    totals = {"answered": 0, "failed": 0, "empty": 0}
    out.parent.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(todo), chunk):
        part = todo[start:start + chunk]
        rows, counts = statement_rows(system, part, rag.answer_many([s.question for s in part]),
                                      options.max_statements)
        with out.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        totals = {k: totals[k] + counts[k] for k in totals}
        print(f"{start + len(part)}/{len(todo)} questions answered", file=sys.stderr, flush=True)
    return totals, rag.describe()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", required=True, help="a short name of the system under test (in statement ids)")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml",
                        help="the config the run used: its faithfulness options say how answers are split")
    parser.add_argument("--run", help="evaluation run name or id (default: the newest)")
    parser.add_argument("--questions", type=Path, help="JSONL of id, question: answer them with the config's "
                        "system instead of reading a run")
    parser.add_argument("--limit", type=int, help="at most this many answered items (in evaluation-set order)")
    parser.add_argument("--threads", type=int, help="llama.cpp threads of a local model (default: the provider's; "
                        "on a loaded machine 1 wastes less time waiting on descheduled threads)")
    parser.add_argument("--out", type=Path, required=True, help="statements JSONL")
    args = parser.parse_args(argv)
    if args.threads:
        from ragwatch.llm import local

        local.N_THREADS = args.threads

    config = load_config(args.config, FullConfig)
    options = config.evaluate.judges.faithfulness
    if options.statements != "sentences":
        raise SystemExit(f"{args.config}: faithfulness statements: {options.statements!r} splits with the judge; "
                         "this script reproduces `statements: sentences` only")
    if args.questions:  # appended chunk by chunk: an interrupted run keeps what it answered
        counts, system = answer_directly(config, args.questions, args.out, args.system, limit=args.limit)
        rows = [json.loads(line) for line in args.out.read_text().splitlines()]
        print(f"{args.questions}: {counts['answered']} answered items now, {len(rows)} statements in {args.out} "
              f"({counts['failed']} failed, {counts['empty']} empty); system {json.dumps(system)}")
        return 0
    run, answer_set, eval_set = run_outputs(args.run)
    rows, counts = statement_rows(args.system, generation_samples(eval_set.samples), answer_set.answers,
                                  options.max_statements, args.limit)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"run {run.name}: {counts['answered']} answered items -> {len(rows)} statements "
          f"({counts['failed']} failed, {counts['empty']} empty); system {json.dumps(answer_set.system)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
