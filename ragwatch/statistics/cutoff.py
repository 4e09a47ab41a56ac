"""The cut-off on a score that best separates two labelled classes (balanced accuracy)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def best_threshold(scores: Sequence[float], labels: Sequence[bool]) -> tuple[float, float]:
    """The cut-off with the highest balanced accuracy on these items, and that balanced accuracy."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    values = np.unique(s)
    candidates = np.r_[values[0] - 1e-9, (values[:-1] + values[1:]) / 2, values[-1] + 1e-9]
    pred = s[None, :] >= candidates[:, None]
    recall_yes = (pred & y).sum(axis=1) / max(y.sum(), 1)
    recall_no = (~pred & ~y).sum(axis=1) / max((~y).sum(), 1)
    bal = (recall_yes + recall_no) / 2
    best = np.flatnonzero(np.isclose(bal, bal.max()))
    pick = best[len(best) // 2]
    return float(np.clip(candidates[pick], 0.0, 1.0)), float(bal[pick])
