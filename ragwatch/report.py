"""Evaluation reports: one self-contained HTML page with plots, and a short Markdown summary.

The HTML page has no external assets and no JavaScript: CSS is inline and plots are PNG images
embedded as base64 (matplotlib's Agg canvas, without pyplot, so no global backend is switched).
Every piece of text is HTML-escaped: answers, documents and even judge reasons are untrusted.

Example:
    >>> page = build_html_report("nightly eval", metrics, items_frame,
    ...                          comparisons={"previous run": cmp_prev, "production": cmp_prod},
    ...                          agreement=None, run_info={"config_fingerprint": "ab12...", "models": {...}})
    >>> Path("report.html").write_text(page)
    >>> print(build_markdown_summary("nightly eval", metrics, gate=decision))
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ragwatch.compare import Comparison, is_higher_better
from ragwatch.fmt import fmt_num, fmt_signed, md_cell
from ragwatch.gate import GateDecision, GateThresholds
from ragwatch.results import MetricResult
from ragwatch.summary import (
    VERDICT_COLOURS,
    HeadlineRow,
    ReportSettings,
    comparison_html,
    delta_interval,
    gate_label,
    headline_rows,
    judge_warnings,
    labelled_text,
    summary_markdown,
    verdict_line,
)

BASE_COLUMNS = ("item_id", "question", "answer", "contexts", "reference_answer")
_MAX_TEXT = 3000  # characters of an answer or a context shown before cutting
_DEFAULT_SETTINGS = ReportSettings()


def build_html_report(
    title: str,
    metrics: Mapping[str, MetricResult],
    items: pd.DataFrame | None,
    *,
    comparisons: Mapping[str, Comparison] | None = None,
    agreement: pd.DataFrame | None = None,
    run_info: Mapping[str, Any] | None = None,
    gate: GateDecision | None = None,
    thresholds: GateThresholds | None = None,
    n_worst: int = 10,
    worst_by: str | None = None,
    settings: ReportSettings | None = None,
) -> str:
    """One self-contained HTML page for an evaluation run, the answer to "better or worse?" first.

    The top: one verdict line (vs each comparison, and the gate), the headline metrics of
    `settings.headline` with value, interval, n and the delta and verdict vs each comparison, and
    warnings about judges. Below: every metric, plots, comparisons, keyword tests, unsupported
    statements, worst and failed items (per-item sections capped at `settings.max_items`).

    `items`: one row per evaluated item (columns item_id, question, answer, contexts,
    reference_answer, one column per metric and `<metric>__reason` / `<metric>__error`); any of
    them but item_id may be missing. `worst_by` ranks the worst items by one metric; by default by
    the mean percentile rank over all metric columns (direction-aware, so lower perplexity is better).
    """
    _check_inputs(metrics, items, worst_by)
    # positional row access below relies on a unique index
    items = items.reset_index(drop=True) if items is not None else pd.DataFrame({"item_id": []})
    thresholds = thresholds or GateThresholds()
    settings = settings or _DEFAULT_SETTINGS
    sections = [
        _verdict_section(metrics, comparisons or {}, gate, settings),
        _summary_section(metrics, items, gate),
        _all_metrics_section(metrics, thresholds),
        _interval_plot_section(metrics),
        _at_k_section(metrics),
        _distribution_section(metrics),
        _agreement_section(agreement),
        _comparison_section(comparisons),
        _keyword_tests_section(metrics, settings.max_items),
        _unsupported_section(metrics, items, settings.max_items),
        _worst_section(metrics, items, thresholds, n_worst, worst_by),
        _failed_section(metrics, items, settings.max_items),
        _run_info_section(run_info),
    ]
    body = "\n".join(s for s in sections if s)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n"
        f"<body><h1>{_e(title)}</h1>\n{body}\n</body></html>\n"
    )


def build_markdown_summary(
    title: str,
    metrics: Mapping[str, MetricResult],
    *,
    comparisons: Mapping[str, Comparison] | None = None,
    gate: GateDecision | None = None,
    run_info: Mapping[str, Any] | None = None,
    max_reasons: int = 3,
    settings: ReportSettings | None = None,
    timings: Mapping[str, float] | None = None,
) -> str:
    """A short Markdown summary: the verdict line and headline metrics first (as at the top of the
    HTML report), then the gate's reasons, every metric, failures, changes and per-step timings."""
    settings = settings or _DEFAULT_SETTINGS
    lines = [f"# {_md(title)}", "", summary_markdown(metrics, comparisons or {}, gate, settings.headline), ""]
    if gate is not None:
        lines += [f"**Gate: {gate_label(gate)}**", ""] + [f"- {_md(r)}" for r in gate.reasons] + [""]
    if run_info:
        keys = [k for k in ("config_fingerprint", "eval_set_version", "model_version") if k in run_info]
        lines += [f"- {_md(k)}: `{_md(str(run_info[k]))}`" for k in keys] + ([""] if keys else [])
    if timings:
        lines += ["Step timings: " + ", ".join(f"{_md(k)} {v:.1f} s" for k, v in timings.items()), ""]
    lines += ["## All metrics", "", "| metric | score | weighted | 95% CI | scored | failed |",
              "|---|---|---|---|---|---|"]
    for name, m in metrics.items():
        lines.append(f"| {_md(name)} | {fmt_num(m.score)} | {fmt_num(_weighted(m))} | {_ci(m)} | {m.n_scored} | "
                     f"{m.n_failed} |")
    failing = {n: m for n, m in metrics.items() if m.n_failed}
    lines.append("")
    if failing:
        lines += ["## Failures", ""]
        for name, m in failing.items():
            reasons = Counter(_short(it.error or "", 120) for it in m.items if not it.ok)
            top = "; ".join(f"{_md(r)} (x{c})" for r, c in reasons.most_common(max_reasons))
            lines.append(f"- **{_md(name)}**: {m.n_failed} of {m.n_failed + m.n_scored} failed: {top}")
        lines.append("")
    else:
        lines += ["No failed items.", ""]
    for label, cmp in (comparisons or {}).items():
        lines.append(f"## vs {_md(label)}")
        lines.append("")
        if not cmp.has_baseline:
            lines += [f"No {_md(cmp.old_label)} baseline.", ""]
            continue
        counts = ", ".join(f"{v} {k}" for k, v in sorted(cmp.counts().items()))
        lines.append(counts or "no common metrics")
        for r in cmp.rows:
            if r.verdict in ("regressed", "improved", "not_comparable"):
                interval = f"[{fmt_signed(r.diff_low)}, {fmt_signed(r.diff_high)}]"
                lines.append(f"- **{r.verdict}** {_md(r.metric)}: {fmt_num(r.old_score)} -> {fmt_num(r.new_score)} "
                             f"(diff {fmt_signed(r.diff)}, 95% CI {interval})")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def build_comparison_page(comparisons: Mapping[str, Comparison], *, title: str = "ragwatch comparison",
                          gate: GateDecision | None = None) -> str:
    """`comparison.html`: styled like the run report, the one-line overall verdict first, then one
    table per comparison (metrics that need attention first)."""
    cls, line = verdict_line(comparisons, gate)
    tables = "".join(f"<h2>vs {_e(label)}</h2>" + comparison_html(cmp, heading=False)
                     for label, cmp in comparisons.items())
    legend = " ".join(f'<span class="verdict" style="background:{c}">{_e(v)}</span>'
                      for v, c in VERDICT_COLOURS.items())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n"
        f'<body><h1>{_e(title)}</h1><div id="verdict" class="verdict-line {cls}">{_e(line)}</div>{tables}'
        f'<p class="hint">diff = new − old with a 95% interval (paired by item where items pair). {legend}</p>'
        "</body></html>\n"
    )


