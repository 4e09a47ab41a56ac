"""What every page of the report shares: the stylesheet and the helpers that write text safely.

Every piece of text is HTML-escaped (`esc`): answers, documents and even judge reasons are untrusted.
"""

from __future__ import annotations

import html
from typing import Any

from ragwatch.fmt import fmt_num, md_cell
from ragwatch.results import MetricResult


def weighted_score(m: MetricResult) -> float | None:
    value = m.details.get("weighted")
    return float(value) if isinstance(value, int | float) else None


def ci_text(m: MetricResult) -> str:
    return "-" if m.ci_low is None or m.ci_high is None else f"[{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}]"


def short(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def esc(text: Any) -> str:
    """HTML-escaped text, quotes too (safe in attributes)."""
    return html.escape(str(text), quote=True)


def md_text(text: str) -> str:
    """Safe inside a Markdown table cell, a bullet or a code span (no backticks)."""
    return md_cell(text).replace("`", "'")


CSS = """
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
table.headline span.hint{display:block;white-space:normal}
table.headline .verdict{white-space:normal;display:inline-block}
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
