"""A monitor run as text (the terminal) and as a self-contained HTML page (the dashboard's
visualization of the `drift_report` artifact)."""

from __future__ import annotations

from ragwatch.fmt import fmt_num, fmt_signed
from ragwatch.monitoring.feedback import SELF_SELECTED, level_text
from ragwatch.monitoring.judge_drift import CORRECTED
from ragwatch.monitoring.monitor import MonitorReport
from ragwatch.report.style import CSS, esc

_COLOURS = {"drift": "#b00020", "no drift": "#1b7f3b", "undecided": "#8a6d00"}


def usage_text(report: MonitorReport) -> str:
    judge = report.usage.get("judge", {})
    generator = report.usage.get("generator", {})
    return ("usage: the calls that evaluated these windows, each window once (when an earlier run evaluated a "
            "window, its calls were made then; this run's own calls: the estimate vs actual table)\n"
            f"  generator: {generator.get('calls', 0)} calls ({generator.get('note', '')})\n"
            f"  judge: {judge.get('calls', 0)} calls, {judge.get('cache_hits', 0)} cache hits, "
            f"{judge.get('prompt_tokens', 0)} + {judge.get('completion_tokens', 0)} tokens, "
            f"${judge.get('cost_usd', 0.0):.4f}"
            + (f"\n  anchor: {anchor['calls']} calls, {anchor['cache_hits']} cache hits for {anchor['items']} anchor "
               "items re-judged (each window's judge; the LLM cache serves an unchanged one)"
               if (anchor := report.usage.get("anchor", {})).get("items") else ""))


def feedback_text(report: MonitorReport) -> str:
    """What users said, window by window: each kind's share with its interval and n, the current window's
    change against the earlier ones, the prediction-powered level of the metric it labels, and what
    feedback measures."""
    windows = report.feedback_windows or ({"current": report.feedback} if report.feedback.figures else {})
    if not any(s.figures for s in windows.values()):
        return report.feedback.text()
    lines = ["user feedback, per window (beside the metrics, not instead of careful labels):"]
    kinds = list(dict.fromkeys(f.kind for s in windows.values() for f in s.figures))
    for kind in kinds:
        labels = next((f.labels for s in windows.values() for f in s.figures if f.kind == kind and f.labels), None)
        lines.append(f"  {kind} ({f'labels {labels}' if labels else 'labels no metric'}):")
        for label, summary in windows.items():
            figure = summary.figure(kind)
            if figure is None:
                lines.append(f"    {label:<9} {summary.window}: none of {summary.n_answers} answers")
                continue
            lines.append(f"    {label:<9} {summary.window}: {fmt_num(figure.score)} [{fmt_num(figure.ci_low)}, "
                         f"{fmt_num(figure.ci_high)}] n={figure.n} of {summary.n_answers} answers")
            if label == "current":
                lines += [f"              change {c.text()}" for c in report.feedback_changes if c.kind == kind]
        notes = {f.note for s in windows.values() for f in s.figures if f.kind == kind and f.note != SELF_SELECTED}
        lines += [f"    note: {note}" for note in sorted(notes) if note]
    levels = [(label, level) for label, s in windows.items() for level in s.levels]
    if levels:
        lines.append("  prediction-powered level per window (the judge on every judged answer, corrected by the "
                     "feedback on the judged answers that have one):")
        lines += [f"    {label:<9} {windows[label].window}: {level_text(level, ' ' * 15)}" for label, level in levels]
    lines += [f"    {label:<9} {s.window}: {metric}: no level: {reason}"
              for label, s in windows.items() for metric, reason in s.skipped.items()]
    lines.append(f"  what feedback measures: {SELF_SELECTED}")
    return "\n".join(lines)


def judge_drift_text(report: MonitorReport) -> str:
    """Per comparison: each judge on the anchor (judge drift, with the anchor's figures), then the system's
    drift on the corrected levels, apart."""
    lines: list[str] = []
    for judges, comparison in zip(report.judge_drift, report.comparisons, strict=False):
        if not judges.rows and not judges.unanchored and not judges.unavailable:
            continue
        lines.append(f"judges {judges.label} ({judges.new_window} vs {judges.old_window}), on the labelled anchor:")
        lines += [f"  {row.text()}" for row in judges.rows]
        lines += [f"  the anchor was not judged for {what}: judge drift not measured" for what in judges.unavailable]
        lines += [f"  judge drift: {metric} judge changed ({what}), and no anchor labels it: its rows read undecided"
                  for metric, what in judges.unanchored.items()]
        corrected = [r for r in comparison.rows if r.metric.endswith(f" {CORRECTED}")]
        if corrected:
            shown = [f"{r.metric} {r.verdict} ({r.direction})" for r in corrected if r.verdict == "drift"]
            rest = "; ".join(f"{r.metric} {fmt_num(r.old_score)} -> {fmt_num(r.new_score)}: {r.verdict}"
                             + (f": {r.note}" if r.diff is None else "") for r in corrected)
            lines.append(f"  system drift on corrected levels: {', '.join(shown) if shown else 'none'} ({rest})")
        elif any(r.drift for r in judges.rows):
            lines.append("  system drift on corrected levels: not measured (the windows' judged metrics are missing)")
    return "\n".join(lines)


