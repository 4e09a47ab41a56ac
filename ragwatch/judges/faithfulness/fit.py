"""The faithfulness calibration's fit: labelled statements with the judge's features -> a `FaithfulnessCalibration`.

No model is run: every statement's judge P(yes) and model-free features were recorded with its reference
label (`calibration_data/*.jsonl`). The fit:

1. chooses the support model's inputs among `CANDIDATES` (features x class-balanced or plain logistic fit)
   by the best Cohen's kappa cross-fitted by answer (5 folds: each statement's verdict from a model that
   never saw its answer);
2. fits that candidate on all statements; its cut-off by `SHIPPED_RULE` (the best balanced accuracy of the
   verdicts under the rules among the cut-offs that call no more statements unsupported than the readers);
3. measures the agreement an unseen system gets, with 95% bootstrap intervals over answers: with
   `--level-features` holding systems the fit never saw, the fitted model's own verdicts on their statements
   (`unseen_agreement`, `--unseen-systems`); else each system's statements scored by a model chosen and
   fitted on the other systems only, pooled.

`python -m ragwatch.judges.faithfulness.fit --features F.jsonl [F2.jsonl ...] [--labels L.jsonl]` writes the
labelled data and the calibration next to it
(`calibration_data/<model>__<prompt>__<features>.jsonl` and `.calibration.json`). With `--level-features`
(and `--level-labels`) the level is calibrated on those statements instead (one reading of each statement
text: `distinct_statements`), shipped as `<...>__level.jsonl` with only the fields the level reads
(`LEVEL_KEYS`), while the support model is still fitted on `--features`.

Example:
    >>> records = read_labelled([Path("calibration_data/m__p__features-v2.jsonl")])  # doctest: +SKIP
    >>> fit_calibration(records, model="m", prompt_version="p", features_version="features-v2")  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragwatch.judges.faithfulness.calibrations import (
    CALIBRATION_SUFFIX,
    DATA_DIR,
    RAG_STATEMENTS_HELD_OUT,
    REFERENCE_LABELS,
    FaithfulnessCalibration,
)
from ragwatch.judges.faithfulness.level import RECORD_KEYS, verdict_of, vetoed
from ragwatch.judges.faithfulness.support_model import SupportModel, feature_vector
from ragwatch.results import JudgeAgreement
from ragwatch.statements import StatementFeatures
from ragwatch.statistics.cutoff import best_threshold
from ragwatch.statistics.level import fit_logistic

RESAMPLES = 1000
FOLDS = 5
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "judge+lexical": ("judge_logit", "lexical"),
    "judge+lexical+uncited": ("judge_logit", "lexical", "uncited"),
    "judge+lexical+missing": ("judge_logit", "lexical", "missing_terms"),
    "judge+lexical+vetoed": ("judge_logit", "lexical", "vetoed"),
    "judge+lexical+all": ("judge_logit", "lexical", "uncited", "missing_terms", "vetoed"),
    "lexical": ("lexical",),
    "lexical+uncited+missing": ("lexical", "uncited", "missing_terms"),
}
# How a cut-off is chosen on the fitting data (the verdicts under the rules: a vetoed statement is unsupported at
# any cut-off). "balanced_accuracy": best balanced accuracy (ties: the middle of the best run); "kappa": best
# Cohen's kappa; "prevalence": as many called unsupported as the readers find; "balanced_accuracy_capped": best
# balanced accuracy among the cut-offs that call no more statements unsupported than the readers do
CUTOFF_RULES = ("balanced_accuracy", "kappa", "prevalence", "balanced_accuracy_capped")
SHIPPED_RULE = "balanced_accuracy_capped"
WEIGHT_DIGITS, AGREEMENT_DIGITS = 4, 2  # what a calibration stores: its fit is not more exact than this


@dataclass(frozen=True)
class Candidate:
    """One way to fit a support model: its features and whether the classes are weighted equally."""

    features: tuple[str, ...]
    balanced: bool

    @property
    def name(self) -> str:
        label = next((k for k, v in FEATURE_SETS.items() if v == self.features), ",".join(self.features))
        return f"{label}, {'balanced' if self.balanced else 'plain'}"


CANDIDATES = tuple(Candidate(f, b) for f in FEATURE_SETS.values() for b in (True, False))


def read_labelled(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Statements with a reference label, in one shape (answer_id, label: bool, system, the features); rows
    whose readers disagreed (no label) are left out."""
    out = []
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path}: no such feature file (statement_features.py writes them)")
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            r = {**r.get("features", {}), **{k: v for k, v in r.items() if k != "features"}}
            label = r.get("label")
            if isinstance(label, str):
                if label not in ("supported", "unsupported"):
                    continue
                label = label == "supported"
            if label is None:
                continue
            system = str(r.get("system") or "default")
            answer = r.get("answer_id") or f"{system}/{r['item_id']}"
            out.append({**r, "label": bool(label), "answer_id": str(answer), "system": system})
    return out


