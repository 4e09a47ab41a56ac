"""Faithfulness, statement by statement: is every claim of the answer supported by the retrieved contexts?

Stage 1 splits each answer into at most `max_statements` standalone statements (one batch).
Stage 2 verifies each statement against the contexts (yes/no with a reason). Contexts longer than
the judge's window (`max_context_tokens`, ~4 characters per token) are never truncated: they are cut
into windows and checked by create-and-refine: window 1 first; a statement not yet supported is
checked against window 2 together with the previous verdict, and so on (one batch per window).
Item score = supported / total statements; with logprobs, `weighted_score` = mean P(yes).

Rules for items that cannot be scored (explicit failures, never a score of 0 by default):
empty answer -> "empty answer: no statements to verify"; no retrieved contexts -> "no retrieved
contexts to verify against"; zero statements extracted -> "the judge found no statements in the
answer"; a statement whose every verification call failed -> failure naming the statement.

Example:
    >>> result = FaithfulnessJudge(llm, max_statements=8).evaluate(samples, answers)  # doctest: +SKIP
    >>> result.items[0].details["statements"], result.items[0].details["statement_scores"]  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, create_model

from ragwatch.judges.base import (
    DATA_RULE,
    FewShotExample,
    answer_error,
    build_result,
    check_aligned,
    fence,
    generation_error,
    logprob_overrides,
    mean,
    model_name,
    to_json,
    usage_of,
)
from ragwatch.judges.weights import yes_probability_at
from ragwatch.llm.types import Generation
from ragwatch.results import ItemScore, MetricResult
from ragwatch.types import EvalSample, RagAnswer

PROMPT_VERSION = "faithfulness-v1"
CHARS_PER_TOKEN = 4
STATEMENT_CHARS = 300
REASON_CHARS = 400

SPLIT_SYSTEM = (
    "You split an ANSWER into standalone factual statements. Each statement must be understandable on "
    "its own (replace pronouns with the names they refer to) and state one claim made by the answer. "
    "Do not add claims the answer does not make. If the answer makes no factual claim (for example "
    "'I don't know'), return an empty list. Return at most {n} statements; merge minor claims if needed.\n"
    f"{DATA_RULE}\n"
    'Reply with JSON only: {{"statements": ["<statement>", ...]}}'
)

VERIFY_SYSTEM = (
    "You check whether a STATEMENT is supported by the CONTEXT. Supported (yes) means the context "
    "states it or it follows directly from the context; otherwise (not mentioned, contradicted, or "
    "only plausible) the verdict is no. Use only the context, not your own knowledge.\n"
    f"{DATA_RULE}\n"
    'First give a one-sentence reason, then the verdict. Reply with JSON only: {"reason": "<why>", '
    '"verdict": "yes" or "no"}'
)


class StatementVerdict(BaseModel):
    reason: str = Field(max_length=REASON_CHARS)
    verdict: Literal["yes", "no"]


def statements_schema(max_statements: int) -> type[BaseModel]:
    """A bounded list of bounded strings, so grammar-constrained decoding cannot run away."""
    return create_model(
        "Statements",
        statements=(
            list[Annotated[str, StringConstraints(max_length=STATEMENT_CHARS)]],
            Field(max_length=max_statements),
        ),
    )


def split_prompt(question: str, answer: str) -> str:
    return (
        f"{fence('QUESTION', question)}\n{fence('ANSWER', answer)}\n"
        "Split the ANSWER into standalone statements. Reply with the JSON object only."
    )


def verify_prompt(
    statement: str, window: list[str], index: int, total: int, previous: tuple[str, str] | None
) -> str:
    """The verification prompt for one window; from window 2 on it carries the previous verdict."""
    label = f"CONTEXT PART {index + 1} OF {total}" if total > 1 else "CONTEXT"
    parts = [fence(f"{label} PASSAGE {k}", text) for k, text in enumerate(window, start=1)]
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


def context_windows(contexts: Sequence[str], max_chars: int) -> list[list[str]]:
    """Pack passages into windows of at most `max_chars`, splitting any passage longer than that."""
    windows: list[list[str]] = []
    current: list[str] = []
    size = 0
    for ctx in contexts:
        for piece in split_text(ctx, max_chars):
            if current and size + len(piece) > max_chars:
                windows.append(current)
                current, size = [], 0
            current.append(piece)
            size += len(piece)
    if current:
        windows.append(current)
    return windows


@dataclass
class _Check:
    """One statement's verification across windows."""

    item: int
    statement: str
    verdict: str | None = None  # "yes" / "no" once a window answered
    reason: str = ""
    p_yes: float | None = None
    window: int | None = None  # the window that decided
    errors: list[str] = field(default_factory=list)


