"""The labelled anchor: a fixed set of labelled items re-judged with each window's judge.

A judge that changes (a new model or prompt, a provider's silent change) moves every judged metric as
a worse or better system would. The anchor tells them apart: its labels never change, so a change of
the judge's verdicts on it is the judge's. Each window's evaluation re-judges the same seeded sample
of the anchor (`AnchorSettings.size`, half of each label where the labels allow) with the judge that
judged the window, and records the judge's identity (`JudgeIdentity`: model, prompt version, options,
calibration) beside its verdicts (`AnchorRun`). The LLM cache makes an unchanged judge's anchor free.

Anchors shipped (reference labels of this project, `data/judge_dev/`):
- `faithfulness`: RAG answer statements with their question and retrieved contexts, supported or not
  (`rag_statements/statements.jsonl`, `new_statements.jsonl`); each statement is judged as one
  statement (`max_statements: 1`, the unit its label was given for);
- `answer_relevance`: answers with their question, relevant or not (`answer_relevance/labels.jsonl`).
Or the user's own file (`drift.anchor.path`, read as `calibrate --labels` reads one) for the metric
it labels. A verdict value is the item's score on a 0-1 metric (faithfulness: the share of its
statements supported) and its pass (score >= the judge's threshold) on a 1-5 one.

Example:
    >>> runs = judge_anchor(config.judges, config.drift.anchor)  # doctest: +SKIP
    >>> runs["faithfulness"].kappa, runs["faithfulness"].level  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from ragwatch.calibration.loaders import CalibrationItem, load_calibration_set, stratified_sample, to_eval_pairs
from ragwatch.judges import JudgesConfig
from ragwatch.monitoring.settings import AnchorSettings
from ragwatch.results import MetricResult
from ragwatch.statistics.agreement import balanced_accuracy, cohen_kappa

DATA = Path(__file__).resolve().parents[2] / "data" / "judge_dev"
SHIPPED: dict[str, tuple[str, list[Path]]] = {
    "faithfulness": ("statements", [DATA / "rag_statements" / "statements.jsonl",
                                    DATA / "rag_statements" / "new_statements.jsonl"]),
    "answer_relevance": ("answers", [DATA / "answer_relevance" / "labels.jsonl"]),
}
REFERENCE = "reference labels shipped with ragwatch (two careful readings by a strong LLM annotator, not human labels)"


class JudgeIdentity(BaseModel):
    """What judged: the model, the prompt version, a digest of the options and LLM settings that shape a
    verdict, and the calibration the verdicts were read with (None: none)."""

    model: str | None = None
    prompt_version: str | None = None
    settings: str = ""  # sha256[:12] of the options block and the LLM settings but the model
    calibration: str | None = None

    def changes(self, old: JudgeIdentity) -> list[str]:
        """What differs from `old`, e.g. ["prompt faithfulness-v6 -> faithfulness-v7"]; [] when nothing does."""
        return [f"{label} {a or 'none'} -> {b or 'none'}" for label, a, b in (
            ("model", old.model, self.model), ("prompt", old.prompt_version, self.prompt_version),
            ("calibration", old.calibration, self.calibration), ("settings", old.settings, self.settings))
            if a != b]

    def text(self) -> str:
        return f"model {self.model}, prompt {self.prompt_version}, calibration {self.calibration or 'none'}"


class AnchorRun(BaseModel):
    """One judge's verdicts on the anchor: per item its label (1: supported / relevant) and verdict value
    (0..1; None: the judge failed the item, with the count)."""

    metric: str
    source: str
    unit: str  # "statements" or "answers"
    identity: JudgeIdentity
    ids: list[str]
    labels: list[int]
    values: list[float | None]
    calls: int = 0
    cache_hits: int = 0

    @property
    def scored(self) -> tuple[np.ndarray, np.ndarray]:
        """(labels, values) of the items the judge scored."""
        pairs = [(y, v) for y, v in zip(self.labels, self.values, strict=True) if v is not None]
        return (np.array([p[0] for p in pairs], dtype=float), np.array([p[1] for p in pairs], dtype=float))

    @property
    def n(self) -> int:
        return int(self.scored[0].size)

    @property
    def n_failed(self) -> int:
        return sum(v is None for v in self.values)

    @property
    def level(self) -> float | None:
        """The judge's mean verdict on the anchor."""
        _, v = self.scored
        return float(v.mean()) if v.size else None

    @property
    def label_level(self) -> float | None:
        y, _ = self.scored
        return float(y.mean()) if y.size else None

    @property
    def kappa(self) -> float | None:
        y, v = self.scored
        return cohen_kappa(y.astype(int).tolist(), (v >= 0.5).astype(int).tolist()) if y.size else None

    @property
    def balanced_accuracy(self) -> float | None:
        y, v = self.scored
        return balanced_accuracy(y.astype(int).tolist(), (v >= 0.5).astype(int).tolist()) if y.size else None


def verdict_values(result: MetricResult) -> list[float | None]:
    """Per item: its score on a 0-1 metric, its pass (0/1) on any other scale; None for a failed item."""
    info = result.info
    low, high = info.scale or (0.0, 1.0)
    share = (low, high) == (0.0, 1.0)
    cut = info.threshold if info.threshold is not None else (low + high) / 2
    out: list[float | None] = []
    for it in result.items:
        if not it.ok or it.score is None:
            out.append(None)
        elif share:
            out.append(float(it.score))
        else:
            passed = it.passed if it.passed is not None else it.score >= cut
            out.append(float(bool(passed)))
    return out


def corrected_metric(metric: str, result: MetricResult) -> str:
    """The name of the level the anchor corrects: the metric itself on 0-1, `<metric>/pass` otherwise."""
    return metric if (result.info.scale or (0.0, 1.0)) == (0.0, 1.0) else f"{metric}/pass"


