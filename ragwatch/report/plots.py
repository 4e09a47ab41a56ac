"""The report's plots: metric intervals, hit rate and recall at k, judge score distributions.

PNG images embedded as base64 (matplotlib's Agg canvas, without pyplot, so no global backend is
switched). What is plotted comes from each metric's `MetricInfo` (family, measure, mode, k), never
from its name.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Iterable, Mapping

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ragwatch.report.style import esc
from ragwatch.results import MetricResult

FAMILY_COLOURS = {"retrieval": "#1565c0", "judge": "#6a1b9a", "e2e": "#ef6c00"}



def interval_plot_section(metrics: Mapping[str, MetricResult]) -> str:
    scored = {n: m for n, m in metrics.items() if m.score is not None}
    if not scored:
        return ""
    groups: dict[str, list[str]] = {}
    for name, m in scored.items():
        lo, hi = _ci_bounds(m)
        if lo >= -1e-9 and hi <= 1 + 1e-9:
            groups.setdefault("0–1 scale", []).append(name)
        elif lo >= 1 - 1e-9 and hi <= 5 + 1e-9:
            groups.setdefault("1–5 scale", []).append(name)
        else:
            groups.setdefault(name, []).append(name)  # own scale, own panel
    # axes placed in inches rather than by tight_layout, which costs as much as drawing the figure
    width, left = 8.0, 0.25 + 0.068 * max(len(n) for n in scored)
    heights = [len(g) * 0.3 + 0.25 for g in groups.values()]
    pad_top, pad_bottom = 0.3, 0.35
    total = sum(heights) + len(heights) * (pad_top + pad_bottom) + 0.1
    fig = Figure(figsize=(width, total))
    top = total - 0.05
    axes = []
    for h in heights:
        top -= pad_top
        axes.append(fig.add_axes((left / width, (top - h) / total, 1 - (left + 0.2) / width, h / total)))
        top -= h + pad_bottom
    for ax, (label, names) in zip(axes, groups.items(), strict=True):
        y = np.arange(len(names))[::-1]
        values = np.array([scored[n].score for n in names], dtype=float)
        bounds = np.array([_ci_bounds(scored[n]) for n in names], dtype=float)
        err = np.abs(np.vstack([values - bounds[:, 0], bounds[:, 1] - values]))
        colours = [FAMILY_COLOURS.get(scored[n].info.family, "#555") for n in names]
        ax.errorbar(values, y, xerr=err, fmt="none", ecolor="#888", capsize=3, lw=1.2)
        ax.scatter(values, y, c=colours, zorder=3, s=22)
        ax.set_yticks(y, labels=names, fontsize=8)
        ax.set_ylim(-0.6, len(names) - 0.4)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(label, fontsize=9, loc="left")
        if label == "0–1 scale":
            ax.set_xlim(-0.02, 1.02)
        elif label == "1–5 scale":
            ax.set_xlim(0.9, 5.1)
    return ("<h2>Metrics with 95% intervals</h2>"
            + png_img(fig, "metric scores with bootstrap 95% intervals")
            + '<p class="hint">dot: score; bar: bootstrap 95% interval of the mean. Colour: '
              + ", ".join(f'<span style="color:{c}">■</span> {f}' for f, c in FAMILY_COLOURS.items())
            + "</p>")


def at_k_section(metrics: Mapping[str, MetricResult]) -> str:
    series: dict[tuple[str, str], list[tuple[int, float, float, float]]] = {}
    for m in metrics.values():
        info = m.info
        if info.family != "retrieval" or info.measure not in ("hit_rate", "recall") or info.k is None \
                or m.score is None:
            continue
        lo, hi = _ci_bounds(m)
        series.setdefault((info.measure, info.mode or ""), []).append((info.k, m.score, lo, hi))
    if not series:
        return ""
    fig = Figure(figsize=(7, 3.6))
    ax = fig.add_axes((0.09, 0.13, 0.89, 0.84))
    modes = sorted({mode for _, mode in series})
    palette = ["#1565c0", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f"]
    for (measure, mode), points in sorted(series.items()):
        points.sort()
        ks, vals, lo, hi = (np.array(col, dtype=float) for col in zip(*points, strict=True))
        colour = palette[modes.index(mode) % len(palette)]
        style = "-" if measure == "hit_rate" else "--"
        label = f"{measure} {mode}".strip()
        ax.plot(ks, vals, style, marker="o", color=colour, label=label, ms=4)
        ax.fill_between(ks, lo, hi, color=colour, alpha=0.12, lw=0)
    all_k = sorted({k for pts in series.values() for k, *_ in pts})
    ax.set_xticks(all_k)
    ax.set_xlabel("k", fontsize=9)
    ax.set_ylabel("score", fontsize=9)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.tick_params(labelsize=8)
    return ("<h2>Hit rate and recall at k</h2>" + png_img(fig, "hit rate and recall at k")
            + '<p class="hint">shaded: bootstrap 95% interval; solid: hit rate, dashed: recall.</p>')


def distribution_section(metrics: Mapping[str, MetricResult]) -> str:
    judged = {n: m for n, m in metrics.items() if m.info.is_judge and m.n_scored}
    if not judged:
        return ""
    cols = min(3, len(judged))
    rows = math.ceil(len(judged) / cols)
    cell_w, cell_h = 3.2, 2.4
    fig = Figure(figsize=(cell_w * cols, cell_h * rows))
    # fixed margins per cell: two title lines above, tick labels below and left
    fig.subplots_adjust(left=0.45 / (cell_w * cols), right=1 - 0.1 / (cell_w * cols),
                        bottom=0.3 / (cell_h * rows), top=1 - 0.45 / (cell_h * rows),
                        wspace=0.35, hspace=0.75 * 2 / cell_h)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (name, m) in zip(axes, judged.items(), strict=False):
        values = np.array([it.score for it in m.items if it.ok and it.score is not None], dtype=float)
        ax.hist(values, bins=_bins(values), color="#5c6bc0", edgecolor="white")
        ax.set_title(f"{name}\n(n={m.n_scored}, {m.n_failed} failed)", fontsize=8)
        ax.tick_params(labelsize=7)
        if m.score is not None:
            ax.axvline(m.score, color="#c62828", lw=1, ls="--")
    for ax in axes[len(judged):]:
        ax.set_visible(False)
    return ("<h2>Score distributions per judge</h2>" + png_img(fig, "histograms of judge scores")
            + '<p class="hint">dashed line: mean.</p>')


def _bins(values: np.ndarray) -> Iterable[float] | int:
    if values.size and np.all(values == np.round(values)):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 10:
            return np.arange(min(lo, 1 if lo >= 1 else 0) - 0.5, max(hi, 1) + 1.5)
    if values.size and values.min() >= 0 and values.max() <= 1:
        return np.linspace(0, 1, 11)
    return 10


def png_img(fig: Figure, alt: str) -> str:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _ci_bounds(m: MetricResult) -> tuple[float, float]:
    score = float(m.score) if m.score is not None else 0.0
    lo = m.ci_low if m.ci_low is not None else score
    hi = m.ci_high if m.ci_high is not None else score
    return float(lo), float(hi)
