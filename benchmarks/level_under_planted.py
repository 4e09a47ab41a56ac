"""Does the faithfulness level move with the truth? Planted errors, the level's drop against the readers'.

Each planted answer (`benchmarks/planted_answers.py`, system P) is a labelled answer of S0-S2 with one
statement made false by one kind of error. For each kind, on the same answers before and after the
plant:
- the readers' drop: the mean over answers of the share of statements careful readers call supported
  (both readings agree; others dropped), before minus after;
- each estimator's drop (`ragwatch.statistics.level`: pcc, acc, pacc, blend, em) on the verifier's
  recorded features, with the shipped calibration (the estimators read the calibration data and the
  run's features only, never the run's labels).
A level "moves with the truth" when its drop is close to the readers'; the ratio drop/readers' drop
is printed per kind and in all (1.0: moves fully; pcc shrinks it by the judge's weakness).

    python benchmarks/level_under_planted.py \
        --planted data/judge_dev/rag_statements/more_statements.jsonl \
        --planted-features data/judge_dev/rag_statements/features_P.jsonl \
            data/judge_dev/rag_statements/features_P2.jsonl \
        --key data/judge_dev/rag_statements/planted_key.jsonl \
        --source-features data/judge_dev/rag_statements/features.jsonl \
            data/judge_dev/rag_statements/features_new.jsonl data/judge_dev/rag_statements/features_S4.jsonl \
            data/judge_dev/rag_statements/features_S5.jsonl \
        --out benchmarks/results/level_under_planted.md

The same drops feed `benchmarks/level_estimators.py` (which estimator the level ships).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import numpy as np

from ragwatch.judges.faithfulness.calibrations import FaithfulnessCalibration, fitted_calibrations
from ragwatch.judges.faithfulness.level import LEVEL_FEATURES, calibration_set, read_records, verdict_of
from ragwatch.judges.faithfulness.support_model import feature_vector
from ragwatch.statistics.level import Method, estimate_level

METHODS: tuple[Method, ...] = get_args(Method)


def read_jsonl(paths: Sequence[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths for line in path.read_text().splitlines() if line.strip()]


def readers_level(labels: Sequence[Any], items: Sequence[str]) -> float:
    """Mean over items of the share of agreed-supported statements (statements without a common label
    dropped; an item left with none dropped)."""
    per_item: dict[str, list[bool]] = defaultdict(list)
    for label, item in zip(labels, items, strict=True):
        if label in ("supported", "unsupported", True, False):
            per_item[item].append(label in ("supported", True))
    return float(np.mean([np.mean(v) for v in per_item.values()]))


def estimator_levels(cal: Any, support_model: Any, rows: Sequence[dict[str, Any]], items: Sequence[str]
                     ) -> dict[str, float]:
    x = np.array([feature_vector(r, LEVEL_FEATURES) for r in rows], dtype=float)
    verdicts = np.array([verdict_of(r, support_model, None) for r in rows])
    out = {m: estimate_level(cal, x, np.asarray(items), method=m, verdicts=verdicts, resamples=2).estimate
           for m in METHODS}
    out["verdict share"] = readers_level(["supported" if v else "unsupported" for v in verdicts], items)
    return out


FABRICATIONS = ("name_absent", "number_absent")  # a name or number no context holds


@dataclass(frozen=True)
class Drop:
    """One kind of planted error: its answers, the readers' level before and after, each estimator's drop."""

    kind: str
    answers: int
    before: float
    after: float
    estimators: dict[str, float]

    @property
    def readers(self) -> float:
        return self.before - self.after

    def ratio(self, name: str) -> float | None:
        """The estimator's drop over the readers' (None when the readers saw no drop)."""
        return self.estimators[name] / self.readers if self.readers else None


def planted_drops(calibration: FaithfulnessCalibration, planted: Path, planted_features: Sequence[Path], key_path: Path,
                  source_features: Sequence[Path]) -> tuple[list[Drop], int]:
    """Per kind of planted error (then the fabrications together, then all kinds) the readers' and each
    estimator's drop on the same answers before and after the plant; and how many planted answers had features."""
    cal = calibration_set(read_records(calibration.level_data), calibration.support_model, None, LEVEL_FEATURES)
    key = {r["statement_id"]: r for r in read_jsonl([key_path])}
    planted_labels = {r["statement_id"]: r.get("label") for r in read_jsonl([planted])}
    by_id = {r["statement_id"]: r for r in read_jsonl(planted_features)}
    sources: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in read_jsonl(source_features):
        sources[(r["system"], r["item_id"])].append(r)

    # planted answer -> (kind, source answer key)
    answers: dict[str, dict[str, Any]] = {}
    for k in key.values():
        a = answers.setdefault(k["item_id"], {"source": (k["source_system"], k["source_item_id"]), "kind": None})
        if k["planted"]:
            a["kind"] = k["kind"]
    groups: dict[str, list[str]] = defaultdict(list)
    for item, a in answers.items():
        if a["kind"] and a["source"] in sources and all(
                sid in by_id for sid, k in key.items() if k["item_id"] == item):
            groups[a["kind"]].append(item)
            if a["kind"] in FABRICATIONS:
                groups["fabrications"].append(item)
            groups["all kinds"].append(item)
    order = sorted(groups, key=lambda g: (g == "all kinds", g == "fabrications", g))
    out = []
    for kind in order:
        items = groups[kind]
        before_rows = [r for item in items for r in sources[answers[item]["source"]]]
        before_items = [f"{r['system']}/{r['item_id']}" for r in before_rows]
        after_rows = [by_id[sid] for item in items for sid, k in key.items() if k["item_id"] == item]
        after_items = [key[r["statement_id"]]["item_id"] for r in after_rows]
        truth_before = readers_level([r.get("label") or planted_labels.get(r["statement_id"]) for r in before_rows],
                                     before_items)
        truth_after = readers_level([planted_labels.get(r["statement_id"]) for r in after_rows], after_items)
        lb = estimator_levels(cal, calibration.support_model, before_rows, before_items)
        la = estimator_levels(cal, calibration.support_model, after_rows, after_items)
        out.append(Drop(kind=kind, answers=len(items), before=truth_before, after=truth_after,
                        estimators={m: lb[m] - la[m] for m in lb}))
    return out, len(groups.get("all kinds", []))


