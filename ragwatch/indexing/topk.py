"""Exact top-k over score matrices, and rank fusion: what vector, BM25 and hybrid search share.

Many queries are scored as blocks of matrix products (`score_blocks`); `candidates` finds each row's cells near its
top cheaply, and `best_per_row` orders them (ties go to the lower column, so every ranking is
deterministic). `rrf_fuse` is reciprocal rank fusion.

Example:
    >>> top_k(np.array([0.1, 0.9, 0.5, 0.9]), 2).tolist()
    [1, 3]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise

import numpy as np

RRF_K = 60
CANDIDATE_GROUP = 64  # columns per group when looking for each row's best cells


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; ties go to the lower index."""
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    row = np.asarray(scores)[None, :]
    _, cols = candidates(row, k, 0.0)  # boundary ties are all candidates
    ranked = best_per_row(np.zeros(len(cols), dtype=np.int64), cols, row[0, cols], k, 1)[0]
    return np.array([c for c, _ in ranked], dtype=np.int64)


def rrf_fuse(rankings: Sequence[Sequence[int]], k_rrf: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k_rrf + rank), rank 1-based.

    Returns (item, score) best first; ties go to the lower item.
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k_rrf + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def score_blocks(n_queries: int, n_chunks: int, cells: int) -> Iterator[slice]:
    size = max(1, cells // max(n_chunks, 1))
    for start in range(0, n_queries, size):
        yield slice(start, min(start + size, n_queries))


def kth_largest(scores: np.ndarray, k: int) -> np.ndarray:
    """The k-th largest value of each row (k <= row length)."""
    n = scores.shape[1]
    return np.partition(scores, n - k, axis=1)[:, n - k]


def candidates(scores: np.ndarray, depth: int, slack: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of every cell within `slack` of its row's `depth`-th largest value, or above it
    (a superset of each row's top `depth`, boundary ties included; a few more cells are harmless).

    Partitioning every row of a wide block costs more than the matrix product; the maxima of groups
    of `CANDIDATE_GROUP` columns are cheap, and the `depth`-th largest group maximum is a lower bound
    of the row's `depth`-th largest value, so only groups reaching it are looked into.
    """
    n_rows, n = scores.shape
    slack = np.broadcast_to(np.asarray(slack, dtype=np.float64), (n_rows,))
    if n < 4 * depth * CANDIDATE_GROUP:
        return np.nonzero(scores >= (kth_largest(scores, depth) - slack)[:, None])
    maxima = np.maximum.reduceat(scores, np.arange(0, n, CANDIDATE_GROUP), axis=1)
    cut = kth_largest(maxima, depth) - slack
    rows, groups = np.nonzero(maxima >= cut[:, None])
    cols = (groups[:, None] * CANDIDATE_GROUP + np.arange(CANDIDATE_GROUP)).ravel()
    rows = np.repeat(rows, CANDIDATE_GROUP)
    inside = cols < n  # the last group may be short
    rows, cols = rows[inside], cols[inside]
    keep = scores[rows, cols] >= cut[rows]
    return rows[keep], cols[keep]


def best_per_row(
    rows: np.ndarray, cols: np.ndarray, values: np.ndarray, depth: int, n_rows: int
) -> list[list[tuple[int, float]]]:
    """Candidates (row, col, value) -> per row the `depth` best (col, value), ties by lower col."""
    order = np.lexsort((cols, -values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    starts = np.searchsorted(rows, np.arange(n_rows + 1)).tolist()
    cols_list, values_list = cols.tolist(), values.tolist()
    return [
        list(zip(cols_list[lo : min(hi, lo + depth)], values_list[lo : min(hi, lo + depth)], strict=True))
        for lo, hi in pairwise(starts)
    ]
