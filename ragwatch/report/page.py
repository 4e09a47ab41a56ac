"""The HTML report of one evaluation run: a self-contained page, the answer to "better or worse?" first.

No external assets and no JavaScript: CSS is inline (`style.CSS`) and plots are embedded PNGs
(`plots`). Every piece of text is HTML-escaped: answers, documents and even judge reasons are
untrusted.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ragwatch.decision.compare import Comparison
from ragwatch.decision.gate import GateDecision
from ragwatch.fmt import fmt_num
from ragwatch.report.plots import at_k_section, distribution_section, interval_plot_section
from ragwatch.report.style import CSS, ci_text, esc, short, weighted_score
from ragwatch.report.summary import (
    VERDICT_COLOURS,
    HeadlineRow,
    ReportSettings,
    comparison_html,
    delta_interval,
    gate_label,
    headline_rows,
    judge_warnings,
    labelled_text,
    scale_text,
    unavailable_lines,
    verdict_line,
    verdict_text,
)
from ragwatch.report.verdicts import flag_lines, reason_lines
from ragwatch.results import MetricResult
from ragwatch.statements import statement_verdicts

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
    n_worst: int = 10,
    worst_by: str | None = None,
    settings: ReportSettings | None = None,
    unavailable: Mapping[str, str] | None = None,
) -> str:
    """One self-contained HTML page for an evaluation run, read top-down as a lead would.

    The top: one verdict line (vs each comparison, and the gate), the headline metrics of
    `settings.headline` with value, interval, n and the delta and verdict vs each comparison, and
    warnings about judges. Then the comparisons, the plots, the items that failed or regressed
    (keyword tests, unsupported statements, worst and failed items; capped at `settings.max_items`),
    and last every metric: judge agreement, a table of the other metrics, and one small matrix per
    retrieval mode (measure x k). `unavailable`: metric name -> why this system cannot have it
    (listed under the gate, "not available" in the headline; not failed items).

    `items`: one row per evaluated item (columns item_id, question, answer, contexts,
    reference_answer, one column per metric and `<metric>__reason` / `<metric>__error`); any of
    them but item_id may be missing. `worst_by` ranks the worst items by one metric; by default by
    the mean percentile rank over all metric columns (direction-aware, so lower perplexity is better).
    """
    _check_inputs(metrics, items, worst_by)
    # positional row access below relies on a unique index
    items = items.reset_index(drop=True) if items is not None else pd.DataFrame({"item_id": []})
    settings = settings or _DEFAULT_SETTINGS
    unavailable = unavailable or {}
    sections = [
        _verdict_section(metrics, comparisons or {}, gate, settings, unavailable),
        _summary_section(metrics, items, gate, unavailable),
        _comparison_section(comparisons),
        interval_plot_section(metrics),
        at_k_section(metrics),
        distribution_section(metrics),
        _keyword_tests_section(metrics, settings.max_items),
        _unsupported_section(metrics, items, settings.max_items),
        _worst_section(metrics, items, n_worst, worst_by),
        _failed_section(metrics, items, settings.max_items),
        _agreement_section(agreement),
        _all_metrics_section(metrics),
        _run_info_section(run_info),
    ]
    body = "\n".join(s for s in sections if s)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        f"<body><h1>{esc(title)}</h1>\n{body}\n</body></html>\n"
    )


# ---------------------------------------------------------------- sections


def _summary_section(metrics: Mapping[str, MetricResult], items: pd.DataFrame,
                     gate: GateDecision | None, unavailable: Mapping[str, str]) -> str:
    failed = sum(m.n_failed for m in metrics.values())
    scored = sum(m.n_scored for m in metrics.values())
    parts = [f"<b>{len(items)}</b> items", f"<b>{len(metrics)}</b> metrics",
             f"<b>{scored}</b> item scores", f'<b class="{"warn" if failed else ""}">{failed}</b> failed']
    out = f'<p class="summary">{" · ".join(parts)}</p>'
    if gate is not None:
        cls, verdict = ("ok" if gate.passed else "" if gate.status == "not_applied" else "bad"), gate_label(gate)
        reasons = "".join(f"<li>{esc(r)}</li>" for r in reason_lines(gate))
        out += f'<div class="gate {cls}"><b>Gate: {verdict}</b><ul>{reasons}</ul></div>'
    if lines := unavailable_lines(unavailable):
        out += '<ul id="unavailable" class="hint">' + "".join(f"<li>{esc(x)}</li>" for x in lines) + "</ul>"
    return out


def _verdict_section(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                     gate: GateDecision | None, settings: ReportSettings, unavailable: Mapping[str, str]) -> str:
    """The first screen: one verdict line, the headline table, warnings about judges."""
    cls, line = verdict_line(comparisons, gate)
    out = f'<div id="verdict" class="verdict-line {cls}">{esc(line)}</div>'
    out += _headline_table(headline_rows(metrics, comparisons, settings.headline, unavailable), list(comparisons))
    warnings = list(dict.fromkeys((flag_lines(gate) if gate is not None else []) + judge_warnings(metrics)))
    if warnings:
        out += ('<div class="warnbox"><b>Judges to distrust</b><ul>'
                + "".join(f"<li>{esc(w)}</li>" for w in warnings) + "</ul></div>")
    return out


def _headline_table(rows: list[HeadlineRow], labels: list[str]) -> str:
    head = ("<tr><th>headline metric</th><th>value</th><th>95% CI</th><th>n</th>"
            + "".join(f"<th>Δ vs {esc(label)}</th><th>verdict</th>" for label in labels) + "</tr>")
    body = []
    for r in rows:
        m = r.result
        if m is None and r.unavailable:
            cells = f'<td colspan="3" class="hint" title="{esc(r.unavailable)}">not available for this system</td>'
        elif m is None:
            cells = '<td colspan="3" class="hint">not measured in this run</td>'
        else:
            weighted = f' <span class="hint">({esc(r.beside)})</span>' if r.beside is not None else ""
            if (labelled := labelled_text(m)) is not None:
                weighted += f' <span class="hint">{esc(labelled)}</span>'
            failed = f' <span class="warn">{m.n_failed} failed</span>' if m.n_failed else ""
            cells = (f'<td class="num">{fmt_num(m.score)}{weighted}</td><td class="num">{ci_text(m)}</td>'
                     f'<td class="num">{m.n_scored}{failed}</td>')
        for label in labels:
            d = r.deltas[label]
            colour = VERDICT_COLOURS.get(d.verdict, "#9e9e9e")
            badge = ("" if d.verdict == "-"
                     else f'<span class="verdict" style="background:{colour}">{esc(verdict_text(d))}</span>')
            cells += f'<td class="num">{esc(delta_interval(d)) or "-"}</td><td>{badge}</td>'
        scale = f' <span class="hint">({esc(scale_text(m))})</span>' if m is not None else ""
        body.append(f"<tr><td><b>{esc(r.metric)}</b>{scale}</td>{cells}</tr>")
    return f'<table id="headline" class="headline"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _all_metrics_section(metrics: Mapping[str, MetricResult]) -> str:
    """Every metric, last: one table of the non-retrieval metrics, then one matrix per retrieval mode."""
    retrieval = {n: m for n, m in metrics.items() if m.info.family == "retrieval"}
    rows = []
    for name, m in metrics.items():
        if name in retrieval:
            continue
        direction = "↑" if m.info.higher_is_better else "↓"
        failed = f'<td class="num{" warn" if m.n_failed else ""}">{m.n_failed}</td>'
        rows.append(
            f"<tr><td>{esc(name)}</td><td>{esc(m.info.family)}</td>"
            f'<td class="num">{fmt_num(m.score)}</td><td class="num">{fmt_num(weighted_score(m))}</td>'
            f'<td class="num">{ci_text(m)}</td>'
            f'<td class="num">{m.n_scored}</td>{failed}<td title="better">{direction}</td></tr>'
        )
    head = "<tr><th>metric</th><th>kind</th><th>score</th><th>prob-weighted</th><th>95% CI</th>" \
           "<th>n scored</th><th>n failed</th><th>better</th></tr>"
    if not metrics:
        return '<h2>All metrics</h2><p>No metrics.</p>'
    table = (f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
             '<p class="hint">score: greedy judge verdicts; prob-weighted: the judge\'s probabilities of its '
             "answers (where the model returns them).</p>" if rows else "")
    return '<h2>All metrics</h2>' + table + _retrieval_matrices(retrieval)


def _retrieval_matrices(metrics: Mapping[str, MetricResult]) -> str:
    """One small matrix per retrieval mode: a row per measure, a column per k (a measure without k,
    e.g. MRR over the whole ranking, in its own column); each cell the value and its interval."""
    if not metrics:
        return ""
    modes: dict[str, dict[str, dict[int | None, MetricResult]]] = {}
    for m in metrics.values():
        modes.setdefault(m.info.mode or "-", {}).setdefault(m.info.measure or m.name, {})[m.info.k] = m
    out = ['<h3>Retrieval</h3><p class="hint">value [95% interval] per measure (rows) and k (columns).</p>']
    for mode, measures in modes.items():
        ks = sorted({k for cells in measures.values() for k in cells if k is not None})
        columns: list[int | None] = [*ks, None] if any(None in cells for cells in measures.values()) else ks
        head = "".join(f"<th>@{k}</th>" if k is not None else "<th>whole ranking</th>" for k in columns)
        body = []
        for measure, cells in measures.items():
            tds = "".join(_matrix_cell(cells.get(k)) for k in columns)
            body.append(f"<tr><th>{esc(measure)}</th>{tds}</tr>")
        ns = sorted({m.n_scored for cells in measures.values() for m in cells.values()})
        failed = sum(m.n_failed for cells in measures.values() for m in cells.values())
        caption = f"{esc(mode)} <span class=\"hint\">(n = {', '.join(map(str, ns))} questions" + (
            f', <span class="warn">{failed} failed item scores</span>' if failed else "") + ")</span>"
        out.append(f'<table class="retrieval-matrix" data-mode="{esc(mode)}"><caption>{caption}</caption>'
                   f"<thead><tr><th>measure</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    # e.g. a measure trivially reached (k >= the corpus's documents): said once, not per mode
    if notes := list(dict.fromkeys(w for m in metrics.values() for w in m.details.get("warnings", []))):
        out.append('<div class="warnbox"><ul>' + "".join(f"<li>{esc(w)}</li>" for w in notes) + "</ul></div>")
    return "".join(out)


def _matrix_cell(m: MetricResult | None) -> str:
    if m is None:
        return '<td class="num">-</td>'
    interval = f' <span class="hint">{ci_text(m)}</span>' if m.ci_low is not None else ""
    return f'<td class="num">{fmt_num(m.score)}{interval}</td>'


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
        rows.append(f"<tr><td>{esc(it.item_id)}</td><td>{esc(d.get('question', ''))}</td><td>{status}</td>"
                    f"<td><b>{esc(words)}</b></td><td>{esc(short(answer, 400))}</td></tr>")
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
    for it in m.items:
        # the verdict is P(supported) against its cut-off; the reason is the evidence or the rule that decided
        bad = [(v.statement, (f"P(supported) {v.p_supported:.2f} < {v.threshold:.2f}. "
                              if v.p_supported is not None and v.threshold is not None else "") + v.reason)
               for v in statement_verdicts(it.details) if v.verdict is False]
        if it.ok and bad:
            rows.append((it.item_id, bad))
    if not rows:
        return "<h2>Unsupported statements</h2><p>Faithfulness found no unsupported statement.</p>"
    html_rows = "".join(
        f"<tr><td>{esc(i)}</td><td>{esc(short(questions.get(i, ''), 200))}</td><td><ul>"
        + "".join(f"<li>{esc(s)} <span class=\"hint\">{esc(short(str(r), 260))}</span></li>" for s, r in bad)
        + "</ul></td></tr>" for i, bad in rows[:max_items])
    more = f"<p>… and {len(rows) - max_items} more in the artifact.</p>" if len(rows) > max_items else ""
    return (f"<h2>Unsupported statements ({len(rows)} answers)</h2><table><thead><tr><th>item</th><th>question</th>"
            f"<th>statements the contexts do not support</th></tr></thead><tbody>{html_rows}</tbody></table>{more}")


def _agreement_section(agreement: pd.DataFrame | None) -> str:
    if agreement is None or agreement.empty:
        return ""
    return "<h2>Judge agreement</h2>" + _frame_html(agreement)


def _comparison_section(comparisons: Mapping[str, Comparison] | None) -> str:
    if not comparisons:
        return ""
    parts = []
    for label, cmp in comparisons.items():
        parts.append(f"<h3>vs {esc(label)}</h3>" + comparison_html(cmp, heading=False))
    legend = " ".join(f'<span class="verdict" style="background:{c}">{esc(v)}</span>'
                      for v, c in VERDICT_COLOURS.items())
    return ("<h2>Comparisons</h2>" + "".join(parts)
            + f'<p class="hint">diff = new − old with a paired bootstrap 95% interval. {legend}</p>')


def _worst_section(metrics: Mapping[str, MetricResult], items: pd.DataFrame,
                   n_worst: int, worst_by: str | None) -> str:
    columns = _metric_columns(metrics, items)
    if items.empty or not columns or n_worst <= 0:
        return ""
    ranks = {}
    for col in ([worst_by] if worst_by else columns):
        values = pd.to_numeric(items[col], errors="coerce")
        higher = col not in metrics or metrics[col].info.higher_is_better
        ranks[col] = values.rank(pct=True, ascending=higher)
    badness = pd.DataFrame(ranks).mean(axis=1, skipna=True)
    order = badness.dropna().sort_values(kind="stable").index[:n_worst]
    if len(order) == 0:
        return ""
    cards = [_item_card(items.loc[i], columns, metrics) for i in order]
    how = f"lowest {esc(worst_by)}" if worst_by else "lowest mean percentile rank over all metrics"
    return f"<h2>Worst items</h2><p class=\"hint\">ranked by {how}.</p>" + "".join(cards)


def _failed_section(metrics: Mapping[str, MetricResult], items: pd.DataFrame, max_items: int) -> str:
    questions = _questions(items)
    rows = [(name, it.item_id, it.error or "") for name, m in metrics.items() for it in m.items if not it.ok]
    if not metrics:
        return ""
    if not rows:
        return "<h2>Failed items</h2><p>None: every item was scored by every metric.</p>"
    by_reason = Counter((name, short(err, 200)) for name, _, err in rows)
    summary = "".join(f"<tr><td>{esc(n)}</td><td>{esc(r)}</td><td class=\"num\">{c}</td></tr>"
                      for (n, r), c in by_reason.most_common())
    detail = "".join(
        f"<tr><td>{esc(n)}</td><td>{esc(i)}</td><td>{esc(short(questions.get(i, ''), 200))}</td>"
        f"<td>{esc(short(err, 500))}</td></tr>" for n, i, err in rows[:max_items])
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
            shown = f"<pre>{esc(json.dumps(value, indent=2, default=str, sort_keys=True))}</pre>"
        else:
            shown = f"<code>{esc(str(value))}</code>"
        rows.append(f"<tr><th>{esc(str(key))}</th><td>{shown}</td></tr>")
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


def _item_card(row: pd.Series, columns: list[str], metrics: Mapping[str, MetricResult]) -> str:
    chips, reasons = [], []
    for col in columns:
        value = _cell(row.get(col))
        error = _cell(row.get(f"{col}__error"))
        if error:
            chips.append(f'<span class="chip failed" title="{esc(error)}">{esc(col)}: failed</span>')
            reasons.append(f"<li><b>{esc(col)}</b> failed: {esc(error)}</li>")
            continue
        number = pd.to_numeric(value, errors="coerce") if value is not None else None
        if number is None or pd.isna(number):
            continue
        chips.append(f'<span class="chip">{esc(col)}: {fmt_num(float(number))}</span>')
        reason = _cell(row.get(f"{col}__reason"))
        if reason:
            reasons.append(f"<li><b>{esc(col)}</b>: {esc(short(str(reason), _MAX_TEXT))}</li>")
    contexts = _contexts(row.get("contexts"))
    ctx_html = "".join(f'<div class="ctx"><span class="n">[{i}]</span> {esc(short(c, _MAX_TEXT))}</div>'
                       for i, c in enumerate(contexts, start=1))
    reference = _cell(row.get("reference_answer"))
    answer = short(str(_cell(row.get("answer")) or ""), _MAX_TEXT)
    return (
        f'<div class="card"><div class="id">{esc(str(row.get("item_id")))}</div>'
        f'<div class="q">{esc(str(_cell(row.get("question")) or ""))}</div>'
        f'<div class="label">answer</div><div class="text">{esc(answer)}</div>'
        + (f'<div class="label">reference</div><div class="text">{esc(short(str(reference), _MAX_TEXT))}'
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
    head = "".join(f"<th>{esc(str(c))}</th>" for c in frame.columns)
    body = []
    for _, row in frame.iterrows():
        cells = []
        for value in row:
            if isinstance(value, float | np.floating):
                cells.append(f'<td class="num">{fmt_num(float(value)) if math.isfinite(value) else "-"}</td>')
            else:
                cells.append(f"<td>{esc(str(value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