class FaithfulnessJudge:
    """Supported statements / total statements, verified against the contexts actually retrieved."""

    def __init__(
        self,
        llm: Any,
        *,
        max_statements: int = 8,
        max_context_tokens: int = 1500,
        few_shot: Sequence[FewShotExample | dict[str, Any]] = (),
        use_logprobs: bool = False,
        name: str = "faithfulness",
    ) -> None:
        if max_statements < 1:
            raise ValueError(f"max_statements must be >= 1, got {max_statements}")
        if max_context_tokens < 50:
            raise ValueError(
                f"max_context_tokens must be >= 50 (the judge's context window), got {max_context_tokens}"
            )
        self.name = name
        self.llm = llm
        self.max_statements = max_statements
        self.max_context_chars = max_context_tokens * CHARS_PER_TOKEN
        self.use_logprobs = use_logprobs
        self.schema = statements_schema(max_statements)
        self.split_examples: list[dict[str, str]] = []
        self.verify_examples: list[dict[str, str]] = []
        for raw in few_shot:
            self._add_example(FewShotExample.model_validate(raw))

    def _add_example(self, ex: FewShotExample) -> None:
        if "statement" in ex.input:  # a verification example: {statement, context} -> {reason, verdict}
            verdict = StatementVerdict.model_validate(ex.output)
            ctx = ex.input.get("context", ex.input.get("contexts", ""))
            window = [str(c) for c in ctx] if isinstance(ctx, list) else [str(ctx)]
            self.verify_examples += [
                {"role": "user", "content": verify_prompt(str(ex.input["statement"]), window, 0, 1, None)},
                {"role": "assistant", "content": to_json(verdict.model_dump())},
            ]
        elif "answer" in ex.input:  # a splitting example: {question, answer} -> {statements}
            parsed = self.schema.model_validate(ex.output)
            self.split_examples += [
                {
                    "role": "user",
                    "content": split_prompt(str(ex.input.get("question", "")), str(ex.input["answer"])),
                },
                {"role": "assistant", "content": to_json(parsed.model_dump())},
            ]
        else:
            raise ValueError(
                "a faithfulness few-shot example needs input {question, answer} with output "
                "{statements: [...]}, or input {statement, context} with output {reason, verdict}; "
                f"got input keys {sorted(ex.input)}"
            )

    def evaluate(self, samples: list[EvalSample], answers: list[RagAnswer]) -> MetricResult:
        check_aligned(samples, answers)
        overrides = logprob_overrides(self.use_logprobs)
        errors: dict[int, str] = {}
        for i, answer in enumerate(answers):
            if (err := answer_error(answer)) is not None:
                errors[i] = err
            elif not answer.answer.strip():
                errors[i] = "empty answer: no statements to verify"
            elif not answer.contexts:
                errors[i] = "no retrieved contexts to verify against"
        gens: list[Generation] = []

        # Stage 1: statements (one batch).
        todo = [i for i in range(len(samples)) if i not in errors]
        split_gens = (
            self.llm.generate_many(
                [
                    [
                        *self.split_examples,
                        {"role": "user", "content": split_prompt(samples[i].question, answers[i].answer)},
                    ]
                    for i in todo
                ],
                schema=self.schema,
                system=SPLIT_SYSTEM.format(n=self.max_statements),
            )
            if todo
            else []
        )
        gens += split_gens
        checks: dict[int, list[_Check]] = {}
        for i, gen in zip(todo, split_gens, strict=True):
            if not gen.ok or gen.parsed is None:
                errors[i] = f"splitting the answer into statements: {generation_error(gen)}"
                continue
            statements = [s.strip() for s in gen.parsed.statements if s.strip()]
            if not statements:
                errors[i] = "the judge found no statements in the answer"
                continue
            checks[i] = [_Check(item=i, statement=s) for s in statements]

        # Stage 2: create-and-refine over context windows (one batch per window).
        windows = {
            i: context_windows([c.text for c in answers[i].contexts], self.max_context_chars) for i in checks
        }
        round_ = 0
        while True:
            pending = [
                c for i, cs in checks.items() if round_ < len(windows[i]) for c in cs if c.verdict != "yes"
            ]
            if not pending:
                break
            prompts = []
            for c in pending:
                previous = (c.verdict, c.reason) if c.verdict is not None else None
                user = verify_prompt(
                    c.statement, windows[c.item][round_], round_, len(windows[c.item]), previous
                )
                prompts.append(
                    [
                        *self.verify_examples,
                        {"role": "user", "content": user},
                    ]
                )
            round_gens = self.llm.generate_many(
                prompts, schema=StatementVerdict, system=VERIFY_SYSTEM, **overrides
            )
            gens += round_gens
            for c, gen in zip(pending, round_gens, strict=True):
                if not gen.ok or gen.parsed is None:
                    c.errors.append(f"window {round_ + 1}: {generation_error(gen)}")
                    continue
                c.verdict, c.reason, c.window = gen.parsed.verdict, gen.parsed.reason, round_ + 1
                c.p_yes = yes_probability_at(gen)
            round_ += 1

        items = [
            self._item(s.id, errors.get(i), checks.get(i), len(windows.get(i, [])))
            for i, s in enumerate(samples)
        ]
        return build_result(
            self.name,
            items,
            usage_of(gens, model_name(self.llm)),
            extra={
                "prompt_version": PROMPT_VERSION,
                "individual_scores": [it.score for it in items],
                "max_statements": self.max_statements,
                "max_context_tokens": self.max_context_chars // CHARS_PER_TOKEN,
                "windowed_items": sum(1 for w in windows.values() if len(w) > 1),
                "higher_is_better": True,
                "scale": [0, 1],
                "judge_model": model_name(self.llm),
            },
        )

    def _item(
        self, item_id: str, error: str | None, checks: list[_Check] | None, n_windows: int
    ) -> ItemScore:
        if error is not None or checks is None:
            return ItemScore(item_id=item_id, error=error or "not judged")
        # A statement with a failed call and no "yes" anywhere is undecided: that window might support it.
        undecided = [(k, c) for k, c in enumerate(checks, start=1) if c.verdict != "yes" and c.errors]
        if undecided:
            k, c = undecided[0]
            return ItemScore(
                item_id=item_id,
                error=f"statement {k} ({_short(c.statement)}) could not be verified: {c.errors[0]}",
                details={"statements": [c.statement for c in checks]},
            )
        scores = [1 if c.verdict == "yes" else 0 for c in checks]
        details: dict[str, Any] = {
            "statements": [c.statement for c in checks],
            "statement_scores": scores,
            "reasons": [c.reason for c in checks],
            "statement_windows": [c.window for c in checks],
            "windows": n_windows,
            "reason": f"{sum(scores)} of {len(scores)} statements supported by the retrieved contexts",
        }
        probs = [c.p_yes for c in checks]
        if all(p is not None for p in probs):
            details["statement_yes_probabilities"] = probs
            details["weighted_score"] = mean(probs)  # type: ignore[arg-type]
        return ItemScore(item_id=item_id, score=sum(scores) / len(scores), details=details)


def _short(text: str, limit: int = 60) -> str:
    text = re.sub(r"\s+", " ", text)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
