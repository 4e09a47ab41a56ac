"""One statement's verification, as the verifier writes it and the report and review page read it.

Faithfulness puts one `StatementVerdict` per statement of an answer in the item details
(`details["verdicts"]`, dumped); `statement_verdicts(details)` reads them back typed, so no reader
sniffs dict keys.

Example:
    >>> v = StatementVerdict(statement="ZenML caches steps.", verdict=True, p_supported=0.93, threshold=0.6)
    >>> statement_verdicts({"verdicts": [v.model_dump()]})[0].verdict
    True
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class StatementVerdict(BaseModel):
    """The verification of one statement, as the verifier wrote it and the report and review page read it.

    `p_supported` is what the verdict was cut at (`threshold`): the judge's P(yes) itself, or its
    combination with lexical evidence (`ragwatch.judges.faithfulness.support_model`); `p_judge` is the judge's own
    P(yes). `evidence` holds the ids of the context sentences the judge cited, `evidence_text` their
    text; `rule` names a careful reader's rule that overruled the judge (no claim, nothing cited, a term
    the cited sentences do not contain).
    """

    statement: str
    verdict: bool | None  # None: undecided (every call that could decide it failed)
    p_supported: float | None = None
    p_judge: float | None = None
    threshold: float | None = None
    reason: str = ""
    evidence: list[int] = Field(default_factory=list)
    evidence_text: list[str] = Field(default_factory=list)
    lexical_support: float | None = None
    missing_terms: list[str] = Field(default_factory=list)
    rule: str | None = None
    window: int | None = None  # the context window that decided (window verification)
    error: str | None = None


def statement_verdicts(details: dict[str, Any]) -> list[StatementVerdict]:
    """The typed per-statement verdicts of one judged item (empty when it has none)."""
    return [StatementVerdict.model_validate(v) for v in details.get("verdicts") or []]