def drop_table(drops: Sequence[Drop]) -> list[str]:
    names = (*METHODS, "verdict share")
    lines = ["| kind | answers | readers: before -> after (drop) | " + " | ".join(
        f"{m}: drop (ratio)" for m in names) + " |", "|---|---|---|" + "---|" * len(names)]
    for d in drops:
        cells = [f"{d.estimators[m]:.3f}" + ("" if d.ratio(m) is None else f" ({d.ratio(m):.2f})") for m in names]
        label = f"fabrications ({' + '.join(FABRICATIONS)})" if d.kind == "fabrications" else d.kind
        lines.append(f"| {label} | {d.answers} | {d.before:.3f} -> {d.after:.3f} ({d.readers:.3f}) | "
                     + " | ".join(cells) + " |")
    return lines


def shipped_level_calibration() -> FaithfulnessCalibration:
    """The shipped calibration that carries labelled statements (what the level is fitted on)."""
    return next(c for c in fitted_calibrations() if c.level_data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--planted", type=Path, required=True,
                        help="the readers' merged labels of the planted statements (and of source statements whose "
                             "features carry no label)")
    parser.add_argument("--planted-features", type=Path, nargs="+", required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--source-features", type=Path, nargs="+", required=True,
                        help="the labelled source answers' features (with their reference labels)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    calibration = shipped_level_calibration()
    drops, n = planted_drops(calibration, args.planted, args.planted_features, args.key, args.source_features)
    lines = [f"Level under planted errors: shipped calibration {calibration.model} / {calibration.prompt_version} / "
             f"{calibration.features_version}; {n} planted answers with features", "", *drop_table(drops)]
    text = "\n".join(lines)
    print(text)
    if args.out:
        command = " ".join(sys.argv[1:] if argv is None else argv)
        args.out.write_text(f"    python benchmarks/level_under_planted.py {command}\n\n{text}\n")


if __name__ == "__main__":
    main()
