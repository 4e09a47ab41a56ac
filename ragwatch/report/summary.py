"""What the terminal, the Markdown summary and the HTML report say: the one presentation module.

The one-minute answer first: one verdict line (better or worse than the last run and than
production?), the headline metrics (value, interval, n, delta and verdict vs the previous run and vs
production; one list, `DEFAULT_HEADLINE`), the gate in one wording (`gate_label`), and warnings about
judges that measure nothing or are not checked against people. Then the comparison tables (text,
Markdown, HTML) and the table of every metric `run.py` prints. The HTML report, the Markdown `summary`
artifact and what `run.py` prints all come from here.

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

from ragwatch.decision.compare import Comparison, MetricComparison
from ragwatch.decision.gate import GateDecision
from ragwatch.decision.thresholds import matches, unknown_agreement
from ragwatch.fmt import fmt_num, fmt_signed, md_cell
from ragwatch.report.verdicts import flag_lines, reason_lines, row_note, say
from ragwatch.results import MetricResult

__all__ = ["fmt_num", "fmt_signed"]  # re-exported: the report and older callers format through here

DEFAULT_HEADLINE = ["faithfulness", "similarity", "answer_confidence", "e2e_failure_rate", "system/hit_rate"]


class ReportSettings(BaseModel):
    """What the top of the report shows, and how many items the per-item sections list.

    `headline`: metric names (exact, prefix or glob, as in the gate). `max_items`: per-item sections
    (keyword tests, unsupported statements, failed items) list at most this many; every item stays
    in the `eval_results` artifact.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    headline: list[str] = Field(default_factory=lambda: list(DEFAULT_HEADLINE))
    """Metrics on the report's first screen and the printout (exact, prefix or glob)."""
    max_items: int = Field(200, ge=1)
    """Most items listed per per-item section (all stay in `eval_results`)."""


@dataclass
class Delta:
    """A headline metric against one baseline."""

    diff: float | None
    low: float | None
    high: float | None
    verdict: str
    basis: str = "judge"
    gated: bool = True


@dataclass
class HeadlineRow:
    metric: str
    result: MetricResult | None
    deltas: dict[str, Delta] = field(default_factory=dict)  # baseline label -> delta
    unavailable: str | None = None  # why this system cannot have the metric (no result, not a failure)

    @property
    def weighted(self) -> float | None:
        """The probability-weighted score of a judge, next to its greedy one."""
        value = self.result.details.get("weighted") if self.result is not None else None
        return float(value) if isinstance(value, int | float) else None

    @property
    def beside(self) -> str | None:
        """What is shown next to the value: "agreement unknown" for a judge never measured against labels
        (`agreement_unknown`); the verdict share of a judge whose value is a calibrated level (faithfulness),
        else the probability-weighted score."""
        share = self.result.details.get("verdict_share") if self.result is not None else None
        parts = ["agreement unknown"] if self.result is not None and agreement_unknown(self.result) else []
        if isinstance(share, int | float):
            parts.append(f"verdict share {fmt_num(share)}")
        elif self.weighted is not None:
            parts.append(f"weighted {fmt_num(self.weighted)}")
        return "; ".join(parts) or None


def headline_rows(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                  names: list[str] | None = None, unavailable: Mapping[str, str] | None = None) -> list[HeadlineRow]:
    """One row per headline name: the first metric it matches (exact names first), or an empty row
    (with the reason when the metric is `unavailable` for this system)."""
    rows = []
    unavailable = unavailable or {}
    for pattern in names if names is not None else DEFAULT_HEADLINE:
        name = pattern if pattern in metrics else next((m for m in metrics if matches(m, pattern)), pattern)
        if name not in metrics:
            name = pattern if pattern in unavailable else next((m for m in unavailable if matches(m, pattern)), name)
        row = HeadlineRow(metric=name, result=metrics.get(name),
                          unavailable=unavailable.get(name) if name not in metrics else None)
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
    return Delta(diff, low, high, r.verdict, r.basis, r.gated)


# How the verdict line names a row's verdict; the words are the table's, so the two read alike.
_NAMED = {"not_comparable": "not comparable", "removed": "missing from this run"}


def _names(rows: list[MetricComparison]) -> str:
    return ", ".join(r.metric for r in rows)


