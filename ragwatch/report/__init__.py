"""Presentation: the gate's findings in words (`verdicts`), what the terminal, Markdown and HTML say
(`summary`), the HTML page of a run with its plots (`page`, `plots`), its Markdown summary (`markdown`),
the comparison page (`comparison`).

The package imports nothing itself, so the text-only `summary` never pulls in pandas or matplotlib.

Example:
    >>> from ragwatch.report.page import build_html_report
    >>> page = build_html_report("nightly eval", metrics, items_frame,
    ...                          comparisons={"previous run": cmp_prev, "production": cmp_prod},
    ...                          agreement=None, run_info={"config_fingerprint": "ab12...", "models": {...}})
    >>> Path("report.html").write_text(page)
    >>> print(build_markdown_summary("nightly eval", metrics, gate=decision))
"""
