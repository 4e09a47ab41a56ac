"""A blind labelling packet from statements files (`benchmarks/answer_statements.py` output).

One row per statement: statement_id, item_id, system (the opaque code the statements carry),
question, contexts, statement_index, statement, answer. Nothing a reader should not see: no
system description, no judge verdict or feature. Answers are shuffled with a fixed seed, each
answer's statements kept together and in order, so readers do not meet one system's answers in a run.

    python benchmarks/labelling_packet.py /tmp/faith/S1.jsonl /tmp/faith/S2.jsonl --seed 35 \
        --out /work/helpers/labelling/packet.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

PACKET_FIELDS = ("statement_id", "item_id", "system", "question", "contexts", "statement_index", "statement",
                 "answer")


def packet(paths: list[Path], seed: int) -> list[dict[str, Any]]:
    """The statements of all files, grouped by answer, answers shuffled (seeded), blind fields only."""
    answers: dict[tuple[str, str], list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for path in paths:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row["statement_id"] in seen:
                raise SystemExit(f"{path}: statement_id {row['statement_id']} appears twice")
            seen.add(row["statement_id"])
            answers.setdefault((row["system"], row["item_id"]), []).append({k: row[k] for k in PACKET_FIELDS})
    order = sorted(answers)  # a fixed order before the seeded shuffle: the packet does not depend on file order
    random.Random(seed).shuffle(order)
    return [r for key in order for r in sorted(answers[key], key=lambda r: r["statement_index"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("statements", type=Path, nargs="+", help="statements JSONL files (system = opaque code)")
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = packet(args.statements, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    n_answers = len({(r["system"], r["item_id"]) for r in rows})
    print(f"{len(rows)} statements of {n_answers} answers -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
