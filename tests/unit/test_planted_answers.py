"""benchmarks/planted_answers.py: planted answers split back into the same statements with the planted
one in place, and the packet rows tell nothing of the kind."""

from __future__ import annotations

import random
import sys
from pathlib import Path

# the script imports its sibling scripts as a script does (its own folder first on sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from benchmarks import planted_answers as pa

CONTEXTS = ["The default maxsize of lru_cache is 128. Use cache for an unbounded cache.",
            "The retry delay is 10 seconds and the step is retried 3 times."]
ANSWER = ("The default maxsize of lru_cache is 128 entries.\nYou can use cache when you want an unbounded one, "
          "which is simpler.")


def _answer() -> dict:
    statements = pa.answer_statements(ANSWER, pa.MAX_STATEMENTS)
    return {"system": "S9", "item_id": "q-1", "question": "What is the default maxsize of lru_cache?",
            "contexts": CONTEXTS, "context_sources": ["functools.html", "retry.md"], "answer": ANSWER,
            "statements": dict(enumerate(statements)), "labels": {k: "supported" for k in range(len(statements))}}


def test_replace_statement_spans_line_breaks() -> None:
    assert pa.replace_statement("A b.\nC  d.", "A b. C d.", "X.") == "X."
    assert pa.replace_statement("A b.", "Z.", "X.") is None


def test_planted_answer_splits_back_with_only_the_planted_statement_changed() -> None:
    answer = _answer()
    made = pa.planted_answer(answer, 0, "number_off", random.Random(1))
    assert made is not None
    assert made["planted"] == "The default maxsize of lru_cache is 141 entries."
    assert made["statements"][1:] == [answer["statements"][1]]
    assert pa.answer_statements(made["answer"], pa.MAX_STATEMENTS) == made["statements"]
    assert pa.planted_answer(answer, 1, "number_off", random.Random(1)) is None  # no number to change


def test_rows_blind_and_ids_unique_when_an_answer_is_reused() -> None:
    chosen = pa.choose([_answer()], per_kind=1, seed=3, kinds=("number_off", "number_absent"), reuse=True)
    assert sorted(c["kind"] for c in chosen) == ["number_absent", "number_off"]
    rows, key = pa.rows_and_key(chosen, "P")
    assert len({r["statement_id"] for r in rows}) == len(rows) == len(key)
    assert all("kind" not in r and "label" not in r and "original" not in r for r in rows)
    assert sum(k["planted"] for k in key) == 2 and {k["kind"] for k in key if k["planted"]} == {"number_off",
                                                                                               "number_absent"}
    once = pa.choose([_answer()], per_kind=1, seed=3, kinds=("number_off", "number_absent"))
    assert len(once) == 1  # without reuse an answer is planted once
