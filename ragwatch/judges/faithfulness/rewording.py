"""Whether a changed statement says the same as the statement it replaced: a reader's check of a diff.

A reader comparing two runs of a system reads what changed in an answer. When a sentence only says the
same thing in other words and the retrieved contexts are the same, its support cannot have changed, so a
gate could pair such answers as unchanged instead of trusting a judge that reads words (lexical support
falls when the words change). Two checks, in order:

1. model-free (`same_skeleton`): the same names, numbers, identifiers and quoted strings, in the same
   order, and the same negations. A replaced name or number, a term moved, a negation added or taken
   away: changed, no call.
2. the judge (`rewording_plan`): shown the old and the new sentence and the word spans that changed, it
   says whether every change keeps the meaning; P(yes) is read at its verdict token.

Measured, not wired into the gate (`benchmarks/rewording_check.py`, `benchmarks/results/rewording_check.md`):
the skeleton catches names, numbers and negations, but the shipped local judge separates the rest too
weakly: at a cut-off where it calls the same claim of almost no antonym or other word, it also turns most
real rewordings away.

Example:
    >>> same_skeleton("ZenML provides 3 stacks.", "ZenML offers 3 stacks.")
    True
    >>> same_skeleton("ZenML provides 3 stacks.", "ZenML does not provide 3 stacks.")
    False
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, create_model

from ragwatch.judges.base import DATA_RULE, fence
from ragwatch.judges.engine import Call, Plan
from ragwatch.judges.faithfulness.evidence import key_terms
from ragwatch.judges.faithfulness.terms import names, quoted
from ragwatch.llm.logprobs import yes_probabilities_at

SAME_CUTOFF = 0.5  # the benchmark also prints higher cut-offs
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|neither|nor|without|cannot|unless)\b|n['’]t\b", re.I)

REWORDING_SYSTEM = (
    "You compare two versions, OLD and NEW, of a sentence from an answer, and the list of CHANGES that turn "
    "OLD into NEW. Say yes only when every change keeps the meaning: a synonym, a contraction, other words "
    "for the same thing. Say no when any change adds, drops, reverses, negates or alters what OLD states: "
    "a name, number, value, action, direction, order, amount, condition, relation or who does what. A word "
    "replaced by its opposite, or by a word for another thing, changes the meaning.\n"
    f"{DATA_RULE}\n"
    'Reply with the JSON object only: {"same": "yes" or "no"}.'
)


def claim_terms(statement: str) -> list[str]:
    """The statement's names, numbers, identifiers and quoted strings, lower-cased, every occurrence (as a
    whole word, not inside another) in order of appearance."""
    text = statement.lower()
    terms = {t.lower() for t in [*names(statement), *quoted(statement)]} | key_terms(statement)
    found = [(m.start(), -len(t), t) for t in terms for m in re.finditer(rf"(?<!\w){re.escape(t)}(?!\w)", text)]
    return [t for *_, t in sorted(found)]


def negations(statement: str) -> int:
    return len(_NEGATION.findall(statement))


def same_skeleton(old: str, new: str) -> bool:
    """The same terms in the same order and as many negations: what a rewording keeps."""
    return claim_terms(old) == claim_terms(new) and negations(old) == negations(new)


def _schema() -> type[BaseModel]:
    return create_model("Rewording", same=(Literal["yes", "no"], ...))


def changes(old: str, new: str) -> list[tuple[str, str]]:
    """The word spans that differ, as (old words, new words) in order ('' where one side has none)."""
    a, b = old.split(), new.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return [(" ".join(a[i1:i2]), " ".join(b[j1:j2]))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def rewording_prompt(old: str, new: str) -> str:
    listed = "\n".join(f'- "{x}" -> "{y}"' for x, y in changes(old, new))
    return "\n".join([fence("OLD", old), fence("NEW", new), fence("CHANGES", listed),
                      "Does every change keep the meaning of OLD?"])


def rewording_plan(pairs: Sequence[tuple[str, str]]) -> Plan:
    """P(same) of each (old, new) pair: 0.0 without a call when the skeletons differ, 1.0 when the texts
    are equal, else the judge's P(yes) (None when its reply has no verdict)."""
    out: list[float | None] = [1.0 if old == new else None if same_skeleton(old, new) else 0.0
                               for old, new in pairs]
    asked = [k for k, p in enumerate(out) if p is None]
    if asked:
        schema = _schema()
        gens = yield [Call([{"role": "user", "content": rewording_prompt(*pairs[k])}], schema, REWORDING_SYSTEM, True)
                      for k in asked]
        for k, gen in zip(asked, gens, strict=True):
            found = yes_probabilities_at(gen, json_key="same")
            out[k] = found[-1] if found else None
    return out

