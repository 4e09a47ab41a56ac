"""Measured calibrations of judge models on labelled data of the kind they score, per prompt version.

A calibration is what `benchmarks/judge_choice.py --rag` fitted and measured for one judge model and
one faithfulness prompt version: the support model (judge P(yes) + lexical evidence -> P(supported),
with its cut-off) and the agreement of the shipped verdicts with the labels, cross-fitted by answer.
A judge whose model or prompt has no entry runs on its own P(yes) at 0.5 (or `support_threshold`),
and its agreement is unknown: the printout and the gate say so.

Example:
    >>> faithfulness_calibration("gpt-4o-mini", "faithfulness-v5") is None
    True
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ragwatch.judges.faithfulness.support_model import SupportModel
from ragwatch.results import JudgeAgreement

RAG_STATEMENTS = "statements of RAG answers over the ZenML docs sample"
REFERENCE_LABELS = "reference labels: two careful readings by a strong LLM annotator, not human labels"


class FaithfulnessCalibration(BaseModel):
    """The fitted support model of one judge model and prompt version, and what it was measured to agree."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str  # the packaged model's name (without `local/`) or a litellm model string
    prompt_version: str
    support_model: SupportModel
    agreement: JudgeAgreement
    # the labelled statements with this judge's features (in ragwatch/judges/faithfulness/calibration_data/): the
    # faithfulness level is calibrated on them at run time (`ragwatch.judges.faithfulness.level`)
    level_data: str | None = None


CALIBRATIONS: tuple[FaithfulnessCalibration, ...] = (
    # Fitted on the 72 agreed statements of data/judge_dev/rag_statements (logistic regression, balanced
    # classes, cut-off of best balanced accuracy); agreement cross-fitted by answer (5 folds, seed 0: each
    # statement scored by a model fitted without its answer), under the verifier's rules, 95% bootstrap
    # intervals. `python benchmarks/judge_choice.py --rag data/judge_dev/rag_statements/statements.jsonl`.
    # The judge's P(yes) alone: ROC AUC 0.55; lexical support alone: 0.77; together 0.78 [0.67, 0.88].
    FaithfulnessCalibration(
        model="qwen2.5-coder-1.5b-instruct",
        prompt_version="faithfulness-v5",
        support_model=SupportModel(intercept=-1.5374, weights={"judge_logit": 0.1412, "lexical": 2.1731},
                                   cutoff=0.4367),
        agreement=JudgeAgreement(kappa=0.50, kappa_ci=(0.30, 0.69), balanced_accuracy=0.74,
                                 balanced_accuracy_ci=(0.64, 0.83), n=72, data=RAG_STATEMENTS,
                                 labels=REFERENCE_LABELS),
        level_data="qwen2.5-coder-1.5b-instruct__faithfulness-v5.jsonl",
    ),
)


def faithfulness_calibration(model: str, prompt_version: str) -> FaithfulnessCalibration | None:
    """The calibration of this judge model (any spelling: `local/<name>` or `<name>`) and prompt, else None."""
    from ragwatch.llm.models import packaged

    spec = packaged(model)
    name = spec.name if spec is not None else model
    return next((c for c in CALIBRATIONS if c.model == name and c.prompt_version == prompt_version), None)