def anchored_metrics(judges: JudgesConfig, settings: AnchorSettings) -> list[str]:
    """The enabled judges the anchor labels (the user's file labels one; the shipped set two)."""
    if not settings.enabled:
        return []
    if settings.path:
        return [m for m in [settings.metric or _guess_metric(settings)] if m in judges.enabled]
    return [m for m in judges.enabled if m in SHIPPED]


def _users(settings: AnchorSettings) -> list[CalibrationItem]:
    path = Path(settings.path or "")
    if not path.is_file():
        raise FileNotFoundError(f"drift.anchor.path: no labelled file at {path}; give a JSONL or CSV file of "
                                "question, answer, contexts and label (as calibrate --labels reads), or remove "
                                "the key to use the shipped reference labels")
    return load_calibration_set(path, settings.format)


def _guess_metric(settings: AnchorSettings) -> str:
    items = _users(settings)
    return "faithfulness" if all(it.contexts for it in items) else "answer_relevance"


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"the shipped anchor labels are missing: {path} (a ragwatch checkout ships them "
                                "under data/judge_dev/); set drift.anchor.path to your own labelled file, or "
                                "drift.anchor.enabled: false")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _shipped(metric: str) -> list[CalibrationItem]:
    _, paths = SHIPPED[metric]
    items = []
    for path in paths:
        for row in _rows(path):
            if metric == "faithfulness":
                if row.get("label") not in ("supported", "unsupported"):
                    continue  # the two readings differ: no label
                key = row.get("statement_id") or f"{row['item_id']}#{row['statement_index']}"
                items.append(CalibrationItem(id=str(key), question=row["question"], answer=row["statement"],
                                             contexts=list(row["contexts"]), faithful=row["label"] == "supported"))
            elif isinstance(row.get("relevant"), bool):
                items.append(CalibrationItem(id=str(row["answer_id"]), question=row["question"],
                                             answer=row["answer"], faithful=row["relevant"]))
    return items


def load_anchor(metric: str, settings: AnchorSettings) -> tuple[str, str, list[CalibrationItem]]:
    """(source, unit, the anchor's sample): the same seeded items every time, half of each label where
    the labels allow."""
    if settings.path:
        items = _users(settings)
        source, unit = settings.path, "items"
    else:
        items = _shipped(metric)
        source, unit = f"{metric}: {REFERENCE}", SHIPPED[metric][0]
    if len({it.faithful for it in items}) < 2:
        raise ValueError(f"the anchor {source} needs items of both labels (a judge's agreement and its error "
                         "rates need both)")
    return source, unit, stratified_sample(items, settings.size, seed=settings.seed, balanced=True)


def anchor_config(judges: JudgesConfig, metric: str) -> JudgesConfig:
    """The window's judge config with only `metric` enabled; faithfulness judges each labelled statement
    as one statement (the unit of its label), by the answer's sentences."""
    data = judges.model_dump()
    data["enabled"] = [metric]
    if metric == "faithfulness":
        options = judges.options("faithfulness").model_dump()
        data["faithfulness"] = {**options, "statements": "sentences", "max_statements": 1}
    return JudgesConfig.model_validate(data)


def identity_of(judges: JudgesConfig, result: MetricResult, judge: Any = None) -> JudgeIdentity:
    """The identity of the judge behind `result` (built from `judges`); `judge`, when given, names its calibration."""
    llm = judges.llm.model_dump(include={"api_base", "temperature", "seed", "max_tokens", "extra"})  # model: apart
    name = result.name.split("/")[0]
    options = judges.options(name).model_dump() if name in judges.enabled and not any(
        c.name == name for c in judges.custom) else {}
    blob = json.dumps({"llm": llm, "options": options, "logprobs": judges.logprobs_on()}, sort_keys=True, default=str)
    calibration = getattr(judge, "calibration", None)
    described = None
    if calibration is not None:
        described = " ".join(str(x) for x in (getattr(calibration, "model", None),
                                              getattr(calibration, "prompt_version", None),
                                              getattr(calibration, "features_version", None)) if x)
    return JudgeIdentity(model=result.info.judge_model, prompt_version=result.info.prompt_version,
                         settings=hashlib.sha256(blob.encode()).hexdigest()[:12], calibration=described)


def judge_anchor(judges: JudgesConfig, settings: AnchorSettings) -> dict[str, AnchorRun]:
    """Every anchored judge of `judges` on its anchor sample: metric -> its run."""
    from ragwatch.judges import build_judges, run_judges
    from ragwatch.llm.client import LLMClient

    out: dict[str, AnchorRun] = {}
    for metric in anchored_metrics(judges, settings):
        source, unit, items = load_anchor(metric, settings)
        config = anchor_config(judges, metric)
        llm = LLMClient(config.llm)
        built = build_judges(config, llm)
        samples, answers = to_eval_pairs(items)
        results = run_judges(built, samples, answers)
        result = results[metric]
        usage = llm.usage
        out[metric] = AnchorRun(metric=metric, source=source, unit=unit,
                                identity=identity_of(judges, result, built[0]),
                                ids=[it.id for it in items], labels=[int(it.faithful) for it in items],
                                values=verdict_values(result), calls=usage.calls, cache_hits=usage.cache_hits)
    return out


class WindowJudges(BaseModel):
    """A window's judges: each judged metric's identity, and each anchored judge's run on the anchor."""

    identities: dict[str, JudgeIdentity] = Field(default_factory=dict)
    anchor: dict[str, AnchorRun] = Field(default_factory=dict)
    unavailable: str | None = None  # why the anchor was not judged (e.g. its labels are not on this machine)
