"""One statement's verification, as the verifier writes it and the report and review page read it.

Faithfulness puts one `StatementVerdict` per statement of an answer in the item details
(`details["verdicts"]`, dumped); `statement_verdicts(details)` reads them back typed, so no reader
sniffs dict keys. The evidence verifier's verdict carries the `StatementFeatures` it was decided on
(built by `ragwatch.judges.faithfulness.features.statement_features`, the only builder): what the
support model, the rules, the level and the calibration data read.

Example:
    >>> v = StatementVerdict(statement="ZenML caches steps.", verdict=True, p_supported=0.93, threshold=0.6)
    >>> statement_verdicts({"verdicts": [v.model_dump()]})[0].verdict
    True
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class StatementFeatures(BaseModel):
    """What the support model and the rules read of one statement, as the verifier decided on it and the
    calibration data stores it (one JSON object, its lists of terms kept for the reader).

    `uncited` is None when the judge was not asked; `missing_terms` counts the number/identifier terms no
    context holds, else those the cited sentences lack; `absent_<kind>` are the terms of each kind no
    retrieved context holds (`ragwatch.judges.faithfulness.terms`); `absent_terms` says whether any of
    them is of a kind that vetoes the statement (`features.VETO_KINDS`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    p_judge: float | None = None
    lexical: float = 0.0
    no_claim: bool = False
    uncited: bool | None = None
    missing_terms: int = 0
    absent_numbers: list[str] = Field(default_factory=list)
    absent_identifiers: list[str] = Field(default_factory=list)
    absent_names: list[str] = Field(default_factory=list)
    absent_quantities: list[str] = Field(default_factory=list)
    absent_quoted: list[str] = Field(default_factory=list)
    absent_terms: bool = False

    @property
    def vetoed(self) -> bool:
        """A rule decides "unsupported": no claim, or a term of a vetoing kind no context holds."""
        return self.no_claim or self.absent_terms


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
    features: StatementFeatures | None = None  # the evidence verifier's inputs of this verdict


def statement_verdicts(details: dict[str, Any]) -> list[StatementVerdict]:
    """The typed per-statement verdicts of one judged item (empty when it has none)."""
    return [StatementVerdict.model_validate(v) for v in details.get("verdicts") or []]
