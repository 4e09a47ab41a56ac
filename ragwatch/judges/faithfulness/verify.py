"""The shared claim verifier: statements checked against context windows by a judge LLM.

The faithfulness judge verifies an answer's statements with it, the support judge a claim, and the
judge benchmarks call `verify_many` directly. `verify: batched` (default) checks all statements in
ONE call per context window (the reply lists a verdict, then a short reason, per statement);
`per_statement` makes one call per statement. Contexts longer than the judge's window
(`max_context_tokens`, ~4 characters per token) are never truncated: they are cut into windows and
checked by create-and-refine: window 1 first; statements not yet supported are checked against window
2 together with their previous verdict, and so on (one stage per window). With logprobs, P(supported)
of each statement is read at its verdict token, and the verdict is P(supported) >= the support
threshold (default: the threshold the model registry declares for the judge model, else 0.5).

Example:
    >>> verify_statements(llm, context, ["Paris is the capital of France."])  # doctest: +SKIP
    [StatementVerdict(statement='Paris is ...', verdict=True, p_supported=0.93, reason='...', window=1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from ragwatch.judges.base import DATA_RULE, fence, generation_error, to_json
from ragwatch.judges.engine import Call, Plan, Score, drive, gather
from ragwatch.judges.faithfulness.calibrations import judge_cutoff
from ragwatch.judges.faithfulness.versions import WindowMode, window_prompt_version
from ragwatch.llm.logprobs import yes_probabilities_at
from ragwatch.statements import StatementVerdict

VerifyMode = WindowMode
CHARS_PER_TOKEN = 4
REASON_CHARS = 400

VERIFY_SYSTEM = (
    "You check whether a STATEMENT is supported by the CONTEXT. Supported (yes) means the context "
    "states it or it follows directly from the context; otherwise (not mentioned, contradicted, or "
    "only plausible) the verdict is no. Use only the context, not your own knowledge.\n"
    f"{DATA_RULE}\n"
    'First give the verdict, then a one-sentence reason. Reply with JSON only: {"verdict": "yes" or '
    '"no", "reason": "<why>"}'
)


VERIFY_BATCH_SYSTEM = (
    "You check, for each numbered STATEMENT, whether it is supported by the CONTEXT. Supported (yes) "
    "means the context states it or it follows directly from the context; otherwise (not mentioned, "
    "contradicted, or only plausible) the verdict is no. Use only the context, not your own knowledge. "
    "Judge each statement on its own.\n"
    f"{DATA_RULE}\n"
    "For every statement, in order, first give the verdict, then a one-sentence reason. Reply with JSON "
    'only: {"verdicts": [{"verdict": "yes" or "no", "reason": "<why>"}, ...]} with one entry per statement.'
)


class VerdictReply(BaseModel):
    """The judge's reply for one statement: the verdict first, then a short reason.

    Field order is the decoding order (grammar-constrained decoding follows the schema). Verdict first
    because a verdict written after its reason is almost always "yes" with P(yes) ~ 1 (measured on
    QAGS-XSum: 0.997-1.0 on supported and unsupported claims alike), so no threshold separates them.
    """

    verdict: Literal["yes", "no"]
    reason: str = Field(max_length=REASON_CHARS)


@lru_cache(maxsize=64)
def verdicts_schema(n: int) -> type[BaseModel]:
    """Exactly `n` verdicts (grammar-constrained decoders honour min/maxItems), one per statement."""
    return create_model("Verdicts", verdicts=(list[VerdictReply], Field(min_length=n, max_length=n)))


def _question_note(question: str | None) -> list[str]:
    if not question:
        return []
    return [fence("QUESTION", question),
            "The statements below come from an answer to the QUESTION; use it only to tell what they refer to."]


def verify_prompt(
    statement: str, window: list[str], index: int, total: int, previous: tuple[str, str] | None,
    question: str | None = None,
) -> str:
    """The verification prompt for one window; from window 2 on it carries the previous verdict."""
    label = f"CONTEXT PART {index + 1} OF {total}" if total > 1 else "CONTEXT"
    parts = [fence(f"{label} PASSAGE {k}", text) for k, text in enumerate(window, start=1)]
    parts += _question_note(question)
    parts.append(fence("STATEMENT", statement))
    if previous is None:
        parts.append("Is the STATEMENT supported by the CONTEXT? Reply with the JSON object only.")
    else:
        verdict, reason = previous
        parts.append(
            f"The context is long, so it is checked in parts. On the earlier parts the verdict was "
            f"{verdict.upper()}, for this reason:\n{fence('EARLIER REASON', reason)}\n"
            "Refine the verdict with this new part: answer yes if this part (alone or together with the "
            "earlier finding) supports the STATEMENT, otherwise no. Reply with the JSON object only."
        )
    return "\n".join(parts)


def verify_batch_prompt(
    statements: Sequence[str],
    window: list[str],
    index: int,
    total: int,
    previous: Sequence[tuple[str, str] | None] = (),
    question: str | None = None,
) -> str:
    """All statements against one window; from window 2 on each carries its previous verdict."""
    label = f"CONTEXT PART {index + 1} OF {total}" if total > 1 else "CONTEXT"
    parts = [fence(f"{label} PASSAGE {k}", text) for k, text in enumerate(window, start=1)]
    parts += _question_note(question)
    for k, statement in enumerate(statements, start=1):
        parts.append(fence(f"STATEMENT {k}", statement))
        earlier = previous[k - 1] if k - 1 < len(previous) else None
        if earlier is not None:
            parts.append(f"On the earlier parts of the context the verdict for STATEMENT {k} was "
                         f"{earlier[0].upper()}: {fence(f'EARLIER REASON {k}', earlier[1])}")
    if any(p is not None for p in previous):
        parts.append("The context is long, so it is checked in parts. Refine each verdict with this new "
                     "part: yes if this part (alone or with the earlier finding) supports the statement.")
    n = len(statements)
    parts.append(f"Give exactly {n} verdict{'s' if n > 1 else ''}, one per STATEMENT in order. "
                 "Reply with the JSON object only.")
    return "\n".join(parts)


_BREAKS = ("\n\n", "\n", ". ", " ")


def split_text(text: str, limit: int) -> list[str]:
    """Cut `text` into pieces of at most `limit` characters, at paragraph/sentence/word breaks if possible."""
    pieces = []
    while len(text) > limit:
        cut = -1
        for sep in _BREAKS:
            cut = text.rfind(sep, limit // 2, limit)
            if cut != -1:
                cut += len(sep)
                break
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut])
        text = text[cut:]
    if text.strip() or not pieces:
        pieces.append(text)
    return pieces


def context_window_spans(contexts: Sequence[str], max_chars: int) -> list[list[tuple[int, int, int]]]:
    """The windows as (passage, start, end) spans: passages packed into windows of at most `max_chars`,
    any passage longer than that split (the review page points into them with these offsets)."""
    windows: list[list[tuple[int, int, int]]] = []
    current: list[tuple[int, int, int]] = []
    size = 0
    for p, ctx in enumerate(contexts):
        offset = 0
        for piece in split_text(ctx, max_chars):
            if current and size + len(piece) > max_chars:
                windows.append(current)
                current, size = [], 0
            current.append((p, offset, offset + len(piece)))
            size += len(piece)
            offset += len(piece)
    if current:
        windows.append(current)
    return windows


def context_windows(contexts: Sequence[str], max_chars: int) -> list[list[str]]:
    """Pack passages into windows of at most `max_chars`, splitting any passage longer than that."""
    return [[contexts[p][start:end] for p, start, end in window]
            for window in context_window_spans(contexts, max_chars)]


class _Check:
    """One statement's verification across windows (mutable while the plan runs)."""

    def __init__(self, statement: str) -> None:
        self.statement = statement
        self.greedy: str | None = None  # "yes" / "no" once a window answered
        self.supported: bool | None = None
        self.reason = ""
        self.p_yes: float | None = None
        self.window: int | None = None
        self.errors: list[str] = []

    def record(self, reply: VerdictReply, p_yes: float | None, window: int, threshold: float | None) -> None:
        self.greedy, self.reason, self.p_yes, self.window = reply.verdict, reply.reason, p_yes, window
        # with a probability the cut-off decides; the greedy token is the fallback
        self.supported = p_yes >= threshold if (p_yes is not None and threshold is not None) else (
            reply.verdict == "yes"
        )

    def verdict(self) -> StatementVerdict:
        undecided = not self.supported and bool(self.errors)  # a failed window might have supported it
        return StatementVerdict(
            statement=self.statement,
            verdict=None if undecided else bool(self.supported),
            p_supported=self.p_yes,
            reason=self.reason,
            window=self.window,
            error=self.errors[0] if undecided else None,
        )