# ---------------------------------------------------------------- sections


def _summary_section(metrics: Mapping[str, MetricResult], items: pd.DataFrame,
                     gate: GateDecision | None) -> str:
    failed = sum(m.n_failed for m in metrics.values())
    scored = sum(m.n_scored for m in metrics.values())
    parts = [f"<b>{len(items)}</b> items", f"<b>{len(metrics)}</b> metrics",
             f"<b>{scored}</b> item scores", f'<b class="{"warn" if failed else ""}">{failed}</b> failed']
    out = f'<p class="summary">{" · ".join(parts)}</p>'
    if gate is not None:
        cls, verdict = ("ok" if gate.promote else "bad"), gate_label(gate)
        reasons = "".join(f"<li>{_e(r)}</li>" for r in gate.reasons)
        out += f'<div class="gate {cls}"><b>Gate: {verdict}</b><ul>{reasons}</ul></div>'
    return out


def _verdict_section(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                     gate: GateDecision | None, settings: ReportSettings) -> str:
    """The first screen: one verdict line, the headline table, warnings about judges."""
    cls, line = verdict_line(comparisons, gate)
    out = f'<div id="verdict" class="verdict-line {cls}">{_e(line)}</div>'
    out += _headline_table(headline_rows(metrics, comparisons, settings.headline), list(comparisons))
    warnings = list(dict.fromkeys((gate.flags if gate is not None else []) + judge_warnings(metrics)))
    if warnings:
        out += ('<div class="warnbox"><b>Judges to distrust</b><ul>'
                + "".join(f"<li>{_e(w)}</li>" for w in warnings) + "</ul></div>")
    return out


