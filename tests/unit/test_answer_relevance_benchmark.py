"""benchmarks/answer_relevance.py: the labels it keeps, its rank and agreement measures, the cut-off held out
by system, and the table it writes (the judge replaced by fixed scores: no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import answer_relevance as ar


def rows(n: int = 60, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        relevant = None if k % 10 == 9 else bool(rng.random() < 0.75)
        grade = int(rng.integers(3, 6)) if relevant else int(rng.integers(1, 3))
        out.append({"answer_id": f"S{k % 3}/{k}", "system": f"S{k % 3}", "item_id": str(k), "question": f"q{k}",
                    "answer": f"a{k}", "relevant": relevant, "grade_reader_1": grade, "grade_reader_2": grade})
    return out


def test_labels_drop_the_readers_disagreements(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows()))
    kept = ar.load_labels(path)
    assert len(kept) == 54 and all(r["relevant"] is not None for r in kept)
    with pytest.raises(SystemExit, match="not found"):
        ar.load_labels(tmp_path / "none.jsonl")


def test_auc_counts_ties_half_and_needs_both_classes() -> None:
    y = np.array([True, True, False, False])
    assert ar.auc(y, np.array([0.9, 0.5, 0.5, 0.1])) == pytest.approx((1 + 1 + 0.5 + 1) / 4)
    assert np.isnan(ar.auc(np.array([True, True]), np.array([0.1, 0.2])))


def test_cutoff_is_chosen_without_the_system_it_scores() -> None:
    systems = np.array(["A"] * 4 + ["B"] * 4)
    y = np.array([True, True, False, False] * 2)
    s = np.array([0.9, 0.8, 0.2, 0.1, 0.6, 0.55, 0.5, 0.45])  # B's scores sit between A's classes
    held, cuts = ar.held_out_cutoffs(systems, y, s)
    # each from the other system only: A's classes split in the middle of (0.2, 0.8); B's at 0.525
    assert cuts == {"A": pytest.approx(0.525), "B": pytest.approx(0.5)}
    assert held.tolist() == [True, True, False, False, True, True, True, False]
    on_scale = ar.held_out_cutoffs(systems, y, 1 + 4 * s, (1.0, 5.0))  # a 1-5 score: the same cut, on its scale
    assert on_scale[1] == {"A": pytest.approx(1 + 4 * 0.525), "B": pytest.approx(3.0)}
    with pytest.raises(ValueError, match="one class only"):
        ar.held_out_cutoffs(systems, np.array([True] * 4 + [True, False] * 2), s)


def test_main_writes_the_table_with_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows()))

    def fake(labelled: list[dict[str, Any]], config: Path, options: dict[str, Any]) -> ar.Scored:
        scores = [1 + 4 * (0.8 if r["relevant"] else 0.3) for r in labelled]
        scores[0] = None  # one failed item is left out, and said
        return ar.Scored(scores=scores, details=[{}] * len(labelled), threshold=3.0, scale=(1.0, 5.0),
                         prompt_version="v", model="m", seconds=1.0, errors=["S0/0: boom"])

    monkeypatch.setattr(ar, "run_judge", fake)
    out = tmp_path / "out.md"
    assert ar.main(["--labels", str(path), "--out", str(out), "--resamples", "50"]) == 0
    text = out.read_text()
    assert text.startswith("    python benchmarks/answer_relevance.py --labels")
    assert "53 scored" in text and "| all | 53 (" in text and "| S0 |" in text
    all_row = next(line for line in text.splitlines() if line.startswith("| all |"))
    assert "1.00 [1.00, 1.00]" in all_row and "4.20 / 2.20" in all_row  # AUC, mean score relevant / not