class Verifier:
    """Stage 2: statements against context windows by create-and-refine, batched or per statement."""

    def __init__(
        self,
        *,
        verify: VerifyMode = "batched",
        max_context_tokens: int = 1500,
        use_logprobs: bool = False,
        support_threshold: float | None = None,
        examples: Sequence[tuple[str, list[str], VerdictReply]] = (),
    ) -> None:
        if verify not in ("batched", "per_statement"):
            raise ValueError(f"verify must be 'batched' or 'per_statement', not {verify!r}")
        if max_context_tokens < 50:
            raise ValueError(
                f"max_context_tokens must be >= 50 (the judge's context window), got {max_context_tokens}"
            )
        self.verify = verify
        self.max_context_chars = max_context_tokens * CHARS_PER_TOKEN
        self.use_logprobs = use_logprobs
        self.threshold = support_threshold if use_logprobs else None
        self.single_examples: list[dict[str, str]] = []
        self.batch_examples: list[dict[str, str]] = []
        for statement, window, reply in examples:
            answer = to_json(reply.model_dump())
            self.single_examples += [
                {"role": "user", "content": verify_prompt(statement, window, 0, 1, None)},
                {"role": "assistant", "content": answer},
            ]
            self.batch_examples += [
                {"role": "user", "content": verify_batch_prompt([statement], window, 0, 1)},
                {"role": "assistant", "content": to_json({"verdicts": [reply.model_dump()]})},
            ]

    def windows(self, contexts: Sequence[str]) -> list[list[str]]:
        return context_windows(contexts, self.max_context_chars)

    def plan(self, contexts: Sequence[str], statements: Sequence[str], question: str | None = None) -> Plan:
        """Create-and-refine: one stage per window, only statements not yet supported go on."""
        checks = [_Check(s) for s in statements]
        windows = self.windows(contexts)
        for w, window in enumerate(windows):
            pending = [c for c in checks if not c.supported]
            if not pending:
                break
            # pending statements are not (yet) supported: their earlier verdict is "no" (by the cut-off
            # with logprobs, even where the greedy token said yes)
            previous = [("no", c.reason) if c.greedy is not None else None for c in pending]
            if self.verify == "batched":
                prompt = verify_batch_prompt([c.statement for c in pending], window, w, len(windows), previous,
                                             question)
                (gen,) = yield [Call([*self.batch_examples, {"role": "user", "content": prompt}],
                                     verdicts_schema(len(pending)), VERIFY_BATCH_SYSTEM, self.use_logprobs)]
                if not gen.ok or gen.parsed is None:
                    for c in pending:
                        c.errors.append(f"window {w + 1}: {generation_error(gen)}")
                    continue
                probs = yes_probabilities_at(gen) if self.use_logprobs else []
                if len(probs) != len(pending):  # positions not found: fall back to greedy verdicts
                    probs = [None] * len(pending)
                for c, reply, p in zip(pending, gen.parsed.verdicts, probs, strict=True):
                    c.record(reply, p, w + 1, self.threshold)
            else:
                gens = yield [
                    Call([*self.single_examples, {"role": "user", "content": verify_prompt(
                        c.statement, window, w, len(windows), prev, question)}], VerdictReply, VERIFY_SYSTEM,
                        self.use_logprobs)
                    for c, prev in zip(pending, previous, strict=True)
                ]
                for c, gen in zip(pending, gens, strict=True):
                    if not gen.ok or gen.parsed is None:
                        c.errors.append(f"window {w + 1}: {generation_error(gen)}")
                        continue
                    probs = yes_probabilities_at(gen) if self.use_logprobs else []
                    c.record(gen.parsed, probs[-1] if probs else None, w + 1, self.threshold)
        return [c.verdict() for c in checks], len(windows)