def comparison_verdict(cmp: Comparison, label: str) -> tuple[str, str]:
    """("worse" | "undecided" | "better" | "same" | "none", sentence) for one baseline.

    Written only from the rows' verdicts (`ragwatch.decision.compare.decide_verdict`, and the gate's
    `settle`: a verdict human labels decided, "needs_labels"), never from their deltas: a metric is named
    as regressed or improved exactly when its row says so, and the gated rows decide better or worse;
    a row shown but not gated (a judge below the agreement bar or of unknown agreement) that regressed or
    improved is named as such, "not gated". Rows that are neither (a judge scored by another model: not
    comparable; a gated metric missing from this run) are named with their own verdict."""
    if not cmp.has_baseline:
        return "none", f"No {label} to compare with."
    gated = [r for r in cmp.rows if r.gated]
    regressed = [r for r in gated if r.verdict == "regressed"]
    improved = [r for r in gated if r.verdict == "improved"]
    needs = [r for r in gated if r.verdict == "needs_labels"]
    undecided = [r for r in gated if r.verdict == "inconclusive"]
    attention = [r for r in cmp.rows if r.verdict == "not_comparable"] + [r for r in gated if r.verdict == "removed"]
    also = f" (improved: {_names(improved)})." if improved else "."
    if regressed:
        kind, sentence = "worse", f"Worse than {label}: {_names(regressed)} regressed" + also
        if needs:
            sentence += f" Needs labels: {_names(needs)}."
    elif needs:
        kind, sentence = "undecided", (f"Undecided vs {label}: {_names(needs)} need labels (the judge sees a drop "
                                       "it cannot size)" + also)
    elif improved:
        kind, sentence = "better", f"Better than {label}: {_names(improved)} improved, nothing gated regressed."
    elif undecided:
        kind, sentence = "same", f"No clear change vs {label} ({_names(undecided)} undecided: too few items?)."
    elif attention:
        kind, sentence = "same", f"No gated metric changed vs {label} among those both runs could compare."
    else:
        kind, sentence = "same", f"Same as {label}: no gated metric changed beyond its allowed drop."
    for verdict in ("regressed", "improved"):
        shown = [r for r in cmp.rows if not r.gated and r.verdict == verdict]
        if shown:
            sentence += f" Not gated: {_names(shown)} {verdict}."
    groups: dict[tuple[str, str], list[MetricComparison]] = {}
    for r in attention:
        groups.setdefault((r.verdict, row_note(r)), []).append(r)
    for (verdict, note), rows in groups.items():
        sentence += f" {_NAMED[verdict].capitalize()}: {_names(rows)}" + (f" ({note})." if note else ".")
    return kind, sentence


def verdict_line(comparisons: Mapping[str, Comparison], gate: GateDecision | None) -> tuple[str, str]:
    """(css class "bad" | "hold" | "ok" | "none", one line answering "better or worse?").

    A run that could not be evaluated (gate status "not_evaluated": the system unreachable, the budget
    reached, ...) is compared with nothing: its figures measure the failure, not the system. The gated
    metrics the gate decided without (`GateDecision.unmeasured`, each explained in the warnings) are
    named before the gate."""
    if gate is not None and gate.status == "not_evaluated":
        return "hold", f"Could not evaluate this run: nothing is compared. Gate: {gate_label(gate)}."
    if gate is not None and gate.status == "not_applied":
        return "none", f"Too few items to decide anything: nothing is compared. Gate: {gate_label(gate)}."
    parts, kinds = [], []
    for label, cmp in comparisons.items():
        kind, sentence = comparison_verdict(cmp, label)
        parts.append(sentence)
        kinds.append(kind)
    if not comparisons:
        parts.append("First evaluation: nothing to compare with.")
    if gate is not None and gate.unmeasured:
        parts.append(f"Not measured by this config, not gated: {', '.join(gate.unmeasured)} (see warnings).")
    if gate is not None:
        parts.append("Gate: " + gate_label(gate) + ".")
    if (gate is not None and gate.status == "regressed") or "worse" in kinds:
        cls = "bad"
    elif (gate is not None and gate.status in ("hold", "needs_labels")) or "undecided" in kinds:
        cls = "hold"
    elif "better" in kinds or "same" in kinds:
        cls = "ok"
    else:
        cls = "none"
    return cls, " ".join(parts)


_GATE_WORDS = {"promote": "PROMOTED", "no_baseline": "PROMOTED (first production baseline)",
               "regressed": "NOT PROMOTED (regression)", "hold": "NOT PROMOTED (held: too little evidence)",
               "needs_labels": "NOT PROMOTED (needs labels: the judge sees a drop it cannot decide)",
               "promotion_off": "not promoted (promote: false)"}


