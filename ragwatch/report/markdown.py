"""The short Markdown summary of a run: the headline first, then the gate, every metric, failures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ragwatch.decision.compare import Comparison
from ragwatch.decision.gate import GateDecision
from ragwatch.fmt import fmt_num, fmt_signed
from ragwatch.report.style import ci_text, md_text, short, weighted_score
from ragwatch.report.summary import ReportSettings, gate_label, summary_markdown
from ragwatch.report.verdicts import reason_lines, row_note
from ragwatch.results import MetricResult


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
    unavailable: Mapping[str, str] | None = None,
) -> str:
    """A short Markdown summary: the verdict line and headline metrics first (as at the top of the
    HTML report), then the gate's reasons, every metric, failures, changes and per-step timings.
    `unavailable`: metric name -> why this system cannot have it (listed, not failed)."""
    settings = settings or ReportSettings()
    top = summary_markdown(metrics, comparisons or {}, gate, settings.headline, unavailable)
    lines = [f"# {md_text(title)}", "", top, ""]
    if gate is not None:
        lines += [f"**Gate: {gate_label(gate)}**", ""] + [f"- {md_text(r)}" for r in reason_lines(gate)] + [""]
    if run_info:
        keys = [k for k in ("config_fingerprint", "eval_set_version", "model_version") if k in run_info]
        lines += [f"- {md_text(k)}: `{md_text(str(run_info[k]))}`" for k in keys] + ([""] if keys else [])
    if timings:
        lines += ["Step timings: " + ", ".join(f"{md_text(k)} {v:.1f} s" for k, v in timings.items()), ""]
    lines += ["## All metrics", "", "| metric | score | weighted | 95% CI | scored | failed |",
              "|---|---|---|---|---|---|"]
    for name, m in metrics.items():
        lines.append(f"| {md_text(name)} | {fmt_num(m.score)} | {fmt_num(weighted_score(m))} | {ci_text(m)} | "
                     f"{m.n_scored} | {m.n_failed} |")
    failing = {n: m for n, m in metrics.items() if m.n_failed}
    lines.append("")
    if failing:
        lines += ["## Failures", ""]
        for name, m in failing.items():
            reasons = Counter(short(it.error or "", 120) for it in m.items if not it.ok)
            top = "; ".join(f"{md_text(r)} (x{c})" for r, c in reasons.most_common(max_reasons))
            lines.append(f"- **{md_text(name)}**: {m.n_failed} of {m.n_failed + m.n_scored} failed: {top}")
        lines.append("")
    else:
        lines += ["No failed items.", ""]
    for label, cmp in (comparisons or {}).items():
        lines.append(f"## vs {md_text(label)}")
        lines.append("")
        if not cmp.has_baseline:
            lines += [f"No {md_text(cmp.old_label)} baseline.", ""]
            continue
        counts = ", ".join(f"{v} {k}" for k, v in sorted(cmp.counts().items()))
        lines.append(counts or "no common metrics")
        for r in cmp.rows:
            if r.verdict in ("regressed", "improved", "not_comparable"):
                interval = f"[{fmt_signed(r.diff_low)}, {fmt_signed(r.diff_high)}]"
                lines.append(f"- **{r.verdict}** {md_text(r.metric)}: {fmt_num(r.old_score)} -> {fmt_num(r.new_score)} "
                             f"(diff {fmt_signed(r.diff)}, 95% CI {interval})")
            elif r.verdict == "not_available":
                lines.append(f"- **not available** {md_text(r.metric)}: {md_text(row_note(r))}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
