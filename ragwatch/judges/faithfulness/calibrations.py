"""Measured calibrations of judge models on labelled data of the kind they score, per prompt version.

A calibration is what `benchmarks/verdict_refit.py` fitted and measured for one judge model and
one faithfulness prompt version: the support model (the judge's reply and model-free evidence ->
P(supported), with its cut-off) and the agreement of the shipped verdicts with the labels, held out (an unseen system).
A judge whose model or prompt has no entry runs on its own P(yes) at 0.5 (or `support_threshold`),
and its agreement is unknown: the printout and the gate say so.

Example:
    >>> faithfulness_calibration("gpt-4o-mini", "faithfulness-v6") is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.judges.faithfulness.support_model import SupportModel
from ragwatch.judges.faithfulness.versions import FEATURES_VERSION, WINDOW_PROMPT_VERSIONS
from ragwatch.results import JudgeAgreement

# the cut-off of a judge with no calibrated one: P(yes) against even odds
FALLBACK_CUTOFF = 0.5
RAG_STATEMENTS_HELD_OUT = ("statements of RAG answers of three systems over the ZenML docs sample, each scored by "
                           "a fit that never saw its system")
REFERENCE_LABELS = "reference labels: two careful readings by a strong LLM annotator, not human labels"


class FaithfulnessCalibration(BaseModel):
    """The fitted support model of one judge model and prompt version, and what it was measured to agree."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str  # the packaged model's name (without `local/`) or a litellm model string
    prompt_version: str
    # the statement features it was fitted on (`versions.FEATURES_VERSION`); a
    # calibration stored before they were named is features-v1
    # None: the verifier reads no statement features (the window verifiers and the support judge: P(yes) alone)
    features_version: str | None = "features-v1"
    # the fitted support model and its cut-off; None: the verdict is the judge's P(yes) against `cutoff`
    support_model: SupportModel | None = None
    # the cut-off of a calibration without a support model (with one, the support model's cut-off is the one)
    cutoff: float | None = Field(default=None, gt=0, lt=1)
    # the agreement of the shipped verdicts on labelled data of the kind this judge scores; None: unmeasured there
    agreement: JudgeAgreement | None = None
    # what the model was measured at as a judge elsewhere (other data, other prompt), printed when agreement is unknown
    measured: str | None = None
    # the labelled statements with this judge's features (in ragwatch/judges/faithfulness/calibration_data/): the
    # faithfulness level is calibrated on them at run time (`ragwatch.judges.faithfulness.level`)
    level_data: str | None = None
    # the systems under test of `level_data` (its `system` codes) -> their fingerprint (`RagSystem.fingerprint()`):
    # a run of one of them is calibrated on its own kind of answers; any other run carries the between-system
    # bias measured by leaving each labelled system out
    systems: dict[str, str] = {}

    @model_validator(mode="after")
    def _one_cutoff(self) -> FaithfulnessCalibration:
        if self.support_model is not None and self.cutoff is not None:
            raise ValueError("a calibration with a support model uses its cut-off; leave `cutoff` unset")
        return self

    @property
    def verdict_cutoff(self) -> float | None:
        """The cut-off of this judge's verdicts: the support model's, else the declared one (None: none chosen)."""
        return self.support_model.cutoff if self.support_model is not None else self.cutoff

    def system_code(self, fingerprint: str | None) -> str | None:
        """The calibration data's code of the system with this fingerprint, else None (an unseen system)."""
        return next((code for code, fp in self.systems.items() if fingerprint and fp == fingerprint), None)


