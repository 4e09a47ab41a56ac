"""The faithfulness judge's calibration contract: per judge model, prompt version and statement-features version,
one `FaithfulnessCalibration` (the support model and its cut-off, the agreement with labels, the data it was
fitted on), and `judge_cutoff`, the one answer to "what cut-off and support model does this judge use".

The fitted ones are package data (`calibration_data/*.calibration.json`, written by
`ragwatch.judges.faithfulness.fit` from the labelled statements beside them); the window verifiers' cut-offs,
chosen on P(yes) alone, are declared below. The explicit option `support_threshold` overrides a calibration's
cut-off; a judge with no calibrated cut-off uses `FALLBACK_CUTOFF` and its details say so (`cutoff_source`);
a judge with no measured agreement is reported as unmeasured by the printout and the gate.

Example:
    >>> faithfulness_calibration("gpt-4o-mini", "faithfulness-v6") is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragwatch.judges.faithfulness.support_model import SupportModel
from ragwatch.judges.faithfulness.versions import FEATURES_VERSION, WINDOW_PROMPT_VERSIONS
from ragwatch.results import JudgeAgreement

# the cut-off of a judge with no calibrated one: P(yes) against even odds
FALLBACK_CUTOFF = 0.5
DATA_DIR = "calibration_data"  # package data of this package: the fitted calibrations and their labelled data
CALIBRATION_SUFFIX = ".calibration.json"
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
    # the labelled statements the support model was fitted on, when they are not `level_data` (the level wants every
    # labelled system, so that its between-system term is measured across corpora and generators; the verdicts kept
    # the fit that measured no worse). None: `level_data` (a calibration stored before the two were apart)
    fit_data: str | None = None
    # what `level_data`'s systems are (their corpora, generators, planted errors), as the level's printout says it
    level_about: str | None = None
    # the systems under test of `level_data` (its `system` codes) -> their fingerprint (`RagSystem.fingerprint()`):
    # a run of one of them carries no between-system term (its interval reaches over a fit with its own shift);
    # any other run carries the between-system bias measured by leaving each labelled system out
    systems: dict[str, str] = {}

    @model_validator(mode="after")
    def _one_cutoff(self) -> FaithfulnessCalibration:
        if self.support_model is not None and self.cutoff is not None:
            raise ValueError("a calibration with a support model uses its cut-off; leave `cutoff` unset")
        return self

    @property
    def support_data(self) -> str | None:
        """The data file the support model was fitted on (`fit_data`, else `level_data`)."""
        return self.fit_data or self.level_data

    @property
    def verdict_cutoff(self) -> float | None:
        """The cut-off of this judge's verdicts: the support model's, else the declared one (None: none chosen)."""
        return self.support_model.cutoff if self.support_model is not None else self.cutoff

    def system_code(self, fingerprint: str | None) -> str | None:
        """The calibration data's code of the system with this fingerprint, else None (an unseen system)."""
        return next((code for code, fp in self.systems.items() if fingerprint and fp == fingerprint), None)


def fitted_calibrations() -> tuple[FaithfulnessCalibration, ...]:
    """The fitted calibrations shipped as package data (`calibration_data/*.calibration.json`, written by
    `ragwatch.judges.faithfulness.fit`; their provenance in `calibration_data/README.md`), in name order."""
    folder = resources.files(__package__) / DATA_DIR
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(CALIBRATION_SUFFIX))
    return tuple(FaithfulnessCalibration.model_validate_json((folder / n).read_text(encoding="utf-8")) for n in names)


CALIBRATIONS: tuple[FaithfulnessCalibration, ...] = (
    *fitted_calibrations(),
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


def calibrated_name(model: str) -> str:
    """The name a calibration keys a judge model by: a packaged model's name without the `local/` of its litellm
    spelling (the packaged-model registry's `local_name`, read here so that no judge fact needs the runtime),
    any other model string as it is."""
    return model.removeprefix("local/")


def faithfulness_calibration(model: str, prompt_version: str,
                              features_version: str | None = FEATURES_VERSION) -> FaithfulnessCalibration | None:
    """The calibration of this judge model (any spelling: `local/<name>` or `<name>`) and prompt, fitted on
    `features_version` (default: the evidence verifier's, `versions.FEATURES_VERSION`; None: a verifier that
    reads no statement features), else None."""
    name = calibrated_name(model)
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
    name = calibrated_name(model) if model else None
    return next((c.measured for c in CALIBRATIONS if name and c.model == name and c.measured), None)
