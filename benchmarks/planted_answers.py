"""A system under test with planted errors: whole answers, one statement of each changed by one kind of error.

From labelled statements files (`statements.jsonl`, `new_statements.jsonl`: system, item_id, contexts,
answer, statement_index, statement, label), takes statements the readers labelled `supported` and
plants one error into each with `benchmarks/planted_errors.py`'s `plant` (a name or number no context
holds, a name or number of the same contexts in the wrong place, a number off by a little, a negation,
a changed relation), `--per-kind` answers per kind, each answer used once. Each planted answer is the
whole answer with the planted statement in its place and the other statements as they were; it is
split again as the faithfulness judge splits it (`answer_statements`), and kept only when that gives
the same statements with the planted one in place.

Writes two files: the statements (`--out`, the format of `benchmarks/answer_statements.py`: opaque
statement ids, system `--system`, a new opaque item id per answer, no kind, no label) and a key
(`--key`: per statement, its source system/item, whether it was planted, the kind, the original
statement and the readers' label of the original), which must not reach the readers.

    python benchmarks/planted_answers.py data/judge_dev/rag_statements/statements.jsonl \
        data/judge_dev/rag_statements/new_statements.jsonl --per-kind 12 --seed 42 \
        --out data/judge_dev/rag_statements/P_statements.jsonl --key /work/notes/packet_keys/P_key.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from answer_statements import opaque_id  # noqa: E402
from planted_errors import PLANTS, plant  # noqa: E402

from ragwatch.judges.faithfulness import answer_statements  # noqa: E402

UNREAD = "not read"  # the label of a statement whose file has no labels yet
MAX_STATEMENTS = 4  # the default judge's `max_statements`, as the source statements were split


def load_answers(paths: list[Path]) -> list[dict[str, Any]]:
    """Answers of labelled statements files, each with its statements in order and their labels."""
    answers: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            system = row.get("system") or "S0"  # statements.jsonl predates the system field: it is S0's
            answer = answers.setdefault((system, row["item_id"]), {
                "system": system, "item_id": row["item_id"], "question": row["question"],
                "contexts": row["contexts"], "context_sources": row.get("context_sources", []),
                "answer": row["answer"], "statements": {}, "labels": {}})
            answer["statements"][row["statement_index"]] = row["statement"]
            answer["labels"][row["statement_index"]] = row.get("label", UNREAD)
    return [a for a in answers.values() if list(a["statements"]) == list(range(len(a["statements"])))]


def replace_statement(answer: str, statement: str, planted: str) -> str | None:
    """`answer` with `statement` (its sentences joined by single spaces) replaced by `planted`."""
    pattern = r"\s+".join(re.escape(token) for token in statement.split())
    match = re.search(pattern, answer)
    if match is None:
        return None
    return answer[:match.start()] + planted + answer[match.end():]


def planted_answer(answer: dict[str, Any], index: int, kind: str, rng: random.Random) -> dict[str, Any] | None:
    """The answer with an error of `kind` planted into statement `index`, or None when there is no place
    for one or the changed answer does not split into the same statements."""
    statements = [answer["statements"][k] for k in range(len(answer["statements"]))]
    new = plant(kind, statements[index], answer["contexts"], rng)
    if not new or new == statements[index]:
        return None
    text = replace_statement(answer["answer"], statements[index], new)
    expected = [new if k == index else s for k, s in enumerate(statements)]
    if text is None or answer_statements(text, MAX_STATEMENTS) != expected:
        return None
    return {"answer": text, "statements": expected, "planted": new}


def choose(answers: list[dict[str, Any]], per_kind: int, seed: int, kinds: tuple[str, ...] = PLANTS,
           reuse: bool = False) -> list[dict[str, Any]]:
    """`per_kind` planted answers per kind, each source answer used once (with `reuse`, once per kind:
    for kinds with few places, such as numbers); the kinds with the fewest places choose first.
    Candidates: statements labelled supported, or not labelled at all (files read before their labels
    exist: the readers label the planted answers themselves)."""
    rng = random.Random(seed)
    candidates = [(a, k) for a in answers for k, label in a["labels"].items() if label in ("supported", UNREAD)]
    rng.shuffle(candidates)
    places = {kind: sum(plant(kind, a["statements"][k], a["contexts"], random.Random(0))
                        not in (None, a["statements"][k]) for a, k in candidates) for kind in kinds}
    used: set[tuple[str, str]] = set()
    chosen = []
    for kind in sorted(kinds, key=lambda kind: (places[kind], kind)):
        n = 0
        if reuse:
            used = set()
        for answer, index in candidates:
            key = (answer["system"], answer["item_id"])
            if n >= per_kind or key in used:
                continue
            made = planted_answer(answer, index, kind, rng)
            if made is None:
                continue
            used.add(key)
            chosen.append({"source": answer, "index": index, "kind": kind, **made})
            n += 1
        print(f"{kind}: {n} answers", file=sys.stderr)
    return chosen


def _item_id(origin: str) -> str:
    return "p-" + hashlib.sha256(origin.encode()).hexdigest()[:10]


def rows_and_key(chosen: list[dict[str, Any]], system: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Statement rows for the packet (nothing that tells the planted one) and the key rows."""
    rows, key = [], []
    items: set[str] = set()
    for case in chosen:
        source = case["source"]
        origin = f"{source['system']}\x1f{source['item_id']}"
        if _item_id(origin) in items:  # the same answer planted again (`--reuse`): told apart by its kind
            origin += f"\x1f{case['kind']}"
        item_id = _item_id(origin)
        items.add(item_id)
        for k, statement in enumerate(case["statements"]):
            sid = opaque_id(system, item_id, k)
            rows.append({"statement_id": sid, "item_id": item_id, "system": system, "question": source["question"],
                         "contexts": source["contexts"], "context_sources": source["context_sources"],
                         "answer": case["answer"], "statement_index": k, "statement": statement})
            planted = k == case["index"]
            key.append({"statement_id": sid, "item_id": item_id, "source_system": source["system"],
                        "source_item_id": source["item_id"], "statement_index": k, "planted": planted,
                        "kind": case["kind"] if planted else None, "original": source["statements"][k],
                        "original_label": source["labels"][k]})
    return rows, key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("statements", type=Path, nargs="+", help="labelled statements JSONL files")
    parser.add_argument("--per-kind", type=int, default=12)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--kinds", default=",".join(PLANTS), help=f"comma-separated kinds of {PLANTS}")
    parser.add_argument("--reuse", action="store_true", help="a source answer may carry one planted error of "
                        "each kind (in separate copies); default: each source answer is planted once")
    parser.add_argument("--system", default="P", help="the system code the planted answers carry")
    parser.add_argument("--out", type=Path, required=True, help="statements JSONL (for the packet and features)")
    parser.add_argument("--key", type=Path, required=True, help="the key: kind and original per statement")
    args = parser.parse_args(argv)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    if unknown := [k for k in kinds if k not in PLANTS]:
        raise SystemExit(f"--kinds: unknown {unknown}; choose from {PLANTS}")
    chosen = choose(load_answers(args.statements), args.per_kind, args.seed, kinds, args.reuse)
    rows, key = rows_and_key(chosen, args.system)
    for path, data in ((args.out, rows), (args.key, key)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in data))
    print(f"{len(chosen)} answers, {len(rows)} statements ({len(chosen)} planted) -> {args.out}; key -> {args.key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