def _headline_table(rows: list[HeadlineRow], labels: list[str]) -> str:
    head = ("<tr><th>headline metric</th><th>value</th><th>95% CI</th><th>n</th>"
            + "".join(f"<th>Δ vs {_e(label)}</th><th>verdict</th>" for label in labels) + "</tr>")
    body = []
    for r in rows:
        m = r.result
        if m is None:
            cells = '<td colspan="3" class="hint">not measured in this run</td>'
        else:
            weighted = f' <span class="hint">(weighted {fmt_num(r.weighted)})</span>' if r.weighted is not None else ""
            if (labelled := labelled_text(m)) is not None:
                weighted += f' <span class="hint">{_e(labelled)}</span>'
            failed = f' <span class="warn">{m.n_failed} failed</span>' if m.n_failed else ""
            cells = (f'<td class="num">{fmt_num(m.score)}{weighted}</td><td class="num">{_ci(m)}</td>'
                     f'<td class="num">{m.n_scored}{failed}</td>')
        for label in labels:
            d = r.deltas[label]
            colour = VERDICT_COLOURS.get(d.verdict, "#9e9e9e")
            badge = ("" if d.verdict == "-"
                     else f'<span class="verdict" style="background:{colour}">{_e(d.verdict)}</span>')
            cells += f'<td class="num">{_e(delta_interval(d)) or "-"}</td><td>{badge}</td>'
        body.append(f"<tr><td><b>{_e(r.metric)}</b></td>{cells}</tr>")
    return f'<table id="headline" class="headline"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _all_metrics_section(metrics: Mapping[str, MetricResult], thresholds: GateThresholds) -> str:
    rows = []
    for name, m in metrics.items():
        direction = "↑" if is_higher_better(name, m, thresholds) else "↓"
        failed = f'<td class="num{" warn" if m.n_failed else ""}">{m.n_failed}</td>'
        rows.append(
            f"<tr><td>{_e(name)}</td><td>{_e(m.info.family)}</td>"
            f'<td class="num">{fmt_num(m.score)}</td><td class="num">{fmt_num(_weighted(m))}</td>'
            f'<td class="num">{_ci(m)}</td>'
            f'<td class="num">{m.n_scored}</td>{failed}<td title="better">{direction}</td></tr>'
        )
    head = "<tr><th>metric</th><th>kind</th><th>score</th><th>prob-weighted</th><th>95% CI</th>" \
           "<th>n scored</th><th>n failed</th><th>better</th></tr>"
    return (f"<h2>All metrics</h2><table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
            '<p class="hint">score: greedy judge verdicts; prob-weighted: the judge\'s probabilities of its '
            "answers (where the model returns them).</p>"
            if rows else "<h2>All metrics</h2><p>No metrics.</p>")