def report_text(report: MonitorReport) -> str:
    counts = report.counts
    lines = [f"monitor: {report.verdict_line()}", "",
             f"log {report.source}: " + ", ".join(f"{n} {o.replace('_', ' ')}" for o, n in counts.items())]
    lines += [f"  {b.where}: {b.outcome.replace('_', ' ')}: {b.reason}" for b in report.bad[:10]]
    if judges := judge_drift_text(report):
        lines += ["", judges]
    lines += ["", *report.windows.values(), "", "this window:"]
    for name, s in sorted(report.metrics.items()):
        interval = f"[{fmt_num(s.get('ci_low'))}, {fmt_num(s.get('ci_high'))}]"
        lines.append(f"  {name:<32} {fmt_num(s.get('score')):>7} {interval:>18} n={s.get('n_scored')} "
                     f"failed={s.get('n_failed')}")
    lines += [f"  {name}: {reason}" for name, reason in sorted(report.unavailable.items())]
    for comparison in report.comparisons:
        lines += ["", comparison.text()]
    lines += ["", feedback_text(report), "", usage_text(report)]
    if report.annotations_written:
        lines.append(f"wrote the verdict of {report.annotations_written} traces back to their source "
                     "as span annotations")
    return "\n".join(lines)


def report_html(report: MonitorReport) -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>ragwatch monitor</title><style>{CSS}"
             "</style></head><body>", f"<h1>Monitor: {esc(report.verdict_line())}</h1>",
             f"<p>Log {esc(report.source)}: " + ", ".join(f"{n} {esc(o.replace('_', ' '))}"
                                                          for o, n in report.counts.items()) + "</p>"]
    if report.bad:
        parts.append("<details><summary>rows not evaluated</summary><ul>" + "".join(
            f"<li>{esc(b.where)}: {esc(b.outcome)}: {esc(b.reason)}</li>" for b in report.bad) + "</ul></details>")
    parts.append("<ul>" + "".join(f"<li>{esc(w)}</li>" for w in report.windows.values()) + "</ul>")
    for comparison in report.comparisons:
        parts.append(f"<h2>{esc(comparison.label)}: {esc(comparison.new_window)} vs {esc(comparison.old_window)}</h2>"
                     f"<p>Unpaired comparison (different questions): MOVER intervals, "
                     f"\"drift\" at {comparison.confidence:.0%} for the whole window (Holm over its metrics); "
                     f"\"no drift\": the change ruled out beyond the tolerance, {comparison.confidence:.0%} "
                     "per metric (two one-sided tests).</p>"
                     "<table><tr><th>metric</th><th>new</th><th>old</th><th>difference [interval]</th>"
                     "<th>n new / old</th><th>verdict</th><th>note</th></tr>")
        for r in comparison.rows:
            interval = (f"{fmt_signed(r.diff)} [{fmt_signed(r.diff_low)}, {fmt_signed(r.diff_high)}]"
                        if r.diff is not None else "-")
            verdict = r.verdict + (f" ({r.direction})" if r.direction else "")
            parts.append(f"<tr><td>{esc(r.metric)}</td><td>{fmt_num(r.new_score)}</td><td>{fmt_num(r.old_score)}</td>"
                         f"<td>{interval}</td><td>{r.n_new} / {r.n_old}</td>"
                         f"<td style='color:{_COLOURS[r.verdict]};font-weight:600'>{esc(verdict)}</td>"
                         f"<td>{esc(r.note)}</td></tr>")
        parts.append("</table>")
    if judges := judge_drift_text(report):
        parts.append(f"<h2>Judge drift, on the labelled anchor</h2><pre>{esc(judges)}</pre>")
    parts.append(f"<h2>User feedback</h2><pre>{esc(feedback_text(report))}</pre>")
    parts.append(f"<h2>Usage</h2><pre>{esc(usage_text(report))}</pre></body></html>")
    return "".join(parts)
