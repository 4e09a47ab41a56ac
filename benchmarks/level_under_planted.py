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
        --planted data/judge_dev/rag_statements/P_statements.jsonl \
        --planted-features data/judge_dev/rag_statements/features_P.jsonl \
        --key data/judge_dev/rag_statements/P_key.jsonl \
        --source-features data/judge_dev/rag_statements/features.jsonl \
            data/judge_dev/rag_statements/features_new.jsonl \
        --out benchmarks/results/level_under_planted.md
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

import numpy as np

from ragwatch.judges.faithfulness.calibrations import fitted_calibrations
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

    calibration = next(c for c in fitted_calibrations() if c.level_data)
    cal = calibration_set(read_records(calibration.level_data), calibration.support_model, None, LEVEL_FEATURES)
    key = {r["statement_id"]: r for r in read_jsonl([args.key])}
    planted_labels = {r["statement_id"]: r.get("label") for r in read_jsonl([args.planted])}
    planted_features = {r["statement_id"]: r for r in read_jsonl(args.planted_features)}
    sources: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in read_jsonl(args.source_features):
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
                sid in planted_features for sid, k in key.items() if k["item_id"] == item):
            groups[a["kind"]].append(item)
            groups["all kinds"].append(item)

    lines = [f"Level under planted errors: shipped calibration {calibration.model} / {calibration.prompt_version} / "
             f"{calibration.features_version}; {len(groups.get('all kinds', []))} planted answers with features", "",
             "| kind | answers | readers: before -> after (drop) | " + " | ".join(
                 f"{m}: drop (ratio)" for m in (*METHODS, "verdict share")) + " |",
             "|---|---|---|" + "---|" * (len(METHODS) + 1)]
    for kind, items in sorted(groups.items(), key=lambda kv: (kv[0] == "all kinds", kv[0])):
        before_rows = [r for item in items for r in sources[answers[item]["source"]]]
        before_items = [f"{r['system']}/{r['item_id']}" for r in before_rows]
        after_rows = [planted_features[sid] for item in items for sid, k in key.items() if k["item_id"] == item]
        after_items = [key[r["statement_id"]]["item_id"] for r in after_rows]
        truth_before = readers_level([r.get("label") or planted_labels.get(r["statement_id"]) for r in before_rows],
                                     before_items)
        truth_after = readers_level([planted_labels.get(r["statement_id"]) for r in after_rows], after_items)
        drop = truth_before - truth_after
        lb = estimator_levels(cal, calibration.support_model, before_rows, before_items)
        la = estimator_levels(cal, calibration.support_model, after_rows, after_items)
        cells = [f"{lb[m] - la[m]:.3f} ({(lb[m] - la[m]) / drop:.2f})" if drop else f"{lb[m] - la[m]:.3f}"
                 for m in (*METHODS, "verdict share")]
        lines.append(f"| {kind} | {len(items)} | {truth_before:.3f} -> {truth_after:.3f} ({drop:.3f}) | "
                     + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text("    python benchmarks/level_under_planted.py " + " ".join(argv or []) + "\n\n"
                            + text + "\n")


if __name__ == "__main__":
    main()
