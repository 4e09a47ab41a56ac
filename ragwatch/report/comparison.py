"""`comparison.html`: two runs compared, on a page styled like the run report."""

from __future__ import annotations

from collections.abc import Mapping

from ragwatch.decision.compare import Comparison
from ragwatch.decision.gate import GateDecision
from ragwatch.report.style import CSS, esc
from ragwatch.report.summary import VERDICT_COLOURS, comparison_html, verdict_line


def build_comparison_page(comparisons: Mapping[str, Comparison], *, title: str = "ragwatch comparison",
                          gate: GateDecision | None = None) -> str:
    """`comparison.html`: styled like the run report, the one-line overall verdict first, then one
    table per comparison (metrics that need attention first)."""
    cls, line = verdict_line(comparisons, gate)
    tables = "".join(f"<h2>vs {esc(label)}</h2>" + comparison_html(cmp, heading=False)
                     for label, cmp in comparisons.items())
    legend = " ".join(f'<span class="verdict" style="background:{c}">{esc(v)}</span>'
                      for v, c in VERDICT_COLOURS.items())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        f'<body><h1>{esc(title)}</h1><div id="verdict" class="verdict-line {cls}">{esc(line)}</div>{tables}'
        f'<p class="hint">diff = new − old with a 95% interval (paired by item where items pair). {legend}</p>'
        "</body></html>\n"
    )
