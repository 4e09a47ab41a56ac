"""Probability-weighted verdicts and scores from token logprobs: the one place that reads them.

Greedy answers of small judges are biased (they say "yes" to everything); reading P(yes) vs P(no)
at the verdict position is better calibrated. Ask for `logprobs=True, top_logprobs=5` or more.

A judge reply holds reasoning text before its verdict, and that text can contain digits or the
words yes/no; so judges read the distribution at the token where the judged value starts (after
`"verdict":` or `"score":` in JSON, after `[RESULT]` in the Prometheus format), not at the first
matching token. `yes_probabilities_at` reads every such value of a reply (one per statement of a
verdict list).

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
from collections.abc import Sequence

from ragwatch.llm.models import is_local
from ragwatch.llm.types import Generation, LLMSettings, TokenLogprob

YES = frozenset({"yes", "true"})
NO = frozenset({"no", "false"})
_STRIP = " \t\n\"'`*"


def _norm(token: str) -> str:
    # tokenizers mark a leading space with Ġ or ▁; JSON verdicts arrive with quotes around them
    return token.replace("Ġ", " ").replace("▁", " ").strip().strip("\"'").strip().lower()


def _alternatives(position: TokenLogprob) -> dict[str, float]:
    """Alternatives at this position, the chosen token included even if `top` omits it."""
    alternatives = dict(position.top)
    alternatives.setdefault(position.token, position.logprob)
    return alternatives


def _mass(alternatives: dict[str, float], words: frozenset[str]) -> float:
    return sum(math.exp(lp) for tok, lp in alternatives.items() if _norm(tok) in words)


# ------------------------------------------------------------------ first matching token (generic)
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


# ------------------------------------------------------------ at the position of a judged value
def _value_tokens(gen: Generation, pattern: re.Pattern[str]) -> list[TokenLogprob | None]:
    """Per match of `pattern` in the generated text, the token covering the start of group 'v'."""
    if not gen.logprobs:
        return []
    text = "".join(t.token for t in gen.logprobs)
    starts: list[int] = []
    offset = 0
    for tok in gen.logprobs:
        starts.append(offset)
        offset += len(tok.token)
    found: list[TokenLogprob | None] = []
    for match in pattern.finditer(text):
        target = match.start("v")
        hit = None
        for tok, start in zip(gen.logprobs, starts, strict=True):
            if start <= target < start + len(tok.token):
                hit = tok
                break
        found.append(hit)
    return found


def _json_value_pattern(key: str) -> re.Pattern[str]:
    return re.compile(r'"' + re.escape(key) + r'"\s*:\s*"?(?P<v>[^\s"])')


_RESULT_PATTERN = re.compile(r"\[RESULT\]\s*(?P<v>\S)")


def _p_yes(tok: TokenLogprob | None) -> float | None:
    if tok is None:
        return None
    p_yes = p_no = 0.0
    for text, logprob in _alternatives(tok).items():
        cleaned = text.strip(_STRIP).lower()
        if cleaned and "yes".startswith(cleaned):
            p_yes += math.exp(logprob)
        elif cleaned and "no".startswith(cleaned):
            p_no += math.exp(logprob)
    return p_yes / (p_yes + p_no) if p_yes + p_no > 0 else None


def yes_probabilities_at(gen: Generation, *, json_key: str = "verdict") -> list[float | None]:
    """P(yes) / (P(yes) + P(no)) at every `json_key` value of the reply, in order of appearance.

    A reply with a verdict list `{"verdicts": [{"verdict": "yes", "reason": ...}, ...]}` gives one probability
    per statement; a position whose alternatives hold neither yes nor no gives None.
    """
    return [_p_yes(tok) for tok in _value_tokens(gen, _json_value_pattern(json_key))]


def yes_probability_at(gen: Generation, *, json_key: str = "verdict") -> float | None:
    """P(yes) / (P(yes) + P(no)) at the last `json_key` value (the final verdict of a reply)."""
    found = yes_probabilities_at(gen, json_key=json_key)
    return found[-1] if found else None


def likert_expectation(
    gen: Generation, *, json_key: str | None = None, choices: tuple[int, ...] = (1, 2, 3, 4, 5)
) -> float | None:
    """Expected score over `choices` at the score token (`json_key` in JSON, else after `[RESULT]`).

    None when the provider returned no logprobs or no alternative at that position is a choice.
    """
    pattern = _json_value_pattern(json_key) if json_key else _RESULT_PATTERN
    found = _value_tokens(gen, pattern)
    tok = found[-1] if found else None
    if tok is None:
        return None
    mass: dict[int, float] = {}
    for text, logprob in _alternatives(tok).items():
        cleaned = text.strip(_STRIP)
        if cleaned.isdigit() and int(cleaned) in choices:
            mass[int(cleaned)] = mass.get(int(cleaned), 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return sum(score * p for score, p in mass.items()) / total


# --------------------------------------------------------------------------- provider capability
def supports_logprobs(settings: LLMSettings) -> bool:
    """Whether asking this model for token logprobs is safe (the provider returns them).

    The in-process provider always does; for others litellm's table of supported OpenAI params
    decides, so a provider without logprobs is never sent a parameter it would reject.
    """
    if is_local(settings.model):
        return True
    try:
        import litellm

        params = litellm.get_supported_openai_params(model=settings.model) or []
    except Exception:  # an unknown provider: do not risk a rejected request
        return False
    return "logprobs" in params