def gate_label(gate: GateDecision) -> str:
    """The gate's decision in words: the same on the terminal, in Markdown and in HTML. "not_evaluated"
    names its cause (the decision's first reason), never "regression"; "not_applied" says why the gate
    did not decide (a --quick look), never "promoted"; "promotion_off" says the gate passed and
    `evaluate.promote: false` promoted nothing."""
    if gate.status in ("not_evaluated", "not_applied"):
        words = gate.status.replace("_", " ").upper()
        return f"{words} ({say(gate.reasons[0])})" if gate.reasons else words
    return _GATE_WORDS[gate.status]


def scale_text(m: MetricResult | None) -> str:
    """A metric's scale as the headline shows it, from its `MetricInfo` (never its name): "1-5", "0-1",
    "0/1" for pass/fail items, "unbounded"; ", lower is better" when a fall is the improvement."""
    if m is None:
        return "-"
    info = m.info
    if info.scale is None:
        text = "unbounded"
    else:
        low, high = (f"{v:g}" for v in info.scale)
        text = f"{low}/{high}" if info.binary else f"{low}-{high}"
    return text + ("" if info.higher_is_better else ", lower is better")


def judge_warnings(metrics: Mapping[str, MetricResult]) -> list[str]:
    """Judges to distrust: constant over the run, not checked against human labels, or off from them."""
    warnings = []
    for name, m in metrics.items():
        if not m.info.is_judge:
            continue
        value = m.constant_value()
        if value is not None:
            warnings.append(f"{name}: every one of {m.n_scored} items got {value:g}; the judge measures nothing "
                            "here and does not gate.")
        if m.labelled is None and m.info.agreement is not None:
            warnings.append(f"{name}: no labelled items in this run; its judge (this model and prompt) was measured "
                            f"at {m.info.agreement.describe()}.")
        elif m.labelled is None:
            measured = m.details.get("judge_measured")
            elsewhere = f" Its judge model was measured {measured}." if measured else ""
            warnings.append(f"{name}: agreement with labels of the kind it scores is unknown (no labelled items, "
                            f"no calibration for this judge model and prompt): treat its score as the judge's "
                            f"opinion, not a measurement.{elsewhere}")
        elif m.score is not None and not m.labelled.ci_low <= m.score <= m.labelled.ci_high:
            warnings.append(f"{name}: the judge says {m.score:.3f}, human labels say {m.labelled.score:.3f} "
                            f"[{m.labelled.ci_low:.3f}, {m.labelled.ci_high:.3f}] ({m.labelled.n_labels} labels): "
                            "poor agreement; the gate uses the labelled estimate.")
    return warnings


def unavailable_lines(unavailable: Mapping[str, str] | None) -> list[str]:
    """The metrics this system cannot have, one line per reason:
    "answer_confidence, perplexity: not available for this system (it returns no token logprobs)"."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in sorted((unavailable or {}).items()):
        by_reason.setdefault(reason, []).append(name)
    return [f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()]


def judge_models(metrics: Mapping[str, MetricResult]) -> str:
    """The models behind the run's judged metrics, each with the metrics it scored ("-" when none)."""
    scored: dict[str, list[str]] = {}
    for name, m in metrics.items():
        if m.info.is_judge and m.info.judge_model:
            scored.setdefault(m.info.judge_model, []).append(name)
    return "; ".join(f"{model} ({', '.join(names)})" for model, names in scored.items()) or "-"


