"""P(supported) of a statement from the judge's P(yes) and model-free evidence: a fitted logistic model.

A small judge's P(yes) alone ranks statements of RAG answers poorly; the share of the statement's
word pairs found in the contexts ranks them better, and the two disagree where each is weak. The
`SupportModel` combines them: `P = sigmoid(intercept + sum(weight * feature))` with
`logit(P(yes))` (clipped) among the features. It is fitted on labelled RAG answer statements
(`benchmarks/judge_choice.py --rag`), reported cross-fitted (every statement scored by a model fitted
without its answer), and shipped per judge model and prompt version in
`ragwatch/judges/faithfulness/calibrations.py`.

Example:
    >>> m = SupportModel(intercept=-2.0, weights={"judge_logit": 1.0, "lexical": 3.0}, cutoff=0.5)
    >>> round(m.predict({"p_judge": 0.5, "lexical": 1.0}), 3)
    0.731
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

LOGIT_CLIP = 1e-4
FEATURES = ("judge_logit", "lexical", "no_claim", "uncited", "missing_terms", "absent_terms", "vetoed",
            "absent_numbers", "absent_identifiers", "absent_names", "absent_quantities", "absent_quoted")
_KIND_FIELDS = ("absent_numbers", "absent_identifiers", "absent_names", "absent_quantities", "absent_quoted")


def logit(p: float) -> float:
    p = min(max(p, LOGIT_CLIP), 1 - LOGIT_CLIP)
    return math.log(p / (1 - p))


def feature_vector(raw: Mapping[str, Any], names: tuple[str, ...] = FEATURES) -> list[float]:
    """The model's inputs from a statement's features (`StatementFeatures` dumped, or a record of the
    calibration data): `p_judge`, `lexical`, the rule flags; an absent-term kind is 1 when any term of it
    is absent (a record written before the kinds were recorded has none)."""
    values = {
        "judge_logit": logit(float(raw["p_judge"])) if raw.get("p_judge") is not None else 0.0,
        "lexical": float(raw.get("lexical") or 0.0),
        "no_claim": float(bool(raw.get("no_claim"))),
        "uncited": float(bool(raw.get("uncited"))),
        "missing_terms": float(min(int(raw.get("missing_terms") or 0), 3)),
        "absent_terms": float(bool(raw.get("absent_terms"))),
        # a rule decided "unsupported": no claim, or a term no retrieved context holds
        "vetoed": float(bool(raw.get("no_claim") or raw.get("absent_terms"))),
        **{field: float(bool(raw.get(field))) for field in _KIND_FIELDS},
    }
    return [values[n] for n in names]


class SupportModel(BaseModel):
    """A fitted logistic combination and the cut-off its verdicts use (chosen on the same labels)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    intercept: float
    weights: dict[str, float]
    cutoff: float = 0.5

    def predict(self, raw: Mapping[str, Any]) -> float:
        names = tuple(self.weights)
        unknown = set(names) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown support-model features {sorted(unknown)}; known: {list(FEATURES)}")
        z = self.intercept + sum(w * x for w, x in zip(self.weights.values(), feature_vector(raw, names),
                                                        strict=True))
        return 1 / (1 + math.exp(-z))