def answer_folds(records: Sequence[dict[str, Any]], n_folds: int, seed: int) -> list[list[dict[str, Any]]]:
    """The records in `n_folds` folds of whole answers (a seeded shuffle of the answer ids)."""
    answers = sorted({r["answer_id"] for r in records})
    random.Random(seed).shuffle(answers)
    fold_of = {a: i % n_folds for i, a in enumerate(answers)}
    return [[r for r in records if fold_of[r["answer_id"]] == k] for k in range(n_folds)]


def fit_verdict_model(records: Sequence[dict[str, Any]], candidate: Candidate,
                      rule: str = "balanced_accuracy") -> SupportModel:
    """The candidate's logistic fit (L2 as scikit-learn's C=1) and the cut-off its verdicts under the rules
    get by `rule` (one of CUTOFF_RULES), both on `records` only."""
    x = np.array([feature_vector(r, candidate.features) for r in records], dtype=float)
    y = np.array([r["label"] for r in records], dtype=bool)
    if y.all() or not y.any():
        raise ValueError(f"{len(y)} fitting statements of one class only: a support model needs both labels")
    w = np.where(y, len(y) / (2 * y.sum()), len(y) / (2 * (~y).sum())) if candidate.balanced else None
    coef = fit_logistic(x, y, w)[0]
    model = SupportModel(intercept=float(coef[0]),
                         weights=dict(zip(candidate.features, map(float, coef[1:]), strict=True)))
    return model.model_copy(update={"cutoff": cutoff_by(rule, support_scores(model, records), y)})


def support_scores(model: SupportModel, records: Sequence[dict[str, Any]]) -> np.ndarray:
    """P(supported) of each statement, -1 where a rule vetoes it (below every cut-off a search tries)."""
    return np.array([-1.0 if vetoed(r) else model.predict(r) for r in records], dtype=float)


