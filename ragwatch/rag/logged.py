"""A system under test that already answered: the answers and contexts a log recorded.

A logged answer is evaluated as it was given: no system is called, no generator runs (its usage is
zero by construction). The answer travels with its evaluation sample (`sample.metadata["logged_answer"]`,
written by `ragwatch.evalset.logged.log_samples`), so the evaluation path is the same as for any other
system: `answer_samples(samples)` returns the logged answers in the samples' order.

Example:
    >>> rag = build_rag(RagSettings(kind="logged"))
    >>> rag.answer_samples(samples)[0].answer  # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ragwatch.rag.base import SystemCalls, canonical_fingerprint, check_questions
from ragwatch.types import EvalSample, RagAnswer

LOGGED_KEY = "logged_answer"
NOT_ASKABLE = ("a logged system answers only the questions its log holds: it cannot be asked a new question "
               "(turn handcrafted keyword tests off for logs: evaluate.e2e.enabled: false)")


class LoggedRAG:
    """The answers of a log; `answers` (sample id -> answer) is optional: by default each sample
    carries its own logged answer."""

    def __init__(self, answers: Mapping[str, RagAnswer] | None = None, source: str = "log") -> None:
        self.answers = dict(answers or {})
        self.source = source
        self.seen: list[str] = []  # ids of the samples answered, for the fingerprint
        self._given: list[RagAnswer] = []

    def answer_samples(self, samples: Sequence[EvalSample]) -> list[RagAnswer]:
        """The logged answer of each sample, in order; a sample the log does not hold gets an error."""
        out = []
        for sample in samples:
            self.seen.append(sample.id)
            if sample.id in self.answers:
                out.append(self.answers[sample.id])
            elif LOGGED_KEY in sample.metadata:
                out.append(RagAnswer.model_validate(sample.metadata[LOGGED_KEY]))
            else:
                out.append(RagAnswer(question=sample.question, error=f"sample {sample.id!r} has no logged answer"))
        self._given.extend(out)
        return out

    def answer(self, question: str) -> RagAnswer:
        matches = [a for a in self.answers.values() if a.question == question]
        if len(matches) == 1:
            return matches[0]
        return RagAnswer(question=question, error=NOT_ASKABLE)

    def answer_many(self, questions: list[str]) -> list[RagAnswer]:
        return [self.answer(q) for q in check_questions(questions)]

    def calls(self) -> SystemCalls:
        """A log is asked nothing: 0 calls; an empty or missing logged answer is a failed question."""
        failed = [a for a in self._given if not a.ok]
        return SystemCalls(target=f"logged {self.source}", questions=len(self._given), calls=0,
                           answered=len(self._given) - len(failed), failed=len(failed),
                           failures={"error": len(failed)} if failed else {},
                           reasons=dict(Counter(str(a.error) for a in failed)))

    def describe(self) -> dict[str, Any]:
        return {"kind": "logged", "source": self.source, "generator_calls": 0}

    def fingerprint(self) -> str:
        return canonical_fingerprint(self.describe())