def _keyword_tests_section(metrics: Mapping[str, MetricResult], max_items: int) -> str:
    """Each keyword test: its case, the answer and the failing word; failures first."""
    m = metrics.get("e2e_failure_rate")
    if m is None or not m.items:
        return ""
    ordered = sorted(m.items, key=lambda it: (it.ok and it.score == 0.0, it.item_id))
    rows = []
    for it in ordered[:max_items]:
        d = it.details
        if not it.ok:
            status, words, answer = '<span class="warn">error</span>', "", it.error or ""
        else:
            status = '<span class="warn">failed</span>' if it.score else "passed"
            words, answer = ", ".join(d.get("failing_keywords", [])), str(d.get("answer", ""))
        rows.append(f"<tr><td>{_e(it.item_id)}</td><td>{_e(d.get('question', ''))}</td><td>{status}</td>"
                    f"<td><b>{_e(words)}</b></td><td>{_e(_short(answer, 400))}</td></tr>")
    more = f"<p>… and {len(ordered) - max_items} more in the artifact.</p>" if len(ordered) > max_items else ""
    return ("<h2>Keyword tests</h2><table><thead><tr><th>case</th><th>question</th><th>result</th>"
            "<th>failing word</th><th>answer</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>" + more)


def _unsupported_section(metrics: Mapping[str, MetricResult], items: pd.DataFrame, max_items: int) -> str:
    """The statements faithfulness found unsupported by the contexts, per answer."""
    m = metrics.get("faithfulness")
    if m is None:
        return ""
    questions = _questions(items)
    rows = []
    cutoff = m.details.get("support_threshold")
    for it in m.items:
        statements, scores = it.details.get("statements") or [], it.details.get("statement_scores") or []
        reasons = it.details.get("reasons") or [""] * len(statements)
        probs = it.details.get("statement_yes_probabilities") or [None] * len(statements)
        # with a cut-off the verdict is P(supported) < cut-off, while the reason is the judge's own text
        bad = [(s, (f"P(supported) {p:.2f} < {cutoff:.2f}. Judge's reason: " if p is not None and cutoff else "") + r)
               for s, ok, r, p in zip(statements, scores, reasons, probs, strict=False) if not ok]
        if it.ok and bad:
            rows.append((it.item_id, bad))
    if not rows:
        return "<h2>Unsupported statements</h2><p>Faithfulness found no unsupported statement.</p>"
    html_rows = "".join(
        f"<tr><td>{_e(i)}</td><td>{_e(_short(questions.get(i, ''), 200))}</td><td><ul>"
        + "".join(f"<li>{_e(s)} <span class=\"hint\">{_e(_short(str(r), 260))}</span></li>" for s, r in bad)
        + "</ul></td></tr>" for i, bad in rows[:max_items])
    more = f"<p>… and {len(rows) - max_items} more in the artifact.</p>" if len(rows) > max_items else ""
    return (f"<h2>Unsupported statements ({len(rows)} answers)</h2><table><thead><tr><th>item</th><th>question</th>"
            f"<th>statements the contexts do not support</th></tr></thead><tbody>{html_rows}</tbody></table>{more}")


def _interval_plot_section(metrics: Mapping[str, MetricResult]) -> str:
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
        colours = [_FAMILY_COLOURS.get(scored[n].info.family, "#555") for n in names]
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
            + _img(fig, "metric scores with bootstrap 95% intervals")
            + '<p class="hint">dot: score; bar: bootstrap 95% interval of the mean. Colour: '
              + ", ".join(f'<span style="color:{c}">■</span> {f}' for f, c in _FAMILY_COLOURS.items())
            + "</p>")


def _at_k_section(metrics: Mapping[str, MetricResult]) -> str:
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
    return ("<h2>Hit rate and recall at k</h2>" + _img(fig, "hit rate and recall at k")
            + '<p class="hint">shaded: bootstrap 95% interval; solid: hit rate, dashed: recall.</p>')


def _distribution_section(metrics: Mapping[str, MetricResult]) -> str:
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
    return ("<h2>Score distributions per judge</h2>" + _img(fig, "histograms of judge scores")
            + '<p class="hint">dashed line: mean.</p>')


def _agreement_section(agreement: pd.DataFrame | None) -> str:
    if agreement is None or agreement.empty:
        return ""
    return "<h2>Judge agreement</h2>" + _frame_html(agreement)


