"""A planted faithfulness regression a weak judge half sees: answers, contexts, the truth and the judge.

Each question is about one connector of a made-up product; its context describes that connector and
a second one (port, log folder) and the shared retry rule. Production answers with four statements,
three of which the context states. The planted change puts a number or name of the answer's own contexts in the
wrong place in `PLANTED` of the answers (the other connector's port or log folder; production's
answers have one such error of their own, in their fourth statement): every word pair
of the planted statement is still in the context and no term is new, so lexical support and the
verifier's rules cannot see it (the hard case of issue 35).

`judge_reply` is an evidence-verifier judge (`ragwatch.judges.faithfulness.verify_evidence`) with token logprobs at
each verdict, weak as the local 1.5B is: it calls a true statement unsupported 15% of the time and
catches half of the planted ones (by a stable hash of the statement, so a statement gets the same
reply in every run). `truth(statement)` is what a careful reader says: the labels a test gives.

Example:
    >>> rows = questions()
    >>> answer_of(rows[0]["question"], planted=True)["answer"] != answer_of(rows[0]["question"])["answer"]
    True
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from ragwatch.judges.faithfulness.verify_evidence import prompt_statements

N_QUESTIONS = 48
PLANTED = 32  # answers with a number or name of their own contexts in the wrong place
NAMES = ["Arlow", "Brisket", "Cinder", "Dovetail", "Ember", "Fennel", "Garnet", "Hollis", "Indigo", "Juniper",
         "Kestrel", "Lumen", "Marlow", "Nimbus", "Orchid", "Pebble", "Quill", "Russet", "Saffron", "Thistle",
         "Umber", "Vesper", "Willow", "Yarrow"]
FOLDERS = ["archive", "ledger", "vault", "journal", "cellar", "attic", "harbor", "quarry"]
P_YES = {"yes": 0.93, "false_alarm": 0.3, "caught": 0.22, "missed": 0.8}


def _facts(i: int) -> tuple[str, str, int, int, str, str, int]:
    a = f"{NAMES[i % len(NAMES)]}{'' if i < len(NAMES) else ' Mark II'}"
    b = f"{NAMES[(i + 7) % len(NAMES)]} Relay"
    return a, b, 7000 + 17 * i, 8000 + 29 * i, FOLDERS[i % len(FOLDERS)], FOLDERS[(i + 3) % len(FOLDERS)], 2 + i % 4


def question(i: int) -> str:
    return f"How is the {_facts(i)[0]} connector set up?"


def questions() -> list[dict[str, Any]]:
    """The evaluation set (imported JSONL rows)."""
    return [{"id": f"q{i:02d}", "question": question(i), "reference_answer": _answer(i, planted=False),
             "relevant": ["component-guide/orchestrators/local.md"]} for i in range(N_QUESTIONS)]


def context(i: int) -> str:
    a, b, p1, p2, d1, d2, k = _facts(i)
    return (f"The {a} connector listens on port {p1} and writes its logs to the {d1} folder. "
            f"The {b} connector listens on port {p2} and writes its logs to the {d2} folder. "
            f"A failed request is retried {k} times before either connector gives up.")


def _statements(i: int, planted: bool) -> list[str]:
    a, b, p1, p2, d1, d2, k = _facts(i)
    port, folder = p1, d1
    if planted and i < PLANTED:  # the other connector's number, or its folder's name, in the wrong place
        port, folder = (p2, d1) if i % 2 == 0 else (p1, d2)
    # production's own error, as real systems have: the first connector's port given to the second
    return [f"The {a} connector listens on port {port}.", f"The {a} connector writes its logs to the {folder} folder.",
            f"A failed request is retried {k} times before the connector gives up.",
            f"The {b} connector listens on port {p1}."]


def _answer(i: int, planted: bool) -> str:
    return " ".join(_statements(i, planted))


def _index(question_text: str) -> int:
    return next(i for i in range(N_QUESTIONS) if question(i) == question_text)


def answer_of(question_text: str, *, planted: bool = False) -> dict[str, Any]:
    """What the system under test returns for a question (production, or the planted change)."""
    i = _index(question_text)
    return {"answer": _answer(i, planted), "contexts": [{"text": context(i), "source": f"connectors/{i:02d}.md"}]}


TRUE_STATEMENTS = frozenset(s for i in range(N_QUESTIONS) for s in _statements(i, planted=False)[:3])


def truth(statement: str) -> bool:
    """What a careful reader says of a statement: supported when the context states it."""
    return statement.strip() in TRUE_STATEMENTS


def _draw(statement: str) -> float:
    return int(hashlib.sha256(statement.encode()).hexdigest()[:8], 16) / 16**8


def judge_p_yes(statement: str) -> float:
    """The weak judge's P(yes) of one statement (stable across runs)."""
    u = _draw(statement)
    if truth(statement):
        return P_YES["false_alarm"] if u < 0.15 else P_YES["yes"]
    return P_YES["caught"] if u < 0.5 else P_YES["missed"]


def judge_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The evidence verifier's reply, `{"checks": [{"evidence": [1], "verdict": ...}, ...]}`, with token
    logprobs whose verdict tokens carry P(yes) and P(no) (as a local model's do)."""
    text = next(m["content"] for m in body["messages"] if m.get("role") == "user")
    statements = prompt_statements(text)
    if not statements:
        raise AssertionError(f"not an evidence-verification prompt: {text[:300]}")
    tokens: list[dict[str, Any]] = []
    content = '{"checks": ['

    def plain(piece: str) -> None:
        tokens.append({"token": piece, "logprob": 0.0, "top_logprobs": []})

    plain(content)
    for k, statement in enumerate(statements):
        p = judge_p_yes(statement)
        word = "yes" if p >= 0.5 else "no"
        head = ('' if k == 0 else ', ') + '{"evidence": [1], "verdict": "'
        plain(head)
        top = [{"token": "yes", "logprob": math.log(p)}, {"token": "no", "logprob": math.log(1 - p)}]
        tokens.append({"token": word, "logprob": math.log(p if word == "yes" else 1 - p), "top_logprobs": top})
        plain('"}')
        content += head + word + '"}'
    plain("]}")
    content += "]}"
    assert json.loads(content)
    return {"content": content, "logprobs": {"content": tokens}}
