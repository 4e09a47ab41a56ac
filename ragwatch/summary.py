"""The one-minute answer: better or worse than the last run and than production?

One verdict line, then the headline metrics (value, interval, n, delta and verdict vs the previous
run and vs production), and warnings about judges that measure nothing or are not checked against
people. The HTML report, the Markdown `summary` artifact and what `run.py` prints all come from here.

Example:
    >>> rows = headline_rows(metrics, {"previous run": cmp_prev, "production": cmp_prod})
    >>> print(verdict_line({"previous run": cmp_prev, "production": cmp_prod}, decision))
    Worse than production: system/hit_rate regressed. Same as the previous run. Gate: NOT PROMOTED (regression).
    >>> print(summary_text(metrics, comparisons, decision))
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from ragwatch.compare import Comparison, GateDecision, MetricComparison, constant_value, matches
from ragwatch.results import MetricResult

DEFAULT_HEADLINE = ["correctness", "faithfulness", "answer_relevance", "e2e_failure_rate", "system/hit_rate"]


class ReportSettings(BaseModel):
    """What the top of the report shows, and how many items the per-item sections list.

    `headline`: metric names (exact, prefix or glob, as in the gate). `max_items`: per-item sections
    (keyword tests, unsupported statements, failed items) list at most this many; every item stays
    in the `eval_results` artifact.
    """

    model_config = ConfigDict(extra="forbid")

    headline: list[str] = Field(default_factory=lambda: list(DEFAULT_HEADLINE))
    max_items: int = Field(200, ge=1)


@dataclass
class Delta:
    """A headline metric against one baseline."""

    diff: float | None
    low: float | None
    high: float | None
    verdict: str
    basis: str = "judge"


@dataclass
class HeadlineRow:
    metric: str
    result: MetricResult | None
    deltas: dict[str, Delta] = field(default_factory=dict)  # baseline label -> delta

    @property
    def weighted(self) -> float | None:
        """The probability-weighted score of a judge, next to its greedy one."""
        value = self.result.details.get("weighted") if self.result is not None else None
        return float(value) if isinstance(value, int | float) else None


def headline_rows(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                  names: list[str] | None = None) -> list[HeadlineRow]:
    """One row per headline name: the first metric it matches (exact names first), or an empty row."""
    rows = []
    for pattern in names if names is not None else DEFAULT_HEADLINE:
        name = pattern if pattern in metrics else next((m for m in metrics if matches(m, pattern)), pattern)
        row = HeadlineRow(metric=name, result=metrics.get(name))
        for label, cmp in comparisons.items():
            row.deltas[label] = _delta(cmp, name)
        rows.append(row)
    return rows


def _delta(cmp: Comparison, name: str) -> Delta:
    if not cmp.has_baseline:
        return Delta(None, None, None, "no baseline")
    try:
        r: MetricComparison = cmp.row(name)
    except KeyError:
        return Delta(None, None, None, "-")
    diff, low, high = r.decided_interval
    return Delta(diff, low, high, r.verdict, r.basis)


def comparison_verdict(cmp: Comparison, label: str) -> tuple[str, str]:
    """("worse" | "better" | "same" | "none", sentence) for one baseline, read from the gated metrics."""
    if not cmp.has_baseline:
        return "none", f"No {label} to compare with."
    gated = [r for r in cmp.rows if r.gated]
    worse = [r.metric for r in gated if r.verdict in ("regressed", "not_comparable")]
    better = [r.metric for r in gated if r.verdict == "improved"]
    if worse:
        return "worse", f"Worse than {label}: {', '.join(worse)} regressed" + (
            f" (improved: {', '.join(better)})." if better else ".")
    if better:
        return "better", f"Better than {label}: {', '.join(better)} improved, nothing gated regressed."
    undecided = [r.metric for r in gated if r.verdict == "inconclusive"]
    if undecided:
        return "same", f"No clear change vs {label} ({len(undecided)} gated metrics undecided: too few items?)."
    return "same", f"Same as {label}: no gated metric changed beyond its allowed drop."


def verdict_line(comparisons: Mapping[str, Comparison], gate: GateDecision | None) -> tuple[str, str]:
    """(css class "bad" | "hold" | "ok" | "none", one line answering "better or worse?")."""
    parts, kinds = [], []
    for label, cmp in comparisons.items():
        kind, sentence = comparison_verdict(cmp, label)
        parts.append(sentence)
        kinds.append(kind)
    if not comparisons:
        parts.append("First evaluation: nothing to compare with.")
    if gate is not None:
        parts.append("Gate: " + gate_label(gate) + ".")
    if (gate is not None and gate.status == "regressed") or "worse" in kinds:
        cls = "bad"
    elif gate is not None and gate.status == "hold":
        cls = "hold"
    elif "better" in kinds or "same" in kinds:
        cls = "ok"
    else:
        cls = "none"
    return cls, " ".join(parts)


def gate_label(gate: GateDecision) -> str:
    return {"promote": "PROMOTED", "no_baseline": "PROMOTED (first production baseline)",
            "regressed": "NOT PROMOTED (regression)",
            "hold": "NOT PROMOTED (held: too little evidence)"}[gate.status]


def judge_warnings(metrics: Mapping[str, MetricResult]) -> list[str]:
    """Judges to distrust: constant over the run, not checked against human labels, or off from them."""
    warnings = []
    for name, m in metrics.items():
        if not m.info.is_judge:
            continue
        value = constant_value(m)
        if value is not None:
            warnings.append(f"{name}: every one of {m.n_scored} items got {value:g}; the judge measures nothing "
                            "here and does not gate.")
        if m.labelled is None:
            measured = m.details.get("judge_measured")
            elsewhere = f" Its judge model was measured {measured}." if measured else ""
            warnings.append(f"{name}: agreement with human labels on this data is unknown (no labelled items): "
                            f"treat its score as the judge's opinion, not a measurement.{elsewhere}")
        elif m.score is not None and not m.labelled.ci_low <= m.score <= m.labelled.ci_high:
            warnings.append(f"{name}: the judge says {m.score:.3f}, human labels say {m.labelled.score:.3f} "
                            f"[{m.labelled.ci_low:.3f}, {m.labelled.ci_high:.3f}] ({m.labelled.n_labels} labels): "
                            "poor agreement; the gate uses the labelled estimate.")
    return warnings


def judge_models(metrics: Mapping[str, MetricResult]) -> str:
    """The models behind the run's judged metrics, each with the metrics it scored ("-" when none)."""
    scored: dict[str, list[str]] = {}
    for name, m in metrics.items():
        if m.info.is_judge and m.info.judge_model:
            scored.setdefault(m.info.judge_model, []).append(name)
    return "; ".join(f"{model} ({', '.join(names)})" for model, names in scored.items()) or "-"