def _comparison_section(comparisons: Mapping[str, Comparison] | None) -> str:
    if not comparisons:
        return ""
    parts = []
    for label, cmp in comparisons.items():
        parts.append(f"<h3>vs {_e(label)}</h3>" + comparison_html(cmp, heading=False))
    legend = " ".join(f'<span class="verdict" style="background:{c}">{_e(v)}</span>'
                      for v, c in VERDICT_COLOURS.items())
    return ("<h2>Comparisons</h2>" + "".join(parts)
            + f'<p class="hint">diff = new − old with a paired bootstrap 95% interval. {legend}</p>')


def _worst_section(metrics: Mapping[str, MetricResult], items: pd.DataFrame, thresholds: GateThresholds,
                   n_worst: int, worst_by: str | None) -> str:
    columns = _metric_columns(metrics, items)
    if items.empty or not columns or n_worst <= 0:
        return ""
    ranks = {}
    for col in ([worst_by] if worst_by else columns):
        values = pd.to_numeric(items[col], errors="coerce")
        higher = is_higher_better(col, metrics.get(col), thresholds)
        ranks[col] = values.rank(pct=True, ascending=higher)
    badness = pd.DataFrame(ranks).mean(axis=1, skipna=True)
    order = badness.dropna().sort_values(kind="stable").index[:n_worst]
    if len(order) == 0:
        return ""
    cards = [_item_card(items.loc[i], columns, metrics, thresholds) for i in order]
    how = f"lowest {_e(worst_by)}" if worst_by else "lowest mean percentile rank over all metrics"
    return f"<h2>Worst items</h2><p class=\"hint\">ranked by {how}.</p>" + "".join(cards)


def _failed_section(metrics: Mapping[str, MetricResult], items: pd.DataFrame, max_items: int) -> str:
    questions = _questions(items)
    rows = [(name, it.item_id, it.error or "") for name, m in metrics.items() for it in m.items if not it.ok]
    if not metrics:
        return ""
    if not rows:
        return "<h2>Failed items</h2><p>None: every item was scored by every metric.</p>"
    by_reason = Counter((name, _short(err, 200)) for name, _, err in rows)
    summary = "".join(f"<tr><td>{_e(n)}</td><td>{_e(r)}</td><td class=\"num\">{c}</td></tr>"
                      for (n, r), c in by_reason.most_common())
    detail = "".join(
        f"<tr><td>{_e(n)}</td><td>{_e(i)}</td><td>{_e(_short(questions.get(i, ''), 200))}</td>"
        f"<td>{_e(_short(err, 500))}</td></tr>" for n, i, err in rows[:max_items])
    more = f"<p>… and {len(rows) - max_items} more in the artifact.</p>" if len(rows) > max_items else ""
    return (f"<h2>Failed items ({len(rows)})</h2>"
            "<table><thead><tr><th>metric</th><th>reason</th><th>count</th></tr></thead>"
            f"<tbody>{summary}</tbody></table>"
            f"<details><summary>every failed item</summary><table><thead><tr><th>metric</th><th>item</th>"
            f"<th>question</th><th>reason</th></tr></thead><tbody>{detail}</tbody></table>{more}</details>")


def _run_info_section(run_info: Mapping[str, Any] | None) -> str:
    if not run_info:
        return ""
    rows = []
    for key, value in run_info.items():
        if isinstance(value, Mapping | list | tuple):
            shown = f"<pre>{_e(json.dumps(value, indent=2, default=str, sort_keys=True))}</pre>"
        else:
            shown = f"<code>{_e(str(value))}</code>"
        rows.append(f"<tr><th>{_e(str(key))}</th><td>{shown}</td></tr>")
    return f'<h2>Run info</h2><table class="kv"><tbody>{"".join(rows)}</tbody></table>'


# ---------------------------------------------------------------- helpers


def _check_inputs(metrics: Mapping[str, MetricResult], items: pd.DataFrame | None,
                  worst_by: str | None) -> None:
    wrong = [k for k, v in metrics.items() if not isinstance(v, MetricResult)]
    if wrong:
        raise TypeError(f"metrics must map names to MetricResult; not so for {wrong}")
    if items is None:
        return
    if not isinstance(items, pd.DataFrame):
        raise TypeError(f"items must be a pandas DataFrame (one row per item), got {type(items).__name__}")
    if "item_id" not in items.columns:
        raise ValueError(f"items needs an 'item_id' column; it has {list(items.columns)}")
    if worst_by is not None and worst_by not in items.columns:
        raise ValueError(f"worst_by={worst_by!r} is not a column of items; metric columns: "
                         f"{_metric_columns(metrics, items)}")


