"""Probability-weighted verdicts read from token logprobs at the position of the judged value.

A judge reply holds reasoning text before its score, and that text can contain digits or the
words yes/no; so the distribution is read at the token where the score value starts (after
`"score":` in JSON, after `[RESULT]` in the Prometheus format), not at the first matching token.

Example (the token after `"score": ` puts 0.6 on "4" and 0.4 on "5"):
    >>> import math
    >>> from ragwatch.llm.types import Generation, TokenLogprob
    >>> toks = [TokenLogprob(token='{"score": ', logprob=0.0),
    ...         TokenLogprob(token="4", logprob=math.log(0.6), top={"4": math.log(0.6), "5": math.log(0.4)}),
    ...         TokenLogprob(token="}", logprob=0.0)]
    >>> round(likert_expectation(Generation(model="m", logprobs=toks), json_key="score"), 2)
    4.4
"""

from __future__ import annotations

import math
import re

from ragwatch.llm.types import Generation, TokenLogprob

_STRIP = " \t\n\"'`*"


def _value_token(gen: Generation, pattern: re.Pattern[str]) -> TokenLogprob | None:
    """The token covering the start of group 'v' of `pattern` in the generated text."""
    if not gen.logprobs:
        return None
    text = "".join(t.token for t in gen.logprobs)
    found = None
    for found in pattern.finditer(text):  # noqa: B007 - the last match is the final verdict
        pass
    if found is None:
        return None
    target, offset = found.start("v"), 0
    for tok in gen.logprobs:
        if offset <= target < offset + len(tok.token):
            return tok
        offset += len(tok.token)
    return None


def _candidates(tok: TokenLogprob) -> dict[str, float]:
    """Alternatives at this position, the chosen token included even if `top` omits it."""
    cands = dict(tok.top)
    cands.setdefault(tok.token, tok.logprob)
    return cands


def _json_value_pattern(key: str) -> re.Pattern[str]:
    return re.compile(r'"' + re.escape(key) + r'"\s*:\s*"?(?P<v>[^\s"])')


_RESULT_PATTERN = re.compile(r"\[RESULT\]\s*(?P<v>\S)")


def likert_expectation(
    gen: Generation, *, json_key: str | None = None, choices: tuple[int, ...] = (1, 2, 3, 4, 5)
) -> float | None:
    """Expected score over `choices` at the score token (`json_key` in JSON, else after `[RESULT]`).

    None when the provider returned no logprobs or no alternative at that position is a choice.
    """
    pattern = _json_value_pattern(json_key) if json_key else _RESULT_PATTERN
    tok = _value_token(gen, pattern)
    if tok is None:
        return None
    mass: dict[int, float] = {}
    for text, logprob in _candidates(tok).items():
        cleaned = text.strip(_STRIP)
        if cleaned.isdigit() and int(cleaned) in choices:
            mass[int(cleaned)] = mass.get(int(cleaned), 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return sum(score * p for score, p in mass.items()) / total


def yes_probability_at(gen: Generation, *, json_key: str = "verdict") -> float | None:
    """P(yes) / (P(yes) + P(no)) at the token where the `json_key` value starts."""
    tok = _value_token(gen, _json_value_pattern(json_key))
    if tok is None:
        return None
    p_yes = p_no = 0.0
    for text, logprob in _candidates(tok).items():
        cleaned = text.strip(_STRIP).lower()
        if cleaned and "yes".startswith(cleaned):
            p_yes += math.exp(logprob)
        elif cleaned and "no".startswith(cleaned):
            p_no += math.exp(logprob)
    if p_yes + p_no <= 0:
        return None
    return p_yes / (p_yes + p_no)
