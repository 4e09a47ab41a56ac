"""Evaluation reports: the HTML page of a run (with plots), its Markdown summary, the comparison page.

Example:
    >>> page = build_html_report("nightly eval", metrics, items_frame,
    ...                          comparisons={"previous run": cmp_prev, "production": cmp_prod},
    ...                          agreement=None, run_info={"config_fingerprint": "ab12...", "models": {...}})
    >>> Path("report.html").write_text(page)
    >>> print(build_markdown_summary("nightly eval", metrics, gate=decision))
"""

from ragwatch.report.comparison import build_comparison_page
from ragwatch.report.markdown import build_markdown_summary
from ragwatch.report.page import build_html_report

__all__ = ["build_comparison_page", "build_html_report", "build_markdown_summary"]
