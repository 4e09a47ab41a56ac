"""Probability-weighted verdicts from token logprobs, for judges.

Greedy answers of small judges are biased (they say "yes" to everything); reading P(yes) vs P(no)
at the verdict position is better calibrated. Ask for `logprobs=True, top_logprobs=5` or more.

Example:
    >>> gen = client.generate(prompt, schema=Verdict, logprobs=True, top_logprobs=10)
    >>> yes_probability(gen)  # e.g. 0.83, or None when no verdict token is among the alternatives
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragwatch.llm.types import Generation, TokenLogprob

YES = frozenset({"yes", "true"})
NO = frozenset({"no", "false"})


def _norm(token: str) -> str:
    # tokenizers mark a leading space with Ġ or ▁; JSON verdicts arrive with quotes around them
    return token.replace("Ġ", " ").replace("▁", " ").strip().strip("\"'").strip().lower()


def _alternatives(position: TokenLogprob) -> dict[str, float]:
    alternatives = dict(position.top)
    alternatives.setdefault(position.token, position.logprob)
    return alternatives


def _mass(alternatives: dict[str, float], words: frozenset[str]) -> float:
    return sum(math.exp(lp) for tok, lp in alternatives.items() if _norm(tok) in words)


def yes_probability(gen: Generation) -> float | None:
    """P(yes) / (P(yes) + P(no)) at the first generated token that is a yes/no verdict.

    Case, leading spaces and quotes are ignored; "true"/"false" count as yes/no. None when the
    generation has no logprobs or no verdict token appears.
    """
    for position in gen.logprobs or []:
        if _norm(position.token) not in YES | NO:
            continue
        alternatives = _alternatives(position)
        yes, no = _mass(alternatives, YES), _mass(alternatives, NO)
        return yes / (yes + no) if yes + no > 0 else None
    return None


def expected_score(gen: Generation, choices: Sequence[str] = ("1", "2", "3", "4", "5")) -> float | None:
    """Probability-weighted mean of numeric `choices` at the first position where one is generated.

    Example: top logprobs {"4": -0.2, "5": -1.8, "3": -3.0} -> about 4.1.
    """
    wanted = {_norm(c): float(c) for c in choices}
    for position in gen.logprobs or []:
        if _norm(position.token) not in wanted:
            continue
        weights: dict[str, float] = {}
        for tok, lp in _alternatives(position).items():
            key = _norm(tok)
            if key in wanted:
                weights[key] = weights.get(key, 0.0) + math.exp(lp)
        total = sum(weights.values())
        return sum(wanted[k] * w for k, w in weights.items()) / total if total > 0 else None
    return None


def mean_logprob(gen: Generation) -> float | None:
    """Mean log probability of the generated tokens (a confidence signal), None without logprobs."""
    if not gen.logprobs:
        return None
    values = [t.logprob for t in gen.logprobs if math.isfinite(t.logprob)]
    return sum(values) / len(values) if values else None