def _metric_columns(metrics: Mapping[str, MetricResult], items: pd.DataFrame) -> list[str]:
    """Score columns: metric names present in the frame, and columns with a __reason/__error sibling."""
    cols = [c for c in items.columns if isinstance(c, str)]
    names = [c for c in cols if c not in BASE_COLUMNS and "__" not in c
             and (c in metrics or f"{c}__reason" in cols or f"{c}__error" in cols)]
    return [c for c in names if pd.to_numeric(items[c], errors="coerce").notna().any()]


def _item_card(row: pd.Series, columns: list[str], metrics: Mapping[str, MetricResult],
               thresholds: GateThresholds) -> str:
    chips, reasons = [], []
    for col in columns:
        value = _cell(row.get(col))
        error = _cell(row.get(f"{col}__error"))
        if error:
            chips.append(f'<span class="chip failed" title="{_e(error)}">{_e(col)}: failed</span>')
            reasons.append(f"<li><b>{_e(col)}</b> failed: {_e(error)}</li>")
            continue
        number = pd.to_numeric(value, errors="coerce") if value is not None else None
        if number is None or pd.isna(number):
            continue
        chips.append(f'<span class="chip">{_e(col)}: {fmt_num(float(number))}</span>')
        reason = _cell(row.get(f"{col}__reason"))
        if reason:
            reasons.append(f"<li><b>{_e(col)}</b>: {_e(_short(str(reason), _MAX_TEXT))}</li>")
    contexts = _contexts(row.get("contexts"))
    ctx_html = "".join(f'<div class="ctx"><span class="n">[{i}]</span> {_e(_short(c, _MAX_TEXT))}</div>'
                       for i, c in enumerate(contexts, start=1))
    reference = _cell(row.get("reference_answer"))
    answer = _short(str(_cell(row.get("answer")) or ""), _MAX_TEXT)
    return (
        f'<div class="card"><div class="id">{_e(str(row.get("item_id")))}</div>'
        f'<div class="q">{_e(str(_cell(row.get("question")) or ""))}</div>'
        f'<div class="label">answer</div><div class="text">{_e(answer)}</div>'
        + (f'<div class="label">reference</div><div class="text">{_e(_short(str(reference), _MAX_TEXT))}'
           "</div>" if reference else "")
        + f'<div class="chips">{"".join(chips)}</div>'
        + (f'<ul class="reasons">{"".join(reasons)}</ul>' if reasons else "")
        + (f"<details><summary>{len(contexts)} contexts</summary>{ctx_html}</details>" if contexts else "")
        + "</div>"
    )


def _contexts(value: Any) -> list[str]:
    """Contexts as a list of strings, whatever the artifact round trip made of them."""
    value = _cell(value) if not isinstance(value, list | tuple | np.ndarray) else value
    if value is None:
        return []
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        value = parsed if isinstance(parsed, list) else [value]
    out = []
    for c in value:
        if isinstance(c, Mapping):  # a serialized RetrievedContext
            c = c.get("text", c)
        out.append(str(c))
    return out


