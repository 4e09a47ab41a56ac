"""A monitor run as text (the terminal) and as a self-contained HTML page (the dashboard's
visualization of the `drift_report` artifact)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragwatch.fmt import fmt_num, fmt_signed
from ragwatch.report.style import CSS, esc

if TYPE_CHECKING:
    from ragwatch.logs.monitor import MonitorReport

_COLOURS = {"drift": "#b00020", "no drift": "#1b7f3b", "undecided": "#8a6d00"}


def usage_text(report: MonitorReport) -> str:
    judge = report.usage.get("judge", {})
    generator = report.usage.get("generator", {})
    return ("usage: the calls that evaluated these windows, each window once (when an earlier run evaluated a "
            "window, its calls were made then; this run's own calls: the estimate vs actual table)\n"
            f"  generator: {generator.get('calls', 0)} calls ({generator.get('note', '')})\n"
            f"  judge: {judge.get('calls', 0)} calls, {judge.get('cache_hits', 0)} cache hits, "
            f"{judge.get('prompt_tokens', 0)} + {judge.get('completion_tokens', 0)} tokens, "
            f"${judge.get('cost_usd', 0.0):.4f}")


def report_text(report: MonitorReport) -> str:
    counts = report.counts
    lines = [f"monitor: {report.verdict_line()}", "",
             f"log {report.source}: " + ", ".join(f"{n} {o.replace('_', ' ')}" for o, n in counts.items())]
    lines += [f"  {b.where}: {b.outcome.replace('_', ' ')}: {b.reason}" for b in report.bad[:10]]
    lines += ["", *report.windows.values(), "", "this window:"]
    for name, s in sorted(report.metrics.items()):
        interval = f"[{fmt_num(s.get('ci_low'))}, {fmt_num(s.get('ci_high'))}]"
        lines.append(f"  {name:<32} {fmt_num(s.get('score')):>7} {interval:>18} n={s.get('n_scored')} "
                     f"failed={s.get('n_failed')}")
    lines += [f"  {name}: {reason}" for name, reason in sorted(report.unavailable.items())]
    for comparison in report.comparisons:
        lines += ["", comparison.text()]
    lines += ["", report.feedback.text(), "", usage_text(report)]
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
    parts.append(f"<h2>User feedback</h2><pre>{esc(report.feedback.text())}</pre>")
    parts.append(f"<h2>Usage</h2><pre>{esc(usage_text(report))}</pre></body></html>")
    return "".join(parts)
