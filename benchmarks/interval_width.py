"""Intervals that are tight as well as honest: coverage and median width by simulation.

For each kind of score (0/1 rates, 1-5 Likert, continuous bounded scores such as embedding
similarity and probability-weighted judges, and stress cases), draws many seeded samples of n
items, computes each candidate interval for every sample at once (numpy, no per-sample loop), and
prints coverage (how often the interval holds the true mean; the target is 0.95, the floor 0.92)
and the median width, absolute and relative to Student's t (and to BCa where it is computed).

Three parts:
- `mean`: the interval of one run's mean (`ragwatch.statistics.intervals.mean_interval`, vectorised as
  `bounded_intervals`) against t, t with a variance floor, the old augmented mean (z^2/2
  pseudo-scores at each end), an augmented mean with 0.5 pseudo-scores, BCa, and ablations of the
  chosen "bounded-t" (Hall only, Wilson only, other small-sample guards, none).
- `paired`: the gate's paired difference (`paired_diff_interval`) against the percentile
  bootstrap it replaced, t on the differences and BCa; with the metric's scale and with the scale
  inferred from the scores (what `compare.py` passes today: nothing).
- `unpaired`: `unpaired_diff_interval` (MOVER) against the percentile bootstrap and Welch's t.

Truths: exact for the parametric kinds; 400,000 draws for paired kinds; the sample mean for the
empirical judge scores (P(yes) of `benchmarks/results/judge_choice_support.json`, resampled).

The populations and the vectorised chosen intervals are `ragwatch.simulation.intervals` (the unit tests
measure the same); the candidates they were chosen against live here.

Usage:
    python -m benchmarks interval_width                         # all parts, ~10 min on 2 cores
    python -m benchmarks interval_width --part mean --sizes 5,20,100 --draws 1000
    python -m benchmarks interval_width --markdown reports/interval_width.md
Exit code 0 when the chosen intervals keep coverage >= 0.92 on every non-stress kind and size and
stay within 1.3x t's median width on the width-checked kinds at n = 20..100, else 1.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

from ragwatch.simulation.intervals import (
    chosen_paired,
    chosen_unpaired,
    empirical_scores,
    inferred_scale,
    mean_kinds,
    pair_kinds,
    unpaired_kinds,
)
from ragwatch.statistics.intervals import _augmented, _bounded_t, bounded_intervals

JUDGE_SCORES = Path(__file__).resolve().parent / "results" / "judge_choice_support.json"

Z = NormalDist().inv_cdf(0.975)
SIZES = (5, 10, 15, 20, 30, 50, 100, 300, 1000)
WIDTH_SIZES = (20, 30, 50, 100)  # where the chosen interval must stay within 1.3x t's width
FLOOR, MAX_RATIO = 0.92, 1.3
BOOT_MAX_N = 100  # bootstrap candidates only up to here (draws x resamples x n floats)
RESAMPLES = 999
KIND_FILTER = ""  # --kinds
# ---------------------------------------------------------------- candidate intervals of a mean
# Each takes scores rescaled to [0, 1], one sample per row, and returns (low, high) arrays.

def _t_quantile(n: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, max(n - 1, 1)))


def t_interval(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = y.shape[1]
    half = _t_quantile(n) * y.std(axis=1, ddof=1) / np.sqrt(n)
    return y.mean(axis=1) - half, y.mean(axis=1) + half


def t_floor(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """t with the variance floored at 2*m(1-m)/n^2 (m shrunk to 0.5 by one pseudo-score): a
    non-zero width for identical scores that vanishes quickly."""
    n = y.shape[1]
    m = y.mean(axis=1)
    shrunk = (y.sum(axis=1) + 0.5) / (n + 1)
    var = np.maximum(y.var(axis=1, ddof=1), 2 * shrunk * (1 - shrunk) / n**2)
    half = _t_quantile(n) * np.sqrt(var / n)
    return m - half, m + half


def augmented(pseudo: float) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    def interval(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if pseudo == Z * Z / 2:
            return _augmented(y, Z)
        n_aug = y.shape[1] + 2 * pseudo
        centre = (y.sum(axis=1) + pseudo) / n_aug
        var = np.maximum(((y * y).sum(axis=1) + pseudo) / n_aug - centre**2, 0) * n_aug / (n_aug - 1)
        half = Z * np.sqrt(var / n_aug)
        return centre - half, centre + half
    return interval


def bca(y: np.ndarray, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Bias-corrected and accelerated bootstrap of the mean (999 resamples), in row chunks."""
    from scipy import stats

    rows, n = y.shape
    rng = np.random.default_rng(seed)
    mean = y.mean(axis=1)
    jack = (y.sum(axis=1, keepdims=True) - y) / (n - 1)
    dev = jack.mean(axis=1, keepdims=True) - jack
    with np.errstate(divide="ignore", invalid="ignore"):
        accel = np.nan_to_num((dev**3).sum(axis=1) / (6 * (dev**2).sum(axis=1) ** 1.5))
    low, high = np.empty(rows), np.empty(rows)
    chunk = max(1, 20_000_000 // (RESAMPLES * n))
    for start in range(0, rows, chunk):
        part = slice(start, start + chunk)
        boot = np.sort(y[part][:, rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=2), axis=1)
        below = ((boot < mean[part, None]).sum(axis=1) + 0.5 * (boot == mean[part, None]).sum(axis=1)) / RESAMPLES
        z0 = stats.norm.ppf(np.clip(below, 1 / RESAMPLES, 1 - 1 / RESAMPLES))
        a = accel[part]
        for z, out in ((-Z, low), (Z, high)):
            with np.errstate(divide="ignore", invalid="ignore"):
                level = np.nan_to_num(stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))), nan=0.5)
            idx = np.clip(np.round(level * (RESAMPLES - 1)).astype(int), 0, RESAMPLES - 1)
            out[part] = boot[np.arange(boot.shape[0]), idx]
    return low, high