def verify_many(
    llm: Any,
    items: Sequence[tuple[str | Sequence[str], Sequence[str]]],
    *,
    model: str | None = None,
    verify: VerifyMode = "batched",
    use_logprobs: bool = True,
    support_threshold: float | None = None,
    max_context_tokens: int = 1500,
) -> list[list[StatementVerdict]]:
    """`verify_statements` for many (context, statements) sets, every stage in one batch."""
    cut = judge_cutoff(model, window_prompt_version(verify), features_version=None, option=support_threshold,
                       use_logprobs=use_logprobs)
    verifier = Verifier(verify=verify, max_context_tokens=max_context_tokens, use_logprobs=use_logprobs,
                        support_threshold=cut.cutoff)
    plans = {
        str(k): verifier.plan([context] if isinstance(context, str) else list(context), list(statements))
        for k, (context, statements) in enumerate(items)
    }
    outcomes, _gens = drive(gather(plans), llm)
    out = []
    for k in range(len(items)):
        value = outcomes[str(k)]
        if isinstance(value, Score):  # the plan itself broke: every statement is undecided
            value = ([StatementVerdict(statement=s, verdict=None, error=value.error) for s in items[k][1]], 0)
        out.append(value[0])
    return out


def verify_statements(
    llm: Any,
    context: str | Sequence[str],
    statements: Sequence[str],
    *,
    model: str | None = None,
    verify: VerifyMode = "batched",
    use_logprobs: bool = True,
    support_threshold: float | None = None,
    max_context_tokens: int = 1500,
) -> list[StatementVerdict]:
    """Verify `statements` against `context` (one text or several passages) with the judge `llm`
    (whose model string is `model`).

    Batched: one call per context window for all statements; per_statement: one call per
    statement. With logprobs the verdict is P(supported) >= `support_threshold` (default: the
    calibrated cut-off of `model` for this verifier's prompt, else the fallback; `calibrations.judge_cutoff`).

    Example:
        >>> verdicts = verify_statements(llm, article, ["The mayor resigned.", "It rained."])  # doctest: +SKIP
        >>> [(v.verdict, round(v.p_supported, 2)) for v in verdicts]  # doctest: +SKIP
        [(True, 0.91), (False, 0.12)]
    """
    return verify_many(
        llm, [(context, statements)], model=model, verify=verify, use_logprobs=use_logprobs,
        support_threshold=support_threshold, max_context_tokens=max_context_tokens,
    )[0]