def summary_text(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                 gate: GateDecision | None, names: list[str] | None = None) -> str:
    """The summary as plain text for a terminal: verdict line, headline table, gate reasons, warnings."""
    _, line = verdict_line(comparisons, gate)
    rows = headline_rows(metrics, comparisons, names)
    labels = list(comparisons)
    head = ["metric", "value", "95% CI", "n"] + [f"vs {label}" for label in labels]
    table = [head] + [[r.metric, _value(r), _ci(r.result), _n(r.result)]
                      + [_delta_text(r.deltas[label]) for label in labels] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    out = [line, ""]
    for j, row in enumerate(table):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    if gate is not None and gate.status != "promote":
        out += [""] + [f"  - {reason}" for reason in gate.reasons]
    warnings = (gate.flags if gate is not None else []) + judge_warnings(metrics)
    if warnings:
        out += ["", "warnings:"] + [f"  ! {w}" for w in dict.fromkeys(warnings)]
    return "\n".join(out)


def summary_markdown(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                     gate: GateDecision | None, names: list[str] | None = None) -> str:
    """The same summary in Markdown (the top of the `summary` artifact)."""
    _, line = verdict_line(comparisons, gate)
    rows = headline_rows(metrics, comparisons, names)
    labels = list(comparisons)
    out = [f"**{_md(line)}**", "", "| metric | value | 95% CI | n | " + " | ".join(f"vs {_md(x)}" for x in labels)
           + " |", "|---|---|---|---|" + "---|" * len(labels)]
    for r in rows:
        cells = [_md(r.metric), _value(r), _ci(r.result), _n(r.result)] + [_delta_text(r.deltas[x]) for x in labels]
        out.append("| " + " | ".join(cells) + " |")
    warnings = (gate.flags if gate is not None else []) + judge_warnings(metrics)
    if warnings:
        out += [""] + [f"> ⚠ {_md(w)}" for w in dict.fromkeys(warnings)]
    return "\n".join(out)


def _value(row: HeadlineRow) -> str:
    if row.result is None:
        return "not measured"
    text = fmt_num(row.result.score)
    if row.weighted is not None:
        text += f" (weighted {fmt_num(row.weighted)})"
    if (labelled := labelled_text(row.result)) is not None:
        text += f" ({labelled})"
    return text


def labelled_text(m: MetricResult) -> str | None:
    """The prediction-powered estimate from human labels, shown next to the judge's own score."""
    e = m.labelled
    if e is None:
        return None
    return f"with human labels {fmt_num(e.score)} [{fmt_num(e.ci_low)}, {fmt_num(e.ci_high)}], {e.n_labels} labels"


def _ci(m: MetricResult | None) -> str:
    if m is None or m.ci_low is None or m.ci_high is None:
        return "-"
    return f"[{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}]"


def _n(m: MetricResult | None) -> str:
    if m is None:
        return "-"
    return str(m.n_scored) + (f" ({m.n_failed} failed)" if m.n_failed else "")


def delta_interval(d: Delta) -> str:
    if d.diff is None:
        return ""
    interval = f" [{fmt_signed(d.low)}, {fmt_signed(d.high)}]" if d.low is not None else ""
    return f"{fmt_signed(d.diff)}{interval}" + (" (human labels)" if d.basis == "labelled" else "")


def _delta_text(d: Delta) -> str:
    return f"{delta_interval(d)} {d.verdict}".strip()


def fmt_num(x: float | None) -> str:
    """A figure for tables: 3 decimals, 1 above 100, '-' when missing."""
    if x is None:
        return "-"
    return f"{x:.1f}" if abs(x) >= 100 else f"{x:.3f}"


def fmt_signed(x: float | None) -> str:
    """`fmt_num` with a sign, for differences."""
    return "-" if x is None else (f"{x:+.1f}" if abs(x) >= 100 else f"{x:+.3f}")


def _md(text: str) -> str:
    """Safe in a Markdown table cell: HTML-escaped (names and labels are untrusted), pipes escaped, one line."""
    return html.escape(str(text), quote=False).replace("|", "\\|").replace("\n", " ")
