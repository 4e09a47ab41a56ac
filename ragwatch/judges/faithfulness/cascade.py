"""Which statements need the judge: those whose verdict some reply of the judge could change.

The shipped support model reads the judge's reply only through a few features (its P(yes), whether it
cited a sentence, how many of the statement's key terms its cited sentences lack); lexical support and
the rules decide the rest. A statement whose verdict is the same under every reply the judge could
give is decided without asking it: the verdict is exactly the one the judge's call would have led to.
`benchmarks/judge_cascade.py` measures how many calls this saves on labelled statements.

Example:
    >>> from ragwatch.judges.faithfulness.support_model import SupportModel
    >>> m = SupportModel(intercept=-2.0, weights={"lexical": 3.6, "uncited": -0.4, "missing_terms": 0.4}, cutoff=0.5)
    >>> judge_can_change(m, 0.5, lexical=0.95, n_terms=0), judge_can_change(m, 0.5, lexical=0.55, n_terms=2)
    (False, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragwatch.judges.faithfulness.support_model import LOGIT_CLIP, SupportModel

MAX_COUNTED_TERMS = 3  # `feature_vector` clips missing_terms here


def judge_replies(n_terms: int) -> list[dict[str, Any]]:
    """Every reply's features the support model can read: cited nothing, or cited sentences lacking 0 to
    `n_terms` (at most 3) of the statement's key terms; each at the lowest and the highest P(yes)."""
    cited = [{"uncited": False, "missing_terms": m} for m in range(min(n_terms, MAX_COUNTED_TERMS) + 1)]
    return [{**reply, "p_judge": p} for reply in [{"uncited": True, "missing_terms": 0}, *cited]
            for p in (LOGIT_CLIP, 1 - LOGIT_CLIP)]


def judge_can_change(model: SupportModel, threshold: float, *, lexical: float, n_terms: int,
                     base: Mapping[str, Any] | None = None) -> bool:
    """Whether the verdict of a statement with this lexical support and `n_terms` key terms (none absent
    from every context: those are vetoed whatever the judge says) depends on the judge's reply; `base`:
    the statement's other model-free features (`StatementFeatures`), when the model reads any."""
    verdicts = {model.predict({**(base or {}), "lexical": lexical, **reply}) >= threshold
                for reply in judge_replies(n_terms)}
    return len(verdicts) > 1


def unasked_probability(model: SupportModel, *, lexical: float, n_terms: int,
                        base: Mapping[str, Any] | None = None) -> float:
    """P(supported) of a statement decided without the judge: the mean over the replies it could give
    (where the judge cannot change the verdict, every reply's P is on the same side of the cut-off)."""
    replies = judge_replies(n_terms)
    return sum(model.predict({**(base or {}), "lexical": lexical, **reply}) for reply in replies) / len(replies)
