"""The one builder of a statement's features: what the support model, the rules and the level read.

`statement_features` computes them from the statement, its retrieved contexts and the judge's reply
(its P(yes) and the sentences it cited; none when it was not asked). The evidence verifier decides on
the record, stores it in the verdict, and `features_of` hands it to the level; the calibration data
and `benchmarks/statement_features.py` write the same record, so what was fitted is what runs.

Which kinds of absent terms veto a statement (`VETO_KINDS`) was decided on labelled statements of RAG
answers by the precision of each kind (how often a statement it flags is labelled unsupported;
`benchmarks/planted_errors.py`, `benchmarks/results/planted_errors.md`): a veto that is wrong on
supported statements costs more than it saves. A quantity whose number the contexts hold under
another unit vetoes nothing (the contexts often state the number and leave the unit to the reader).
`versions.FEATURES_VERSION` names this record's definition; a calibration is fitted on one version.

Example:
    >>> f = statement_features("The purpose of Airflow is retrieval.", ["The purpose of RAG is retrieval."],
    ...                        p_judge=0.9, cited=[])
    >>> f.absent_names, f.absent_terms, f.uncited
    (['Airflow'], True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragwatch.judges.faithfulness.evidence import bigram_support, makes_no_claim, missing_terms
from ragwatch.judges.faithfulness.terms import TermKind, absent_terms
from ragwatch.statements import StatementFeatures, StatementVerdict

VETO_KINDS: tuple[TermKind, ...] = ("number", "identifier", "name", "quoted")
NO_CLAIM = "makes no checkable claim"
ABSENT = "not in any retrieved context"
FIELD_OF: dict[TermKind, str] = {"number": "absent_numbers", "identifier": "absent_identifiers",
                                 "name": "absent_names", "quantity": "absent_quantities", "quoted": "absent_quoted"}


def statement_features(statement: str, contexts: Sequence[str], *, p_judge: float | None = None,
                       cited: Sequence[str] | None = None) -> StatementFeatures:
    """The statement's features against `contexts`; `p_judge` and `cited` (the text of the sentences the
    judge cited) when the judge was asked, else None."""
    absent = absent_terms(statement, contexts)
    key = absent["number"] + absent["identifier"]
    # else the terms the cited sentences lack: often said in a neighbouring sentence, so a feature, not a veto
    missing = len(key) if key else len(missing_terms(statement, cited)) if cited else 0
    return StatementFeatures(
        p_judge=p_judge, lexical=bigram_support(statement, contexts), no_claim=makes_no_claim(statement),
        uncited=None if cited is None else not cited, missing_terms=missing,
        absent_terms=any(absent[kind] for kind in VETO_KINDS),
        **{field: absent[kind] for kind, field in FIELD_OF.items()},
    )


def vetoing_terms(features: StatementFeatures) -> list[str]:
    """The terms that veto the statement, in `VETO_KINDS` order."""
    return [t for kind in VETO_KINDS for t in getattr(features, FIELD_OF[kind])]


def absent_of(features: StatementFeatures) -> list[str]:
    """Every term of the statement no context holds, of any kind (what the reader is shown)."""
    return list(dict.fromkeys(t for field in FIELD_OF.values() for t in getattr(features, field)))


def features_of(verdict: StatementVerdict) -> dict[str, Any]:
    """The features a verdict was decided on, as the support model and the calibration data read them.

    A verdict stored before its features were (an older run's artifact, a record written by hand) has
    them rebuilt from its fields: its rule was one of the two, and its terms are not known by kind.
    """
    if verdict.features is not None:
        return verdict.features.model_dump()
    return StatementFeatures(p_judge=verdict.p_judge, lexical=verdict.lexical_support or 0.0,
                             no_claim=verdict.rule == NO_CLAIM, uncited=not verdict.evidence,
                             missing_terms=len(verdict.missing_terms),
                             absent_terms=verdict.rule is not None and verdict.rule != NO_CLAIM).model_dump()
