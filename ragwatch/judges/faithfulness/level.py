"""Faithfulness at the level careful readers would find, not the share of "supported" verdicts.

A verdict share counts every statement the verifier calls supported as wholly supported and every other
as wholly not; with a verifier of moderate accuracy it lands far from what readers find. The level is the
mean over items of the item's expected supported share, from the run's per-statement features (the judge's
P(yes), lexical support, the rules' veto) and the calibration data shipped with the judge model and prompt
version (`calibration_data/` of this package, named by `ragwatch.judges.faithfulness.calibrations`):
statements of RAG answers with reference labels and the same features. The estimator (`LEVEL_METHOD`) and
the features (`LEVEL_FEATURES`) were chosen by `benchmarks/faithfulness_level.py` (cross-fitted by answer,
at the data's prevalence and resampled to 20% and 80% supported, and fitted on one system, measured on
another) and `benchmarks/level_estimators.py` (systems the calibration never saw, planted errors); the
statistics are `ragwatch.statistics.level`. The 95% interval is for what careful readers would find on
answers like the run's: it resamples the run's items, refits the model on the calibration data resampled by
answer, and draws the readers' labels around the calibrated P(supported); for a system the calibration data
does not hold (`system` not among its systems), it adds the between-system bias measured by leaving each
labelled system out in turn; for a run of one of its systems, the interval reaches over that of a fit with
the system's own intercept shift (`own_system_level`: the data span corpora and generators). The level's
data (`level_data`) is not the support model's (`fit_data`): the level wants every labelled system, so that
its between-system term is measured across systems unlike each other. The verdict share stays in the
details (`verdict_share`), named as what it is.

Example:
    >>> calibration = faithfulness_calibration("local/qwen2.5-coder-1.5b-instruct", PROMPT_VERSION)  # doctest: +SKIP
    >>> result = with_level(result, calibration)  # doctest: +SKIP
    >>> result.score, result.details["verdict_share"]  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ragwatch.judges.faithfulness.calibrations import FaithfulnessCalibration
from ragwatch.judges.faithfulness.features import features_of
from ragwatch.judges.faithfulness.support_model import SupportModel, feature_vector
from ragwatch.results import MetricResult
from ragwatch.statements import statement_verdicts
from ragwatch.statistics.level import (
    CalibrationSet,
    LevelEstimate,
    Method,
    Transfer,
    estimate_level,
    fit_logistic,
    predict_logistic,
    system_transfer,
)

# pcc (the mean of calibrated P(supported)), re-decided on the six labelled systems under test and two corpora by
# a rule fixed before the figures (benchmarks/level_estimators.py, benchmarks/results/level_estimators_800.md):
# a replacement must fall by at least half of the readers' drop under planted fabrications, miss the readers by
# no more than pcc (plus a margin) on systems the calibration never saw and leaving each system out, and its
# intervals must cover there. acc, pacc and em do not; blend passes on the final data by 0.001 of RMSE (it failed
# on two earlier versions of the same data), which is no finding, and the rule's wiring condition (the paired
# difference's coverage in simulation; blend's per-answer values leave [0, 1]) is not met: pcc stays. The
# corrections that follow fabrications (acc, pacc, em) undo
# pcc's shrinkage toward the calibration level, but on a new system they multiply the features' own error as
# readily, and land further from the readers than pcc; blend is as close as pcc but its intervals miss on
# systems unlike S0-S2 (as pcc's did while the level was calibrated on those three: a between-system term
# measured on three systems of one corpus is too small for another corpus; the level's data now holds all six
# systems under test, and an unseen system's interval carries the term measured across them). So the level shrinks
# real changes (it moves with the features, not with the truth) and the gate leans on its paired difference's
# interval, not on the size of the drop. pcc
# also keeps each item's value in [0, 1] and the headline their mean (`calibrated_share`), so a paired
# difference is a difference of headlines with no correction's scale to carry. Rerun: the command in the
# results file.
LEVEL_METHOD: Method = "pcc"
# The judge's P(yes) stays in the level although dropping it changes no level figure (benchmarks/
# faithfulness_level.py --features lexical vetoed, 2026-11-26, faithfulness-v5: held-out log loss 0.527 -> 0.525,
# pcc cross-fitted RMSE 0.081 both, unseen system 0.060 -> 0.062; v6: log loss 0.528 -> 0.525): it is
# the only feature that moves when names or numbers of the
# contexts are put in the wrong place (lexical support and the veto do not), so without it the gate's paired
# difference cannot see that change (tests/unit/test_gate_planted_faithfulness.py). A run whose judge was asked
# only where its reply can change a verdict (the cascade, `--quick`) has no P(yes) for most statements and is
# levelled on `CASCADE_LEVEL_FEATURES`.
LEVEL_FEATURES = ("judge_logit", "lexical", "vetoed")
CASCADE_LEVEL_FEATURES = ("lexical", "vetoed")
RESAMPLES = 1000
TRANSFER_RESAMPLES = 200  # per left-out system: only a variance is read from them
DATA_PACKAGE = "ragwatch.judges.faithfulness"
DATA_DIR = "calibration_data"
RECORD_KEYS = ("answer_id", "label", "p_judge", "lexical", "no_claim", "absent_terms")


def read_records(name: str) -> list[dict[str, Any]]:
    """The labelled statements of a shipped calibration data file (one JSON record a line)."""
    path = resources.files(DATA_PACKAGE) / DATA_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"calibration data {name!r} is not in {DATA_PACKAGE}/{DATA_DIR}: reinstall the "
                                "package, or refit it (scripts/refit_faithfulness_calibration.py)")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for n, r in enumerate(records, start=1):
        missing = [k for k in RECORD_KEYS if k not in r]
        if missing:
            raise ValueError(f"calibration data {name}, line {n}: missing {missing}; "
                             f"each line needs {list(RECORD_KEYS)}")
    return records


def verdict_of(raw: Mapping[str, Any], support_model: SupportModel, threshold: float | None) -> bool:
    """The shipped verifier's verdict from a statement's raw features: the support model at its cut-off,
    under the rules (no claim, a term no context holds)."""
    cut = support_model.cutoff if threshold is None else threshold
    return support_model.predict(raw) >= cut and not vetoed(raw)


def vetoed(raw: Mapping[str, Any]) -> bool:
    return bool(raw.get("no_claim") or raw.get("absent_terms"))


def calibration_set(records: Sequence[Mapping[str, Any]], support_model: SupportModel | None = None,
                    threshold: float | None = None, features: tuple[str, ...] = LEVEL_FEATURES) -> CalibrationSet:
    """Labelled statements as the level's calibration set, grouped by answer; with the support model,
    the shipped verdicts too (what a misclassification-corrected share needs)."""
    answers = {a: k for k, a in enumerate(dict.fromkeys(str(r["answer_id"]) for r in records))}
    return CalibrationSet(
        systems=np.array([system_of(r) for r in records]),
        x=np.array([feature_vector(r, features) for r in records], dtype=float),
        y=np.array([bool(r["label"]) for r in records]),
        groups=np.array([answers[str(r["answer_id"])] for r in records]),
        verdicts=(None if support_model is None else
                  np.array([verdict_of(r, support_model, threshold) for r in records])),
    )


def system_of(record: Mapping[str, Any]) -> str:
    """The system under test that wrote a labelled statement: its `system`, else the `<system>/` prefix
    of its answer id, else "default"."""
    if record.get("system"):
        return str(record["system"])
    answer = str(record.get("answer_id", ""))
    return answer.split("/", 1)[0] if "/" in answer else "default"


def calibration_identity(calibration: FaithfulnessCalibration, features: tuple[str, ...]) -> str:
    """What levelled a score: the judge model, prompt and features version, the estimator and its inputs, and a
    digest of what moves the level (the support model, whose verdicts the level's data records, and that data as
    stored: parsed JSON values, the same on every machine); descriptions and the measured agreement are not in it."""
    assert calibration.support_model is not None and calibration.level_data is not None
    digest = _level_digest(calibration.support_model.model_dump_json(), calibration.level_data)
    return (f"{calibration.model}/{calibration.prompt_version}/{calibration.features_version}/{LEVEL_METHOD}("
            f"{', '.join(features)})/{digest}")


@lru_cache(maxsize=8)
def _level_digest(support_model: str, level_data: str) -> str:
    records = json.dumps(read_records(level_data), sort_keys=True)
    return hashlib.sha256((support_model + records).encode()).hexdigest()[:12]


@lru_cache(maxsize=8)
def _shipped_set(name: str, support_model: str, threshold: float | None,
                 features: tuple[str, ...] = LEVEL_FEATURES) -> CalibrationSet:
    """The shipped data as a calibration set, read once per process (keyed by the support model's JSON)."""
    return calibration_set(read_records(name), SupportModel.model_validate_json(support_model), threshold, features)


def _run_inputs(raws: Sequence[Mapping[str, Any]], calibration: FaithfulnessCalibration, threshold: float | None,
                features: tuple[str, ...], system: str | None) -> tuple[CalibrationSet, np.ndarray, Transfer | None]:
    """The calibration set, the run's feature matrix and the between-system term of a run written by `system`
    (None when `system` is one of the data's systems)."""
    if calibration.level_data is None or calibration.support_model is None:
        raise ValueError(f"the calibration of {calibration.model} / {calibration.prompt_version} ships no "
                         "labelled statements: no level can be estimated")
    key = (calibration.level_data, calibration.support_model.model_dump_json(), threshold, features)
    x = np.array([feature_vector(r, features) for r in raws], dtype=float).reshape(len(raws), len(features))
    cal = _shipped_set(*key)
    return cal, x, None if system is not None and system in cal.system_names() else _shipped_transfer(*key)


def own_system_level(cal: CalibrationSet, system: str, x: np.ndarray, items: np.ndarray, *,
                     verdicts: np.ndarray | None = None, resamples: int = RESAMPLES,
                     seed: int = 0) -> tuple[LevelEstimate, LevelEstimate]:
    """The level of a run of `system`, one of the calibration set's systems: (as reported, the fit with the
    system's own shift). The reported point is the pooled fit's, as every run's is, so that a paired comparison
    of runs of two systems differences one model's values; its interval reaches from the pooled point over the
    interval of a fit that gives `system` its own intercept shift (`CalibrationSet.with_system_column`: partial
    pooling), which covers what readers find on that system's answers where the pooled fit, pulled toward
    systems unlike it, may not."""
    pooled = estimate_level(cal, x, items, method=LEVEL_METHOD, verdicts=verdicts, resamples=resamples, seed=seed)
    own = estimate_level(cal.with_system_column(system), np.hstack([x, np.ones((len(x), 1))]), items,
                         method=LEVEL_METHOD, verdicts=verdicts, resamples=resamples, seed=seed)
    reported = pooled.model_copy(update={"ci_low": min(own.ci_low, pooled.estimate),
                                         "ci_high": max(own.ci_high, pooled.estimate)})
    return reported, own


def _level(raws: Sequence[Mapping[str, Any]], items: Sequence[str], verdicts: Sequence[bool],
           calibration: FaithfulnessCalibration, threshold: float | None, resamples: int, seed: int,
           system: str | None, features: tuple[str, ...]) -> tuple[LevelEstimate, LevelEstimate | None]:
    """`statement_level` and, for a run of one of the data's systems, its own-shift fit."""
    cal, x, transfer = _run_inputs(raws, calibration, threshold, features, system)
    v = np.asarray(verdicts, dtype=bool)
    if transfer is None and system is not None:
        return own_system_level(cal, system, x, np.asarray(items), verdicts=v, resamples=resamples, seed=seed)
    return estimate_level(cal, x, np.asarray(items), method=LEVEL_METHOD, verdicts=v, resamples=resamples, seed=seed,
                          transfer=transfer), None


@lru_cache(maxsize=8)
def _shipped_transfer(name: str, support_model: str, threshold: float | None,
                      features: tuple[str, ...] = LEVEL_FEATURES) -> Transfer:
    """The between-system bias of LEVEL_METHOD on the shipped data, measured once per process."""
    return system_transfer(_shipped_set(name, support_model, threshold, features), method=LEVEL_METHOD,
                           resamples=TRANSFER_RESAMPLES)


def statement_level(raws: Sequence[Mapping[str, Any]], items: Sequence[str], verdicts: Sequence[bool],
                    calibration: FaithfulnessCalibration, *, threshold: float | None = None,
                    resamples: int = RESAMPLES, seed: int = 0, system: str | None = None,
                    features: tuple[str, ...] = LEVEL_FEATURES) -> LevelEstimate:
    """The level of statements given by their raw features (`features_of` a verdict) and their items,
    written by `system` (a system code of the calibration data, `FaithfulnessCalibration.system_code`; None:
    not known to be one of them, and the interval carries the between-system bias; one of them: see
    `own_system_level`), on the level model's `features`."""
    return _level(raws, items, verdicts, calibration, threshold, resamples, seed, system, features)[0]


def with_level(result: MetricResult, calibration: FaithfulnessCalibration | None, *,
               threshold: float | None = None, resamples: int = RESAMPLES, seed: int = 0,
               system: str | None = None, features: tuple[str, ...] = LEVEL_FEATURES) -> MetricResult:
    """`result` with its score and interval the calibrated level; the verdict share and its interval
    kept in the details (`verdict_share`, `verdict_share_ci`), the estimate's record under `level`.
    Item scores stay verdict shares (what a paired comparison and the review page read); each scored
    item's mean calibrated P(supported) is in its details as `calibrated_share`. `features`: the level
    model's inputs (`CASCADE_LEVEL_FEATURES` when the judge was not asked about every statement).

    Unchanged when there is no calibration with labelled statements, or no item was scored.
    """
    if calibration is None or calibration.level_data is None or result.score is None:
        return result
    raws, items, verdicts = [], [], []
    for item in result.items:
        if not item.ok:
            continue
        for v in statement_verdicts(item.details):
            raws.append(features_of(v))
            items.append(item.item_id)
            verdicts.append(bool(v.verdict))
    if not raws:
        return result
    level, own = _level(raws, items, verdicts, calibration, threshold, resamples, seed, system, features)
    cal, x, _ = _run_inputs(raws, calibration, threshold, features, system)
    p = predict_logistic(fit_logistic(cal.x, cal.y)[0], x)[0]  # the pooled fit's, as the headline's point
    per_item: dict[str, list[float]] = {}
    for item_id, value in zip(items, p, strict=True):
        per_item.setdefault(item_id, []).append(float(value))
    scored = [it.model_copy(update={"details": {**it.details, "calibrated_share": float(np.mean(per_item[it.item_id]))}
                                    }) if it.item_id in per_item else it for it in result.items]
    details = {k: v for k, v in result.details.items() if k not in ("weighted", "n_weighted")}
    details.update(verdict_share=result.score, verdict_share_ci=[result.ci_low, result.ci_high],
                   verdict_share_method=result.ci_method, level={**level.model_dump(), "features": list(features)})
    if own is not None:  # the fit that gives the run's system its own shift: what its interval reaches
        details["level"]["own_system"] = {"system": system, "estimate": own.estimate, "ci": [own.ci_low, own.ci_high]}
    return result.model_copy(update={
        "info": result.info.model_copy(update={"calibration": calibration_identity(calibration, features)}),
        "score": level.estimate, "ci_low": level.ci_low, "ci_high": level.ci_high, "details": details, "items": scored,
        "ci_method": level_method_text(level, about=calibration.level_about,
                                       own_system=(system, own.estimate) if own is not None else None),
    })


def level_method_text(level: LevelEstimate, *, about: str | None = None,
                      own_system: tuple[str, float] | None = None) -> str:
    """What the interval is, in one line (the report and printout show it); `about`: what the labelled systems
    are (their corpora and generators); `own_system`: the run's system, one of them, and the level of the fit
    that gives it its own shift (`own_system_level`)."""
    name = {"pcc": "mean calibrated P(supported)", "acc": "verdict share corrected by sensitivity/specificity",
            "pacc": "mean P(supported) corrected by its class means",
            "blend": "mean of calibrated P(supported) and of its class-means correction",
            "em": "calibrated P(supported) adjusted to the run's prevalence"}[level.method]
    systems = (f"systems {', '.join(level.calibration_systems)}" if level.calibration_systems
               else "one unnamed system") + (f": {about}" if about else "")
    own = (f"; the run is of system {own_system[0]}, one of them: the interval reaches from this level (the pooled "
           "fit's, the one every run is compared on) over the interval of a fit that gives that system its own "
           f"intercept shift (level {own_system[1]:.3f})" if own_system and level.transfer is None else "")
    transfer = ("" if level.transfer is None else
                "; not one of the calibration's systems: [0, 1], the transfer to another system is not measured"
                if level.transfer.sd == float("inf") else
                f"; not one of the calibration's systems: plus a between-system bias of sd {level.transfer.sd:.3f} "
                f"(t, {level.transfer.df} df; left out one system at a time, a rough estimate"
                + (": the labelled systems' errors are within their sampling noise, so on a system unlike them "
                   "(another corpus or generator) the interval is too narrow)" if level.transfer.sd == 0 else ")"))
    return (f"level: {name} per item; 95% interval of what careful readers would find on answers like these: "
            f"{level.resamples} bootstrap replicates, each resampling the run's {level.n_items} items, refitting "
            f"the support model on the {level.n_calibration} labelled statements ({level.n_calibration_groups} "
            f"answers of {systems}) resampled by answer, and drawing the readers' labels around "
            f"the calibrated P(supported){own}{transfer}")