def percentile_boot(d: np.ndarray, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rows, n = d.shape
    rng = np.random.default_rng(seed)
    low, high = np.empty(rows), np.empty(rows)
    chunk = max(1, 20_000_000 // (RESAMPLES * n))
    for start in range(0, rows, chunk):
        part = slice(start, start + chunk)
        boot = d[part][:, rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=2)
        low[part], high[part] = np.quantile(boot, [0.025, 0.975], axis=1)
    return low, high


def ablation(**kw: object) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The chosen routing (0/1 -> Agresti-Coull, identical -> augmented) with a variant of bounded-t."""
    def interval(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low, high, method = bounded_intervals(y)
        rest = method == "bounded-t"
        if rest.any():
            low[rest], high[rest] = _bounded_t(y[rest], 0.95, **kw)  # type: ignore[arg-type]
        mean = y.mean(axis=1)
        return np.minimum(np.clip(low, 0, 1), mean), np.maximum(np.clip(high, 0, 1), mean)
    return interval


MEAN_METHODS: dict[str, Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]] = {
    "t": t_interval,
    "t, variance floor": t_floor,
    "augmented z^2/2 (old)": augmented(Z * Z / 2),
    "augmented 0.5": augmented(0.5),
    "bca": bca,
    "bounded-t: Hall only": ablation(wilson=False),
    "bounded-t: Wilson only": ablation(hall=False),
    "bounded-t: guard exp(-(n/8)^2), no spread": ablation(fade=lambda n: math.exp(-((n / 8) ** 2)), spread=None),
    "bounded-t: guard 0.75^n, no spread": ablation(fade=lambda n: 0.75**n, spread=None),
    "bounded-t: no small-n guard": ablation(fade=lambda n: 0.0),
    "chosen (mean_interval)": lambda y: bounded_intervals(y)[:2],
}


# ---------------------------------------------------------------- paired and unpaired differences

PAIRED_METHODS: dict[str, Callable[[np.ndarray, np.ndarray, tuple[float, float]], tuple[np.ndarray, np.ndarray]]] = {
    "t": lambda o, n, s: _raw_t(n - o),
    "percentile bootstrap (old)": lambda o, n, s: percentile_boot(n - o),
    "bca": lambda o, n, s: bca(n - o),
    "chosen, scale given": lambda o, n, s: chosen_paired(o, n, (np.full(len(o), s[0]), np.full(len(o), s[1]))),
    "chosen, scale inferred": lambda o, n, s: chosen_paired(o, n, inferred_scale(o, n)),
}


def _raw_t(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = d.shape[1]
    half = _t_quantile(n) * d.std(axis=1, ddof=1) / np.sqrt(n)
    return d.mean(axis=1) - half, d.mean(axis=1) + half


def welch(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy import stats

    v1, v2 = a.var(axis=1, ddof=1) / a.shape[1], b.var(axis=1, ddof=1) / b.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (v1 + v2) ** 2 / (v1**2 / (a.shape[1] - 1) + v2**2 / (b.shape[1] - 1))
    half = stats.t.ppf(0.975, np.nan_to_num(np.maximum(df, 1), nan=1)) * np.sqrt(v1 + v2)
    diff = a.mean(axis=1) - b.mean(axis=1)
    return diff - half, diff + half


def percentile_boot_two(a: np.ndarray, b: np.ndarray, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rows, n = a.shape
    rng = np.random.default_rng(seed)
    low, high = np.empty(rows), np.empty(rows)
    chunk = max(1, 10_000_000 // (RESAMPLES * n))
    for start in range(0, rows, chunk):
        part = slice(start, start + chunk)
        diff = (a[part][:, rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=2)
                - b[part][:, rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=2))
        low[part], high[part] = np.quantile(diff, [0.025, 0.975], axis=1)
    return low, high


UNPAIRED_METHODS = {
    "welch t": lambda a, b, s: welch(a, b),
    "percentile bootstrap (old)": lambda a, b, s: percentile_boot_two(a, b),
    "chosen, scale given": lambda a, b, s: chosen_unpaired(a, b, (np.full(len(a), s[0]), np.full(len(a), s[1]))),
    "chosen, scale inferred": lambda a, b, s: chosen_unpaired(a, b, inferred_scale(a, b)),
}


# ---------------------------------------------------------------- running and reporting

@dataclass
class Row:
    part: str
    group: str
    kind: str
    method: str
    n: int
    coverage: float
    width: float  # median, in the metric's units
    ratio_t: float
    ratio_bca: float


def _score(low: np.ndarray, high: np.ndarray, truth: float) -> tuple[float, float]:
    tol = 1e-12
    return float(np.mean((low <= truth + tol) & (truth - tol <= high))), float(np.median(high - low))


def _rows_for(part: str, group: str, kind: str, n: int, truth: float,
              results: dict[str, tuple[np.ndarray, np.ndarray]], reference: str) -> list[Row]:
    scored = {m: _score(lo, hi, truth) for m, (lo, hi) in results.items()}
    wt = scored[reference][1]
    wb = scored["bca"][1] if "bca" in scored else float("nan")
    return [Row(part, group, kind, m, n, c, w, w / wt if wt > 0 else float("nan"),
                w / wb if wb > 0 else float("nan")) for m, (c, w) in scored.items()]


def run_mean(sizes: tuple[int, ...], draws: int, methods: list[str] | None) -> list[Row]:
    rows = []
    for i, kind in enumerate(mean_kinds(empirical_scores(JUDGE_SCORES))):
        if KIND_FILTER not in kind.name:
            continue
        lo, hi = kind.scale
        for n in sizes:
            rng = np.random.default_rng(1000 * i + n)
            y = (kind.sample(rng, (draws, n)) - lo) / (hi - lo)
            results = {}
            for name, method in MEAN_METHODS.items():
                if methods and name != "t" and not any(m in name for m in methods):
                    continue
                if name == "bca" and n > BOOT_MAX_N:
                    continue
                low, high = method(y.copy())
                results[name] = (lo + (hi - lo) * low, lo + (hi - lo) * high)
            rows += _rows_for("mean", kind.group, kind.name, n, kind.truth, results, "t")
    return rows


def run_paired(sizes: tuple[int, ...], draws: int, methods: list[str] | None) -> list[Row]:
    rows = []
    for i, kind in enumerate(pair_kinds()):
        if KIND_FILTER not in kind.name:
            continue
        for n in sizes:
            old, new = kind.sample(np.random.default_rng(2000 * i + n), (draws, n))
            results = {}
            for name, method in PAIRED_METHODS.items():
                if methods and name != "t" and not any(m in name for m in methods):
                    continue
                if name in ("bca", "percentile bootstrap (old)") and n > BOOT_MAX_N:
                    continue
                results[name] = method(old, new, kind.scale)
            rows += _rows_for("paired", kind.group, kind.name, n, kind.truth, results, "t")
    return rows


def run_unpaired(sizes: tuple[int, ...], draws: int, methods: list[str] | None) -> list[Row]:
    rows = []
    for i, (name, first, second) in enumerate(unpaired_kinds()):
        if KIND_FILTER not in name:
            continue
        for n in sizes:
            rng = np.random.default_rng(3000 * i + n)
            a, b = first.sample(rng, (draws, n)), second.sample(rng, (draws, n))
            scale = (min(first.scale[0], second.scale[0]), max(first.scale[1], second.scale[1]))
            results = {}
            for method_name, method in UNPAIRED_METHODS.items():
                if methods and method_name != "welch t" and not any(m in method_name for m in methods):
                    continue
                if method_name.startswith("percentile") and n > BOOT_MAX_N:
                    continue
                results[method_name] = method(a, b, scale)
            group = first.group if first.group == second.group else "mixed"
            rows += _rows_for("unpaired", group, name, n, first.truth - second.truth, results, "welch t")
    return rows


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if x != x else f"{x:.{digits}f}"


def print_tables(rows: list[Row], out: list[str]) -> None:
    for part in dict.fromkeys(r.part for r in rows):
        part_rows = [r for r in rows if r.part == part]
        sizes = sorted({r.n for r in part_rows})
        ref = "welch t" if part == "unpaired" else "t"
        out.append(f"\n## {part}: coverage / median width / width relative to {ref}\n")
        for kind in dict.fromkeys(r.kind for r in part_rows):
            kr = [r for r in part_rows if r.kind == kind]
            out.append(f"### {kr[0].group}: {kind}")
            out.append("| method | " + " | ".join(f"n={n}" for n in sizes) + " |")
            out.append("|---|" + "---|" * len(sizes))
            for method in dict.fromkeys(r.method for r in kr):
                cells = {r.n: r for r in kr if r.method == method}
                out.append(f"| {method} | " + " | ".join(
                    f"{_fmt(cells[n].coverage)} / {_fmt(cells[n].width, 4)} / {_fmt(cells[n].ratio_t, 2)}x"
                    if n in cells else "-" for n in sizes) + " |")
            out.append("")


def verdict(rows: list[Row], out: list[str]) -> bool:
    """The chosen intervals against the floor and, where checked, against t's width."""
    ok = True
    out.append("\n## Verdict (chosen intervals; stress kinds listed, not counted)\n")
    checked = {k.name for k in mean_kinds(empirical_scores(JUDGE_SCORES)) if k.width_checked}
    for part, method in (("mean", "chosen (mean_interval)"), ("paired", "chosen, scale given"),
                         ("paired", "chosen, scale inferred"), ("unpaired", "chosen, scale given"),
                         ("unpaired", "chosen, scale inferred")):
        mine = [r for r in rows if r.part == part and r.method == method]
        if not mine:
            continue
        low = [r for r in mine if r.coverage < FLOOR]
        counted = [r for r in low if r.group != "stress"]
        wide = [r for r in mine if part == "mean" and r.kind in checked and r.n in WIDTH_SIZES
                and r.ratio_t > MAX_RATIO]
        worst = max((r for r in mine if part == "mean" and r.kind in checked and r.n in WIDTH_SIZES),
                    key=lambda r: r.ratio_t, default=None)
        # scale inferred is what compare.py gets today; its misses are reported, not counted
        counts = method != "chosen, scale inferred"
        ok &= not (counts and (counted or wide))
        out.append(f"- {part} / {method}: coverage min {min(r.coverage for r in mine):.3f}; "
                   f"below {FLOOR}: {', '.join(f'{r.kind} n={r.n} {r.coverage:.3f}' for r in low) or 'none'}")
        if worst is not None:
            out.append(f"  widest vs t on width-checked kinds at n=20..100: {worst.kind} n={worst.n} "
                       f"{worst.ratio_t:.2f}x t ({_fmt(worst.ratio_bca, 2)}x BCa); over {MAX_RATIO}x: "
                       f"{', '.join(f'{r.kind} n={r.n} {r.ratio_t:.2f}x' for r in wide) or 'none'}")
    out.append(f"\n{'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["mean", "paired", "unpaired", "all"], default="all")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--draws", type=int, default=2000, help="samples per kind and size")
    parser.add_argument("--methods", default="", help="';'-separated parts of candidate names to run (t always runs)")
    parser.add_argument("--kinds", default="", help="only kinds whose name contains this text")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    methods = [m.strip() for m in args.methods.split(";") if m.strip()] or None
    global KIND_FILTER
    KIND_FILTER = args.kinds
    start = time.monotonic()
    rows: list[Row] = []
    if args.part in ("mean", "all"):
        rows += run_mean(sizes, args.draws, methods)
    if args.part in ("paired", "all"):
        rows += run_paired(sizes, args.draws, methods)
    if args.part in ("unpaired", "all"):
        rows += run_unpaired(sizes, args.draws, methods)
    out = [f"# Interval coverage and width ({args.draws} draws per kind and size, seeded)",
           "Cells: coverage / median width (metric units) / median width relative to t (Welch t for unpaired).",
           f"Bootstrap candidates only at n <= {BOOT_MAX_N} ({RESAMPLES} resamples)."]
    print_tables(rows, out)
    ok = verdict(rows, out)
    out.append(f"\n{time.monotonic() - start:.0f} s")
    text = "\n".join(out)
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