def _cell(value: Any) -> Any:
    """None for missing values (None, NaN, empty string), else the value."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _questions(items: pd.DataFrame) -> dict[str, str]:
    if "question" not in items.columns:
        return {}
    return {str(i): str(q) for i, q in zip(items["item_id"], items["question"], strict=True)}


def _frame_html(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{_e(str(c))}</th>" for c in frame.columns)
    body = []
    for _, row in frame.iterrows():
        cells = []
        for value in row:
            if isinstance(value, float | np.floating):
                cells.append(f'<td class="num">{fmt_num(float(value)) if math.isfinite(value) else "-"}</td>')
            else:
                cells.append(f"<td>{_e(str(value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _bins(values: np.ndarray) -> Iterable[float] | int:
    if values.size and np.all(values == np.round(values)):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 10:
            return np.arange(min(lo, 1 if lo >= 1 else 0) - 0.5, max(hi, 1) + 1.5)
    if values.size and values.min() >= 0 and values.max() <= 1:
        return np.linspace(0, 1, 11)
    return 10


def _img(fig: Figure, alt: str) -> str:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _ci_bounds(m: MetricResult) -> tuple[float, float]:
    score = float(m.score) if m.score is not None else 0.0
    lo = m.ci_low if m.ci_low is not None else score
    hi = m.ci_high if m.ci_high is not None else score
    return float(lo), float(hi)


def _weighted(m: MetricResult) -> float | None:
    value = m.details.get("weighted")
    return float(value) if isinstance(value, int | float) else None


def _ci(m: MetricResult) -> str:
    return "-" if m.ci_low is None or m.ci_high is None else f"[{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}]"


def _short(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _md(text: str) -> str:
    """Safe inside a Markdown table cell, a bullet or a code span (no backticks)."""
    return md_cell(text).replace("`", "'")


_FAMILY_COLOURS = {"retrieval": "#1565c0", "judge": "#6a1b9a", "e2e": "#ef6c00"}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5rem auto;max-width:1100px;
 color:#222;padding:0 1rem;line-height:1.4}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:2px solid #e3e7ea;
 padding-bottom:.2rem}h3{font-size:1rem}
table{border-collapse:collapse;font-size:.88rem;margin:.5rem 0}
th,td{border-bottom:1px solid #e0e0e0;padding:.3rem .6rem;text-align:left;vertical-align:top}
thead th{background:#f3f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.warn{color:#e65100;font-weight:600}
.summary{color:#444}
.gate{padding:.6rem 1rem;border-radius:.4rem;margin:.8rem 0}.gate ul{margin:.3rem 0 0}
.gate.ok{background:#e8f5e9;border-left:5px solid #2e7d32}
.gate.bad{background:#ffebee;border-left:5px solid #c62828}
.verdict-line{font-size:1.1rem;font-weight:600;padding:.6rem 1rem;border-radius:.4rem;margin:.6rem 0}
.verdict-line.bad{background:#ffebee;border-left:6px solid #c62828}
.verdict-line.ok{background:#e8f5e9;border-left:6px solid #2e7d32}
.verdict-line.hold{background:#fff8e1;border-left:6px solid #f9a825}
.verdict-line.none{background:#eceff1;border-left:6px solid #78909c}
table.headline{font-size:.92rem}table.headline td.num{white-space:nowrap}
table.headline span.hint{display:block}
.warnbox{background:#fff3e0;border-left:5px solid #ef6c00;padding:.4rem 1rem;margin:.6rem 0;font-size:.85rem}
.warnbox ul{margin:.2rem 0}
img.plot{max-width:100%;height:auto;display:block;margin:.5rem 0}
.hint{font-size:.8rem;color:#666}
.verdict{color:#fff;border-radius:.6rem;padding:.05rem .5rem;font-size:.8rem;white-space:nowrap}
.card{border:1px solid #e0e0e0;border-radius:.4rem;padding:.6rem .9rem;margin:.7rem 0;background:#fcfcfd}
.card .id{font-size:.75rem;color:#888}.card .q{font-weight:600;margin:.2rem 0 .4rem}
.card .label{font-size:.72rem;text-transform:uppercase;color:#888;margin-top:.3rem}
.card .text,.ctx{white-space:pre-wrap;word-break:break-word;font-size:.88rem}
.ctx{border-left:3px solid #cfd8dc;padding-left:.5rem;margin:.4rem 0;color:#333}.ctx .n{color:#888}
.chips{margin:.4rem 0}.chip{display:inline-block;background:#eceff1;border-radius:.6rem;padding:0 .5rem;
 margin:0 .3rem .2rem 0;font-size:.78rem}.chip.failed{background:#ffe0b2}
ul.reasons{font-size:.85rem;margin:.2rem 0;padding-left:1.2rem}
table.kv th{background:none;width:14rem;color:#555}
pre{margin:0;font-size:.8rem;white-space:pre-wrap}
details summary{cursor:pointer;color:#1565c0;font-size:.85rem}
"""
