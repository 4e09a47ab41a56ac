"""The report in a real browser: headless Chromium shows the verdict and the headline table on the
first screen (1280x800), and the screenshot is kept as reports/report_first_screen.png.

The layout check runs in a copy of the page with one small script that writes the on-screen boxes of
the verdict line and the headline table into the DOM; `--dump-dom` returns the DOM after it ran.
The report itself carries no script. Skipped, with the reason, when Chromium is not installed
(`apt-get install -y --no-install-recommends chromium`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ragwatch.checks.e2e import E2ETables, run_e2e_tests
from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import gate_decision
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.page import build_html_report
from ragwatch.report.summary import DEFAULT_HEADLINE, ReportSettings
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.types import RagAnswer

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--window-size=1280,800"]
SCREEN_HEIGHT = 800

pytestmark = [
    pytest.mark.slow,  # two Chromium starts: about 45 s on the shared 2-core machine
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: apt-get install -y "
                       "--no-install-recommends chromium"),
]

MEASURE = """<script>
const box = id => { const r = document.getElementById(id).getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
const out = document.createElement('pre'); out.id = 'layout';
out.textContent = JSON.stringify({verdict: box('verdict'), headline: box('headline'),
  width: window.innerWidth, height: window.innerHeight,
  missing_span: document.querySelector('#headline td[colspan]').colSpan});
document.body.appendChild(out);
</script>"""


def run_metrics(seed: int, shift: float = 0.0) -> dict[str, MetricResult]:
    """A realistic run: the default headline metrics plus retrieval at k, 60 questions."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:02d}" for i in range(60)]
    judge = MetricInfo(scale=(1.0, 5.0), prompt_version="v2", family="judge")

    def metric(name: str, values, info: MetricInfo | None = None, **details) -> MetricResult:
        items = [ItemScore(item_id=i, score=float(v)) for i, v in zip(ids, values, strict=True)]
        return MetricResult.from_items(name, items, info=info, details=details)

    metrics = {
        "correctness": metric("correctness", np.clip(rng.integers(2, 6, 60) - (shift > 0), 1, 5), judge,
                              weighted=3.4),
        "faithfulness": metric("faithfulness", np.clip(rng.beta(4, 2, 60) - shift, 0, 1),
                               MetricInfo(prompt_version="v3", family="judge"), weighted=0.71),
        "answer_relevance": metric("answer_relevance", rng.uniform(0.5, 1, 60),
                                   MetricInfo(prompt_version="v1", family="judge")),
        "system/hit_rate": metric("system/hit_rate", rng.uniform(0, 1, 60) < 0.8 - shift,
                                  MetricInfo(binary=True, family="system", measure="hit_rate", k=5)),
    }
    for k in (1, 3, 5, 10):
        metrics[f"hybrid/hit_rate@{k}"] = metric(
            f"hybrid/hit_rate@{k}", rng.uniform(0, 1, 60) < 0.5 + k / 25,
            MetricInfo(family="retrieval", measure="hit_rate", k=k, mode="hybrid", binary=True))
    tables = E2ETables.model_validate({"bad_answers": [{"question": f"question {i}?", "bad_words": ["Flyte"]}
                                                       for i in range(6)]})
    answers = ["Flyte." if i < 2 + (shift > 0) else "The local orchestrator." for i in range(6)]
    report = run_e2e_tests(tables, lambda qs: [RagAnswer(question=q, answer=a) for q, a in zip(qs, answers,
                                                                                                 strict=True)])
    metrics["e2e_failure_rate"] = report.metrics["e2e_failure_rate"]
    return metrics


def chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, *FLAGS, *args], capture_output=True, text=True, timeout=timeout, check=False)


def test_verdict_and_headline_are_on_the_first_screen(tmp_path: Path) -> None:
    new, previous, production = run_metrics(0, shift=0.15), run_metrics(0, shift=0.15), run_metrics(1)
    gate = GateThresholds(default_allowed_drop=0.02, gated_metrics=["system/hit_rate", "faithfulness"])
    cmp_prod = compare_runs(new, production, thresholds=gate, old_label="production")
    page = build_html_report(
        "ragwatch evaluation: full-2026_11_22", new, None, gate=gate_decision(cmp_prod, gate),
        comparisons={"previous run": compare_runs(new, previous, thresholds=gate), "production": cmp_prod},
        settings=ReportSettings(headline=[*DEFAULT_HEADLINE, "context_relevance"]),  # one not measured
    )
    report = tmp_path / "report.html"
    report.write_text(page, encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")

    dom = chromium("--dump-dom", probe.as_uri())
    match = re.search(r'<pre id="layout">(.*?)</pre>', dom.stdout)
    assert match, f"no layout in the dumped DOM (exit {dom.returncode}): {dom.stderr[-1500:]}"
    layout = json.loads(match.group(1).replace("&quot;", '"'))
    # a row of a metric the run lacks spans value, interval and n: the table keeps its columns
    assert layout["missing_span"] == 3, layout
    assert layout["width"] == 1280, layout
    for element in ("verdict", "headline"):
        box = layout[element]
        assert 0 <= box["top"] < box["bottom"] <= SCREEN_HEIGHT, (element, layout)
        assert box["right"] <= layout["width"], (element, layout)  # no horizontal scrolling to read it

    screenshot = ROOT / "reports" / "report_first_screen.png"
    screenshot.parent.mkdir(exist_ok=True)
    shot = chromium(f"--screenshot={screenshot}", report.as_uri())
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000, shot.stderr[-1500:]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
