"""How figures and untrusted text are written in tables: one rule for the terminal, Markdown and HTML.

Example:
    >>> fmt_num(0.81234), fmt_signed(-0.02), fmt_num(None), md_cell("a|b")
    ('0.812', '-0.020', '-', 'a\\\\|b')
"""

from __future__ import annotations

import html


def fmt_num(x: float | None) -> str:
    """A figure for tables: 3 decimals, 1 above 100, '-' when missing."""
    if x is None:
        return "-"
    return f"{x:.1f}" if abs(x) >= 100 else f"{x:.3f}"


def fmt_signed(x: float | None) -> str:
    """`fmt_num` with a sign, for differences."""
    return "-" if x is None else (f"{x:+.1f}" if abs(x) >= 100 else f"{x:+.3f}")


def md_cell(text: object) -> str:
    """Safe in a Markdown table cell or bullet: HTML-escaped (names and labels are untrusted), pipes
    escaped, one line."""
    return html.escape(str(text), quote=False).replace("|", "\\|").replace("\n", " ")