CALIBRATIONS: tuple[FaithfulnessCalibration, ...] = (
    # Refitted for prompt faithfulness-v6 with features-v2 (absent names and quoted strings veto too) on the 300
    # agreed statements of three systems under test (S0, the default: the 72 of
    # data/judge_dev/rag_statements/features.jsonl; S1 and S2: 228 of features_new.jsonl, the reference labels of
    # issue 35), from the judge's replies recorded with that prompt and the model-free features of features-v2
    # (`benchmarks/statement_features.py --refresh`, no model run): logistic regression, cut-off of best balanced
    # accuracy of the verdicts under the rules. The inputs are those with the best cross-fitted kappa among 14
    # candidates (benchmarks/verdict_refit.py): the judge's P(yes) (next to no weight), lexical support, whether
    # the judge cited no sentence, how many terms the cited sentences lack, and the rules' veto.
    # The cut-off: the best balanced accuracy among the cut-offs that call no more statements unsupported than
    # the readers find (rule `balanced_accuracy_capped`, 2026-11-27; the unconstrained best, 0.6238, called 59%
    # unsupported held out where the readers find 49%, and 31% of the supported ones).
    # Agreement: leave one system out (the candidate chosen and fitted on the other two systems, measured on
    # the third, all three ways, pooled; 95% bootstrap intervals over answers), see the results file
    # (benchmarks/results/verdict_refit.md, sections 2 and 7, the same command).
    # `python benchmarks/verdict_refit.py --data data/judge_dev/rag_statements/features.jsonl
    # data/judge_dev/rag_statements/features_new.jsonl --out benchmarks/results/verdict_refit.md`
    FaithfulnessCalibration(
        model="qwen2.5-coder-1.5b-instruct",
        prompt_version="faithfulness-v6",
        features_version="features-v2",
        support_model=SupportModel(intercept=-1.8655,
                                   weights={"judge_logit": 0.0308, "lexical": 3.2980, "uncited": 0.0486,
                                            "missing_terms": 0.5929, "vetoed": -2.3692},
                                   cutoff=0.4709),
        agreement=JudgeAgreement(kappa=0.53, kappa_ci=(0.42, 0.64), balanced_accuracy=0.77,
                                 balanced_accuracy_ci=(0.71, 0.82), n=300, data=RAG_STATEMENTS_HELD_OUT,
                                 labels=REFERENCE_LABELS),
        level_data="qwen2.5-coder-1.5b-instruct__faithfulness-v6__features-v2.jsonl",
        # the fingerprints of configs/evaluate.yaml (S0, the embedded default), benchmarks/systems/top1.yaml (S1)
        # and benchmarks/systems/detailed.yaml (S2) over the bundled corpus's index; a change to the default
        # system or its corpus makes it an unseen system (a wider interval, never a narrower one):
        # `python scripts/calibration_systems.py` prints them
        systems={"S0": "21382105b4e62fa46c7402f1c7be68d52c94fb46e5d3327bcce59871dfd280ac",
                 "S1": "475f0308e9fcd73f6885b6140a050bea5a9bb75fcbc9baed3a7b914cefc3725b",
                 "S2": "da144037f3c0567302579755d302eb11ff3e1fbb4cb0ae067064bd5472f6b3cf"},
    ),
    # The window verifiers (`verify: batched / per_statement`) and the support judge read the judge's P(yes)
    # alone. Verdict-first verification on QAGS-XSum claims, n=60, human labels: the cut-off chosen on all 60
    # (thresholds chosen on each half, 0.91 / 0.86, checked on the other; at 0.5 it calls nearly everything
    # supported), `benchmarks/judge_choice.py`. Not measured on RAG answer statements: agreement unknown.
    *(FaithfulnessCalibration(
        model="qwen2.5-coder-1.5b-instruct", prompt_version=version, features_version=None, cutoff=0.90,
        measured="on QAGS-XSum claims (n=60, human labels) ROC AUC 0.77 [0.64, 0.88], balanced accuracy "
                 "0.70 [0.59, 0.80] at P(supported) >= 0.90",
    ) for version in WINDOW_PROMPT_VERSIONS),
    # no cut-off chosen: the interval of its ROC AUC reaches 0.5, so its verdicts fall back to P(yes) >= 0.5
    *(FaithfulnessCalibration(
        model="qwen2.5-0.5b-instruct", prompt_version=version, features_version=None,
        measured="on QAGS-XSum claims (n=60, human labels) ROC AUC 0.62 [0.47, 0.76]: close to chance",
    ) for version in WINDOW_PROMPT_VERSIONS),
)


def faithfulness_calibration(model: str, prompt_version: str,
                              features_version: str | None = FEATURES_VERSION) -> FaithfulnessCalibration | None:
    """The calibration of this judge model (any spelling: `local/<name>` or `<name>`) and prompt, fitted on
    `features_version` (default: the evidence verifier's, `versions.FEATURES_VERSION`; None: a verifier that
    reads no statement features), else None."""
    from ragwatch.llm.models import packaged

    spec = packaged(model)
    name = spec.name if spec is not None else model
    return next((c for c in CALIBRATIONS if c.model == name and c.prompt_version == prompt_version
                 and c.features_version == features_version), None)


@dataclass(frozen=True)
class JudgeCutoff:
    """What decides a judge's verdicts: the P(supported) cut-off, the support model, and where they come from."""

    cutoff: float
    support_model: SupportModel | None
    calibration: FaithfulnessCalibration | None
    source: str  # said in the judge's details (`cutoff_source`)


def judge_cutoff(model: str | None, prompt_version: str, *, features_version: str | None = FEATURES_VERSION,
                 option: float | None = None, use_logprobs: bool = True) -> JudgeCutoff:
    """The one answer to "what cut-off and support model does this judge use": the calibration of the judge
    model, prompt and features version (none without logprobs: there is no P(yes) to calibrate); the explicit
    option `support_threshold` overrides its cut-off; with no calibrated cut-off, `FALLBACK_CUTOFF`."""
    calibration = faithfulness_calibration(model, prompt_version, features_version) if use_logprobs and model else None
    support_model = calibration.support_model if calibration is not None else None
    calibrated = calibration.verdict_cutoff if calibration is not None else None
    if option is not None:
        return JudgeCutoff(option, support_model, calibration, "option support_threshold")
    if calibrated is not None:
        return JudgeCutoff(calibrated, support_model, calibration,
                           f"calibration of {calibration.model} / {prompt_version} / "
                           f"{features_version or 'no statement features'}")
    why = ("its calibration chose no cut-off" if calibration is not None else
           "without logprobs" if not use_logprobs else
           f"no calibration for judge model {model or '(none)'} with prompt {prompt_version}")
    return JudgeCutoff(FALLBACK_CUTOFF, support_model, calibration, f"fallback {FALLBACK_CUTOFF} ({why})")


def measured_as_judge(model: str | None) -> str | None:
    """What any calibration records of this judge model measured elsewhere (other data or prompt), else None."""
    from ragwatch.llm.models import packaged

    if not model:
        return None
    spec = packaged(model)
    name = spec.name if spec is not None else model
    return next((c.measured for c in CALIBRATIONS if c.model == name and c.measured), None)