def cutoff_by(rule: str, scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The cut-off on `scores` (supported: score >= cut-off) that `rule` chooses against `labels`."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    if rule == "balanced_accuracy":
        return max(best_threshold(list(s), list(y))[0], 1e-6)
    if rule not in CUTOFF_RULES:
        raise ValueError(f"unknown cut-off rule {rule!r}; one of {CUTOFF_RULES}")
    values = np.unique(s)
    candidates = np.r_[(values[:-1] + values[1:]) / 2, values[-1] + 1e-9]
    candidates = candidates[candidates > 0]  # a vetoed statement (-1) stays unsupported
    if candidates.size == 0:
        raise ValueError("every statement is vetoed: no cut-off to choose")
    pred = s[None, :] >= candidates[:, None]
    counts = np.stack([(pred & y).sum(1), (~pred & y).sum(1), (pred & ~y).sum(1), (~pred & ~y).sum(1)], axis=1)
    called_unsupported, readers_unsupported = (~pred).mean(axis=1), (~y).mean()
    if rule == "prevalence":
        gap = np.abs(called_unsupported - readers_unsupported)
        pick = np.flatnonzero(np.isclose(gap, gap.min()))[0]  # ties: the lowest cut-off (fewer called unsupported)
        return float(candidates[pick])
    measure = kappa_of(counts) if rule == "kappa" else balanced_accuracy_of(counts)
    value = np.where(measure.defined, measure.values, -np.inf)  # an undefined cut-off is never chosen
    if rule == "balanced_accuracy_capped":
        value = np.where(called_unsupported <= readers_unsupported + 1e-12, value, -np.inf)
        if not np.isfinite(value.max()):  # the rules alone veto more than the readers find: call the fewest
            return float(candidates[0])
    best = np.flatnonzero(np.isclose(value, value.max()))
    return float(candidates[best[len(best) // 2]])


def verdicts(model: SupportModel, records: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([verdict_of(r, model, None) for r in records], dtype=bool)


def cross_fitted(records: list[dict[str, Any]], candidate: Candidate, *, folds: int = FOLDS, seed: int = 0,
                 rule: str = "balanced_accuracy") -> np.ndarray:
    """Every statement's verdict from a model fitted (its cut-off by `rule`) on the other folds of answers."""
    out = np.zeros(len(records), dtype=bool)
    index = {id(r): i for i, r in enumerate(records)}
    parts = answer_folds(records, folds, seed)
    for k, test in enumerate(parts):
        model = fit_verdict_model([r for j, p in enumerate(parts) if j != k for r in p], candidate, rule)
        out[[index[id(r)] for r in test]] = verdicts(model, test)
    return out


def kappa_point(records: Sequence[dict[str, Any]], predicted: np.ndarray) -> float:
    """Cohen's kappa of verdicts against the records' labels (-inf where chance agreement is 1: never the
    best)."""
    counts, _ = replicate_counts(np.array([r["label"] for r in records], bool), [predicted],
                                 [r["answer_id"] for r in records], 0, 0)
    kappa = kappa_of(counts[0])
    return float(kappa.values[0]) if kappa.defined[0] else -np.inf


def choose(records: list[dict[str, Any]], rule: str = "balanced_accuracy",
           candidates: Sequence[Candidate] = CANDIDATES) -> Candidate:
    """The candidate (of `candidates`) with the best kappa cross-fitted by answer on `records` (seed 0)."""
    return max(candidates, key=lambda c: kappa_point(records, cross_fitted(records, c, rule=rule)))


@dataclass(frozen=True)
class HeldOut:
    """Every statement's verdict and P(supported) (-1: vetoed) from a model that never saw its system, and
    the candidate used per left-out system."""

    verdicts: np.ndarray
    scores: np.ndarray
    chosen: list[str]
    models: dict[str, SupportModel] = field(default_factory=dict)  # the model that scored each left-out system


def leave_one_system_out(records: list[dict[str, Any]], candidate: Candidate | None,
                         rule: str = "balanced_accuracy", candidates: Sequence[Candidate] = CANDIDATES) -> HeldOut:
    """Every statement scored by a model fitted (its cut-off by `rule`) on the other systems' statements
    only. `None`: the candidate is chosen among `candidates` on the fitting systems too (best cross-fitted
    kappa there), so the choice among candidates is held out as well."""
    out, scores, chosen = np.zeros(len(records), dtype=bool), np.zeros(len(records)), []
    models: dict[str, SupportModel] = {}
    for system in sorted({r["system"] for r in records}):
        test = [i for i, r in enumerate(records) if r["system"] == system]
        train = [r for r in records if r["system"] != system]
        cand = candidate or choose(train, rule, candidates)
        model = models[system] = fit_verdict_model(train, cand, rule)
        out[test] = verdicts(model, [records[i] for i in test])
        scores[test] = support_scores(model, [records[i] for i in test])
        chosen.append(f"{system}: {cand.name}")
    return HeldOut(out, scores, chosen, models)


def replicate_counts(y: np.ndarray, predicted: Sequence[np.ndarray], answers: Sequence[str], resamples: int,
                     seed: int) -> tuple[np.ndarray, int]:
    """Per verdict set (k, 1 + resamples, 4): the (label, verdict) counts (1,1), (1,0), (0,1), (0,0) of
    all statements, then of each replicate that draws answers with replacement (the same draws for all)."""
    if any(len(v) != len(y) for v in predicted) or len(answers) != len(y) or len(y) == 0:
        raise ValueError(f"{len(y)} labels, {[len(v) for v in predicted]} verdicts, {len(answers)} answer ids: "
                         "pass one of each a statement")
    _, group = np.unique(np.asarray(answers), return_inverse=True)
    n_groups = int(group.max()) + 1
    drawn = np.random.default_rng(seed).multinomial(n_groups, np.full(n_groups, 1 / n_groups), size=resamples)
    out = []
    for v in predicted:
        cells = np.stack([np.bincount(group, weights=(y == a) & (v == b), minlength=n_groups)
                          for a, b in ((True, True), (True, False), (False, True), (False, False))], axis=1)
        out.append(np.vstack([cells.sum(axis=0), drawn @ cells]))
    return np.array(out), n_groups


@dataclass(frozen=True)
class Replicated:
    """A measure of each row of 2x2 counts (the statements, then each bootstrap replicate) and where it is
    defined: an undefined row is marked, never NaN (rule 3)."""

    values: np.ndarray
    defined: np.ndarray

    def __sub__(self, other: Replicated) -> Replicated:
        return Replicated(self.values - other.values, self.defined & other.defined)


def kappa_of(c: np.ndarray) -> Replicated:
    """Cohen's kappa of each row of 2x2 counts (tp, fn, fp, tn); undefined where chance agreement is 1."""
    tp, fn, fp, tn = c.T
    n = c.sum(axis=1)
    chance = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / n**2
    defined = chance < 1
    safe = np.where(defined, 1 - chance, 1.0)
    return Replicated(np.where(defined, ((tp + tn) / n - chance) / safe, 0.0), defined)


def balanced_accuracy_of(c: np.ndarray) -> Replicated:
    """Mean recall of the two classes of each row of counts; undefined where the labels hold one class only."""
    tp, fn, fp, tn = c.T
    defined = (tp + fn > 0) & (fp + tn > 0)
    pos, neg = np.maximum(tp + fn, 1), np.maximum(tn + fp, 1)
    return Replicated(np.where(defined, (tp / pos + tn / neg) / 2, 0.0), defined)


def interval(measure: Replicated | np.ndarray) -> tuple[float, float, float]:
    """(point, 2.5%, 97.5%) from the point value (first row) and the defined replicates; an array counts
    its finite values as defined. An undefined point is an error that says why."""
    if not isinstance(measure, Replicated):
        measure = Replicated(np.asarray(measure, dtype=float), np.isfinite(measure))
    if not measure.defined[0]:
        raise ValueError("the measure is undefined on these statements (their labels or verdicts hold one class "
                         "only): label statements of both kinds")
    point, reps = measure.values[0], measure.values[1:][measure.defined[1:]]
    if reps.size == 0:
        return float(point), float(point), float(point)
    low, high = np.quantile(reps, [0.025, 0.975])
    return float(point), float(low), float(high)


def held_out_agreement(records: list[dict[str, Any]], *, rule: str = SHIPPED_RULE, resamples: int = RESAMPLES,
                       seed: int = 0, data: str = RAG_STATEMENTS_HELD_OUT) -> JudgeAgreement:
    """What an unseen system gets: every system's verdicts from a candidate chosen and fitted on the others,
    pooled; 95% bootstrap intervals over answers."""
    return agreement_of(records, leave_one_system_out(records, None, rule).verdicts, resamples=resamples, seed=seed,
                        data=data)


def unseen_agreement(records: list[dict[str, Any]], model: SupportModel, *, resamples: int = RESAMPLES,
                     seed: int = 0, data: str) -> JudgeAgreement:
    """The shipped verdicts themselves on labelled statements of systems the model was never fitted on (what a
    run of another system gets, with no refit standing in for it); 95% bootstrap intervals over answers."""
    return agreement_of(records, verdicts(model, records), resamples=resamples, seed=seed, data=data)


def unseen_description(records: Sequence[dict[str, Any]]) -> str:
    """What `unseen_agreement` was measured on, by system code."""
    found = sorted({str(r["system"]) for r in records})
    return (f"statements of RAG answers of {len(found)} systems the verdict model was never fitted on "
            f"({', '.join(found)})")


def agreement_of(records: Sequence[dict[str, Any]], predicted: np.ndarray, *, resamples: int, seed: int,
                 data: str) -> JudgeAgreement:
    y = np.array([r["label"] for r in records], dtype=bool)
    counts, _ = replicate_counts(y, [predicted], [r["answer_id"] for r in records], resamples, seed)
    k, b = interval(kappa_of(counts[0])), interval(balanced_accuracy_of(counts[0]))
    d = AGREEMENT_DIGITS
    return JudgeAgreement(kappa=round(k[0], d), kappa_ci=(round(k[1], d), round(k[2], d)),
                          balanced_accuracy=round(b[0], d), balanced_accuracy_ci=(round(b[1], d), round(b[2], d)),
                          n=len(records), data=data, labels=REFERENCE_LABELS)


def fit_calibration(records: list[dict[str, Any]], *, model: str, prompt_version: str, features_version: str,
                    level_data: str | None = None, systems: dict[str, str] | None = None,
                    fit_data: str | None = None, level_about: str | None = None, rule: str = SHIPPED_RULE,
                    resamples: int = RESAMPLES, data: str = RAG_STATEMENTS_HELD_OUT,
                    unseen: list[dict[str, Any]] | None = None, unseen_data: str | None = None
                    ) -> FaithfulnessCalibration:
    """The calibration of one judge model, prompt and features version on its labelled statements (2+ systems:
    the agreement is measured on a system the fit never saw). `fit_data`: the data file of `records` when the
    level is calibrated on another (`level_data`). `unseen`: labelled statements of systems not in `records`;
    when given, the agreement is the fitted model's own verdicts on them (`unseen_agreement`), not a refit's."""
    found = sorted({r["system"] for r in records})
    if len(found) < 2:
        raise ValueError(f"statements of {len(found)} system(s) {found}: the held-out agreement leaves one system "
                         "out, so it needs 2+; pass rows whose `system` names each system under test")
    fitted = fit_verdict_model(records, choose(records, rule), rule)
    w = WEIGHT_DIGITS
    support = SupportModel(intercept=round(fitted.intercept, w),
                           weights={k: round(v, w) for k, v in fitted.weights.items()}, cutoff=round(fitted.cutoff, w))
    return FaithfulnessCalibration(
        model=model, prompt_version=prompt_version, features_version=features_version, support_model=support,
        agreement=(unseen_agreement(unseen, support, resamples=resamples,
                                    data=unseen_data or unseen_description(unseen))
                   if unseen else held_out_agreement(records, rule=rule, resamples=resamples, data=data)),
        level_data=level_data,
        fit_data=fit_data, level_about=level_about, systems=dict(systems or {}))


def calibration_json(calibration: FaithfulnessCalibration) -> str:
    """The file a calibration is stored as (`calibration_data/*.calibration.json`): stable key order, one
    format, so that a refit on the same data writes the same bytes."""
    return json.dumps(calibration.model_dump(mode="json"), indent=2) + "\n"


# the shipped record: its identity and label, then every field of the statement-features record (one definition)
KEEP = ("statement_id", "answer_id", "system", "statement_index", "label", *StatementFeatures.model_fields)
LABELS = {"supported": True, "unsupported": False, True: True, False: False}
# the level's record: what `level.calibration_set` reads (the level's features and the shipped verdicts' inputs),
# its answer and system; no statement text, no absent term
LEVEL_KEYS = ("answer_id", "system", *(k for k in RECORD_KEYS if k != "answer_id"), "uncited", "missing_terms")
LEVEL_READABLE = {"judge_logit", "lexical", "no_claim", "uncited", "missing_terms", "absent_terms", "vetoed"}


def statement_key(row: dict[str, Any]) -> str:
    """`statement_id` when given, else `<system>/<item_id>#<statement_index>` (as statement_features.py)."""
    if row.get("statement_id"):
        return str(row["statement_id"])
    prefix = f"{row['system']}/" if row.get("system") else ""
    return f"{prefix}{row['item_id']}#{row['statement_index']}"


def merge(features: list[dict[str, Any]], labels: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Counter]:
    """Feature rows with their labels (a label file's label wins), as the shipped records; what was left out."""
    given = {statement_key(r): r.get("label") for r in labels}
    dropped: Counter = Counter()
    out = []
    for row in features:
        key = statement_key(row)
        label = given.get(key, row.get("label"))
        if label not in LABELS:
            dropped["no reference label (readers disagreed or unlabelled)"] += 1
            continue
        if row.get("error") or row.get("verdict") is None:
            dropped["verification failed"] += 1
            continue
        system = row.get("system") or "default"
        out.append({k: v for k, v in {**row, "statement_id": key, "system": system, "label": LABELS[label],
                                       "answer_id": f"{system}/{row['item_id']}"}.items() if k in KEEP})
    return out, dropped


def distinct_statements(rows: Sequence[dict[str, Any]], first: set[str]) -> tuple[list[dict[str, Any]], int]:
    """The rows with one reading of each statement read against the same contexts, those of the systems in
    `first` kept before any other; and how many copies were left out. A planted set's untouched statements are
    copies of its source's (the same text, the same contexts): kept twice they would count as two independent
    readings, and a copy of a fitted statement as unseen. The contexts are not in a feature row; its lexical
    support reads them, so the same text at the same lexical support is taken as the same reading (the same
    sentence against other contexts, e.g. at another top_k, is another statement)."""
    ordered = sorted(rows, key=lambda r: (r.get("system") or "default") not in first)
    seen: set[tuple[str, float]] = set()
    out = []
    for row in ordered:
        text = " ".join(str(row.get("statement", "")).split())
        reading = (text, round(float(row.get("lexical") or 0.0), 6))
        if text and reading in seen:
            continue
        seen.add(reading)
        out.append(row)
    return out, len(rows) - len(out)


def level_records(records: list[dict[str, Any]], support: SupportModel | None) -> list[dict[str, Any]]:
    """The merged records as the level's data (`LEVEL_KEYS` only); an error when the support model reads a feature
    those keys do not hold (its verdicts on the level's data would be wrong)."""
    unread = set(support.weights if support is not None else ()) - LEVEL_READABLE
    if unread:
        raise ValueError(f"the support model reads {sorted(unread)}, which the level's data does not keep "
                         f"({list(LEVEL_KEYS)}): add them to fit.LEVEL_KEYS")
    return [{k: r[k] for k in LEVEL_KEYS if k in r} for r in records]


def level_name(data: str) -> str:
    """The level's data file of a calibration whose support model's data file is `data`."""
    return data.removesuffix(".jsonl") + "__level.jsonl"


def judge_of(rows: list[dict[str, Any]]) -> tuple[str, str, str]:
    """The one (judge model, prompt version, features version) the rows come from; an error otherwise."""
    judges = Counter((str(r.get("judge_model")), str(r.get("prompt_version")),
                      str(r.get("features_version") or "features-v1")) for r in rows)
    if len(judges) != 1:
        raise ValueError(f"the feature rows come from {len(judges)} judge model / prompt / features versions "
                         f"{dict(judges)}: one calibration is one of each; pass the rows of one "
                         "(benchmarks/statement_features.py --refresh brings older rows to this version's features)")
    ((model, prompt, features_version),) = judges
    return model, prompt, features_version


def data_name(model: str, prompt: str, features_version: str) -> str:
    """The labelled data's file name; features-v1 data kept its old name, so a calibration stored with it loads."""
    return f"{model}__{prompt}.jsonl" if features_version == "features-v1" else \
        f"{model}__{prompt}__{features_version}.jsonl"


def provenance(name: str, records: list[dict[str, Any]], dropped: Counter, command: str, judge: tuple[str, ...],
               written: datetime) -> str:
    """The README section of one data file: when and how it was written, per system what it holds."""
    model, prompt, features_version = judge
    per_system = Counter(r["system"] for r in records)
    supported = Counter(r["system"] for r in records if r["label"])
    answers = {s: len({r["answer_id"] for r in records if r["system"] == s}) for s in per_system}
    return (f"## {name}\n\nWritten {written:%Y-%m-%d %H:%M} UTC by `{command}`.\n"
            f"{len(records)} statements with reference labels (two careful readings, LABELLING.md), judged by "
            f"{model} with prompt {prompt}, statement features {features_version}:\n\n"
            + "".join(f"- {s}: {n} statements of {answers[s]} answers, {supported[s] / n:.0%} supported\n"
                      for s, n in sorted(per_system.items()))
            + "".join(f"- left out: {n} ({why})\n" for why, n in dropped.items()) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def data_folder() -> Path:
    """Where the shipped calibrations and their labelled data live (this package's `calibration_data/`)."""
    return Path(str(resources.files(__package__) / DATA_DIR))


def main(argv: list[str] | None = None, *, data_dir: Path | None = None,
         prog: str = "python -m ragwatch.judges.faithfulness.fit") -> int:
    """Ship labelled statements with their judge features, then fit and write their calibration."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="fit the faithfulness judge's calibration on labelled statements")
    parser.add_argument("--features", type=Path, nargs="+", required=True,
                        help="feature rows (JSONL, benchmarks/statement_features.py output)")
    parser.add_argument("--labels", type=Path, nargs="*", default=[], help="label rows by statement_id (JSONL)")
    parser.add_argument("--level-features", type=Path, nargs="+",
                        help="feature rows the level is calibrated on (default: --features); the support model is "
                             "fitted on --features either way")
    parser.add_argument("--level-labels", type=Path, nargs="*", default=[],
                        help="label rows of --level-features by statement_id (JSONL)")
    parser.add_argument("--level-description", help="what the level's systems are (corpora, generators), as the "
                                                    "level's printout will say it")
    parser.add_argument("--system", action="append", default=[], metavar="CODE=FINGERPRINT",
                        help="a system's fingerprint (scripts/refit_faithfulness_calibration.py computes them from "
                             "the configs); default: the current calibration's")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap replicates of the agreement")
    parser.add_argument("--data-description", default=RAG_STATEMENTS_HELD_OUT,
                        help="what the held-out agreement was measured on, as the judge's figures will say it")
    parser.add_argument("--unseen-systems", metavar="CODES",
                        help="comma-separated system codes of --level-features the printed agreement is measured on "
                             "(default: every system outside --features); leave out sets that are not systems "
                             "under test, such as answers with planted errors")
    parser.add_argument("--unseen-description",
                        help="what the --level-features statements of systems outside --features are, as the judge's "
                             "figures will say it: the agreement printed with every run is then the shipped verdicts' "
                             "on them (default: their system codes)")
    args = parser.parse_args(argv)
    folder = data_dir or data_folder()
    try:
        features = [r for p in args.features for r in read_jsonl(p)]
        labels = [r for p in args.labels for r in read_jsonl(p)]
        judge = judge_of(features)
        systems = dict(s.split("=", 1) for s in args.system)
        if any("=" not in s for s in args.system):
            raise ValueError(f"--system takes CODE=FINGERPRINT, got {args.system}")
        records, dropped = merge(features, labels)
        name = data_name(*judge)
        level = None
        if args.level_features:
            level_rows = [r for p in args.level_features for r in read_jsonl(p)]
            if judge_of(level_rows) != judge:
                raise ValueError(f"--level-features come from {judge_of(level_rows)}, --features from {judge}: the "
                                 "level and the verdicts must read the same judge's features")
            level_rows, copies = distinct_statements(level_rows, {r.get("system") or "default" for r in features})
            merged_level, left_out = merge(level_rows, [r for p in args.level_labels for r in read_jsonl(p)])
            if copies:
                left_out["a copy of a statement already kept (the same text at the same lexical support)"] += copies
            level = (level_name(name), merged_level, left_out)
        previous = folder / name.replace(".jsonl", CALIBRATION_SUFFIX)
        if not systems and previous.is_file():
            systems = FaithfulnessCalibration.model_validate_json(previous.read_text(encoding="utf-8")).systems
        fitted = read_labelled_rows(records)
        fit_systems = {r["system"] for r in fitted}
        measured = set(args.unseen_systems.split(",")) if args.unseen_systems else None
        unseen = [r for r in read_labelled_rows(level[1]) if r["system"] not in fit_systems
                  and (measured is None or r["system"] in measured)] if level else []
        if measured and not measured <= {r["system"] for r in unseen}:
            raise ValueError(f"--unseen-systems {sorted(measured)}: {sorted(measured - {r['system'] for r in unseen})} "
                             "hold no labelled statement of --level-features outside --features")
        calibration = fit_calibration(fitted, model=judge[0], prompt_version=judge[1],
                                      features_version=judge[2], level_data=level[0] if level else name,
                                      fit_data=name if level else None, systems=systems,
                                      level_about=args.level_description,
                                      resamples=args.resamples, data=args.data_description,
                                      unseen=unseen or None, unseen_data=args.unseen_description)
        level_rows = level_records(level[1], calibration.support_model) if level else []
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    if level:
        (folder / level[0]).write_text("".join(json.dumps(r) + "\n" for r in level_rows), encoding="utf-8")
    previous.write_text(calibration_json(calibration), encoding="utf-8")
    command = ("python -m ragwatch.judges.faithfulness.fit --features " + " ".join(p.name for p in args.features)
               + (f" --labels {' '.join(p.name for p in args.labels)}" if args.labels else ""))
    if level:
        command += (" --level-features " + " ".join(p.name for p in args.level_features)
                    + (f" --level-labels {' '.join(p.name for p in args.level_labels)}" if args.level_labels else ""))
        # the rest of what the calibration was written with, so that the line reproduces it
        command += "".join(f" {flag}={shlex.quote(value)}" for flag, value in (
            ("--level-description", args.level_description), ("--unseen-systems", args.unseen_systems),
            ("--unseen-description", args.unseen_description)) if value)
    command += "".join(f" --system={code}={fp}" for code, fp in sorted(calibration.systems.items()))
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    written = datetime.now(UTC)
    for file, rows, left_out in [(name, records, dropped), *([level] if level else [])]:
        head, _, rest = text.partition(f"## {file}\n")
        rest = rest[rest.find("\n## ") + 1:] if "\n## " in rest else ""
        text = head.rstrip() + "\n\n" + provenance(file, rows, left_out, command, judge, written) + rest
    readme.write_text(text, encoding="utf-8")
    support = calibration.support_model
    print(f"wrote {len(records)} statements to {folder / name}; left out {dict(dropped)}\n"
          + (f"wrote {len(level_rows)} statements to {folder / level[0]} (the level's); left out {dict(level[2])}\n"
             if level else "")
          + f"wrote {previous}: {support}; held out: {calibration.agreement.describe()}")  # type: ignore[union-attr]
    return 0


def read_labelled_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`read_labelled` of rows already read (the merged records)."""
    return [{**r, "label": bool(r["label"]), "answer_id": str(r["answer_id"]), "system": str(r["system"])}
            for r in rows]


if __name__ == "__main__":
    raise SystemExit(main())