def summary_text(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                 gate: GateDecision | None, names: list[str] | None = None,
                 unavailable: Mapping[str, str] | None = None) -> str:
    """The summary as plain text for a terminal: verdict line, headline table, gate reasons, warnings,
    the metrics not available for this system."""
    _, line = verdict_line(comparisons, gate)
    rows = headline_rows(metrics, comparisons, names, unavailable)
    labels = list(comparisons)
    head = ["metric", "scale", "value", "95% CI", "n"] + [f"vs {label}" for label in labels]
    table = [head] + [[r.metric, scale_text(r.result), _value(r), _ci(r.result), _n(r.result)]
                      + [_delta_text(r.deltas[label]) for label in labels] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    out = [line, ""]
    for j, row in enumerate(table):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    if gate is not None and gate.status not in ("promote", "not_applied"):  # not_applied: its label says why
        out += [""] + [f"  - {reason}" for reason in reason_lines(gate)]
    warnings = (flag_lines(gate) if gate is not None else []) + judge_warnings(metrics)
    if warnings:
        out += ["", "warnings:"] + [f"  ! {w}" for w in dict.fromkeys(warnings)]
    if lines := unavailable_lines(unavailable):
        out += ["", "not available:"] + [f"  - {x}" for x in lines]
    return "\n".join(out)


def summary_markdown(metrics: Mapping[str, MetricResult], comparisons: Mapping[str, Comparison],
                     gate: GateDecision | None, names: list[str] | None = None,
                     unavailable: Mapping[str, str] | None = None) -> str:
    """The same summary in Markdown (the top of the `summary` artifact)."""
    _, line = verdict_line(comparisons, gate)
    rows = headline_rows(metrics, comparisons, names, unavailable)
    labels = list(comparisons)
    out = [f"**{md_cell(line)}**", "",
           "| metric | scale | value | 95% CI | n | " + " | ".join(f"vs {md_cell(x)}" for x in labels) + " |",
           "|---|---|---|---|---|" + "---|" * len(labels)]
    for r in rows:
        cells = [md_cell(r.metric), scale_text(r.result), _value(r), _ci(r.result), _n(r.result)]
        cells += [_delta_text(r.deltas[x]) for x in labels]
        out.append("| " + " | ".join(cells) + " |")
    warnings = (flag_lines(gate) if gate is not None else []) + judge_warnings(metrics)
    if warnings:
        out += [""] + [f"> ⚠ {md_cell(w)}" for w in dict.fromkeys(warnings)]
    if lines := unavailable_lines(unavailable):
        out += [""] + [f"- {md_cell(x)}" for x in lines]
    return "\n".join(out)


def _value(row: HeadlineRow) -> str:
    if row.result is None:
        return "not available" if row.unavailable else "not measured"
    text = fmt_num(row.result.score)
    if row.beside is not None:
        text += f" ({row.beside})"
    if (labelled := labelled_text(row.result)) is not None:
        text += f" ({labelled})"
    return text


def agreement_unknown(m: MetricResult) -> bool:
    """A prompted judge never measured against labels of its kind, and no human labels in this run: its
    figure is the judge's opinion (by default it does not gate: `GateThresholds.judge_standing`)."""
    return unknown_agreement(m.info) and m.labelled is None


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


def verdict_text(d: Delta) -> str:
    """A headline delta's verdict as the tables write it: "(not gated)" after a row that does not gate."""
    return d.verdict + ("" if d.gated or d.verdict in ("no baseline", "-") else " (not gated)")


def _delta_text(d: Delta) -> str:
    return f"{delta_interval(d)} {verdict_text(d)}".strip()


# ---------------------------------------------------------------- comparison tables

VERDICT_COLOURS = {
    "regressed": "#c62828",
    "improved": "#2e7d32",
    "unchanged": "#546e7a",
    "inconclusive": "#9e9e9e",
    "constant": "#ef6c00",
    "not_comparable": "#6a1b9a",
    "added": "#1565c0",
    "removed": "#1565c0",
    "not_available": "#78909c",
    "needs_labels": "#f9a825",
}

_HEADER = ("metric", "old", "new", "diff", "95% CI of diff", "n paired", "better", "allowed drop", "verdict")


def _cells(r: MetricComparison) -> list[str]:
    interval = f"[{fmt_signed(r.diff_low)}, {fmt_signed(r.diff_high)}]" if r.diff_low is not None else "-"
    if r.basis == "labelled":
        interval += (f"; labelled {fmt_signed(r.labelled_diff)} "
                     f"[{fmt_signed(r.labelled_low)}, {fmt_signed(r.labelled_high)}]")
    direction = "higher" if r.higher_is_better else "lower"
    return [
        r.metric, fmt_num(r.old_score), fmt_num(r.new_score), fmt_signed(r.diff), interval,
        {"paired": f"{r.n_paired}", "unpaired": f"{r.n_new}/{r.n_old} unpaired",
         "exact": f"{r.n_paired} cases"}.get(r.method or "", "-"),
        direction, fmt_num(r.allowed_drop), r.verdict + _gating(r),
    ]


def _gating(r: MetricComparison) -> str:
    """How the verdict cell says a row does not gate (and, for a judge of unknown agreement, why)."""
    if r.gated:
        return ""
    return " (not gated: agreement unknown)" if r.standing is not None and r.standing.kind == "unknown" else (
        " (not gated)")


def _title(cmp: Comparison) -> str:
    return f"{cmp.new_label} vs {cmp.old_label}"


def comparison_markdown(cmp: Comparison) -> str:
    """A comparison as a Markdown table (regressions and improvements in bold)."""
    lines = [f"**{md_cell(_title(cmp))}**", ""]
    if not cmp.has_baseline:
        return "\n".join([*lines, f"No {md_cell(cmp.old_label)} baseline to compare with."])
    lines.append("| " + " | ".join(_HEADER) + " |")
    lines.append("|" + "---|" * len(_HEADER))
    for r in cmp.rows:
        cells = [md_cell(c) for c in _cells(r)]
        if r.verdict in ("regressed", "improved"):
            cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def comparison_text(cmp: Comparison) -> str:
    """A comparison as a plain terminal table (no colour codes, so it reads the same in CI logs)."""
    if not cmp.has_baseline:
        return f"{_title(cmp)}: no {cmp.old_label} baseline to compare with."
    table = [list(_HEADER)] + [_cells(r) for r in cmp.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(_HEADER))]
    numeric = {1, 2, 3, 5, 7}
    out = [_title(cmp)]
    for j, row in enumerate(table):
        cells = [c.rjust(w) if i in numeric and j else c.ljust(w) for i, (c, w) in
                 enumerate(zip(row, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    counts = ", ".join(f"{v} {k}" for k, v in sorted(cmp.counts().items()))
    out.append(f"({counts})")
    out += not_available_lines(cmp)
    return "\n".join(out)


def not_available_lines(cmp: Comparison) -> list[str]:
    """Why a metric is in one run only because the other's system cannot have it, one line per reason:
    "answer_confidence, perplexity in this run: not available for this system (it returns no token
    logprobs)". The terminal table shows no notes; this one must not read as a removed metric."""
    by_note: dict[str, list[str]] = {}
    for r in cmp.rows:
        if r.verdict == "not_available":
            by_note.setdefault(row_note(r), []).append(r.metric)
    return [f"{', '.join(names)} {note}" for note, names in by_note.items()]


def comparison_html(cmp: Comparison, *, heading: bool = True) -> str:
    """A comparison as an HTML fragment: a table with coloured verdicts; `heading=False` leaves out its
    own title (a report names the comparison itself). The standalone page is
    `ragwatch.report.build_comparison_page`."""
    title = html.escape(_title(cmp))
    if not cmp.has_baseline:
        body = f"<p>No {html.escape(cmp.old_label)} baseline to compare with.</p>"
    else:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEADER)
        rows = []
        for r in cmp.rows:
            cells = _cells(r)
            tds = "".join(f'<td class="num">{html.escape(c)}</td>' if i in (1, 2, 3, 4, 5, 7)
                          else f"<td>{html.escape(c)}</td>" for i, c in enumerate(cells[:-1]))
            colour = VERDICT_COLOURS[r.verdict]
            note = f' title="{html.escape(row_note(r))}"' if row_note(r) else ""
            tds += (f'<td><span class="verdict" style="background:{colour}"{note}>'
                    f"{html.escape(cells[-1])}</span></td>")
            rows.append(f"<tr>{tds}</tr>")
        notes = [f"<li><b>{html.escape(r.metric)}</b>: {html.escape(note)}</li>" for r in cmp.rows
                 if (note := row_note(r))]
        body = (f'<table class="cmp"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
                f"</table>" + (f'<ul class="notes">{"".join(notes)}</ul>' if notes else ""))
    return f'<section class="comparison">{f"<h3>{title}</h3>" if heading else ""}{body}</section>'


# ---------------------------------------------------------------- every metric, for the terminal


def metrics_text(metrics: Mapping[str, MetricResult], unavailable: Mapping[str, str] | None = None) -> str:
    """Every metric of a run with its interval, n, failures and interval method (what run.py prints
    below the headline), the metrics not available for this system, then the prediction-powered
    estimates where human labels exist."""
    lines = [f"{'metric':<34} {'score':>7}  {'95% interval':<17} {'n':>4} {'failed':>6}  interval method"]
    for name, result in sorted(metrics.items()):
        score = "-" if result.score is None else f"{result.score:.3f}"
        interval = "" if result.ci_low is None else f"[{result.ci_low:.3f}, {result.ci_high:.3f}]"
        # items the metric does not apply to (`ItemScore.skipped`, e.g. "no reference answer"): said, not failed
        skipped = next((f"{result.n_skipped} skipped: {it.error}" for it in result.items if it.skipped), "")
        lines.append(f"{name:<34} {score:>7}  {interval:<17} {result.n_scored:>4} {result.n_failed:>6}  "
                     + "; ".join(filter(None, (result.ci_method, skipped))))
    lines += unavailable_lines(unavailable)
    labelled = {name: r.labelled for name, r in sorted(metrics.items()) if r.labelled}
    if labelled:  # human labels on some items: the prediction-powered estimate beside the judge's
        lines += ["", "with human labels (PPI++: the judge on every item, corrected by the labelled ones):"]
        lines += [f"{name:<34} {e.score:>7.3f}  [{e.ci_low:.3f}, {e.ci_high:.3f}] {e.n_labels:>4} labels "
                  f"of {e.n_items} items" for name, e in labelled.items()]
    return "\n".join(lines)
