"""The HTML report and the Markdown summary: structure, plots, escaping, optional parts."""

from __future__ import annotations

import base64
import re
import time

import numpy as np
import pandas as pd
import pytest

from ragwatch.decision.compare import compare_runs
from ragwatch.decision.gate import GateDecision, gate_decision
from ragwatch.decision.thresholds import GateThresholds
from ragwatch.report.markdown import build_markdown_summary
from ragwatch.report.page import build_html_report
from ragwatch.report.summary import ReportSettings
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.statements import StatementVerdict

LOWER = MetricInfo(direction="lower", scale=None)

EVIL = "<script>alert('pwned')</script>"


def run(n: int = 30, seed: int = 0, shift: float = 0.0) -> tuple[dict[str, MetricResult], pd.DataFrame]:
    """A run with retrieval at k in two modes, judges (one with failures), perplexity, e2e."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:03d}" for i in range(n)]
    metrics: dict[str, MetricResult] = {}
    first = {mode: rng.geometric(0.4, n) for mode in ("vector", "bm25")}
    for mode, ranks in first.items():
        for k in (1, 3, 5):
            name = f"{mode}/hit_rate@{k}"
            metrics[name] = MetricResult.from_items(
                name, [ItemScore(item_id=i, score=float(r <= k)) for i, r in zip(ids, ranks, strict=True)],
                info=MetricInfo(family="retrieval", measure="hit_rate", k=k, mode=mode, binary=True))
    faith = np.clip(rng.beta(5, 2, n) + shift, 0, 1)
    faith[7] = 0.0  # q007 is clearly the worst answer
    metrics["faithfulness"] = MetricResult.from_items("faithfulness", [
        ItemScore(item_id=i, score=float(s), details={"reason": f"reason for {i}"})
        for i, s in zip(ids, faith, strict=True)], info=MetricInfo(family="judge"))
    relevance = [ItemScore(item_id=i, error=f"judge reply unparsable: {EVIL}") if j % 10 == 9
                 else ItemScore(item_id=i, score=float(rng.integers(2, 6))) for j, i in enumerate(ids)]
    relevance[7] = ItemScore(item_id="q007", score=1.0)
    metrics["answer_relevance"] = MetricResult.from_items("answer_relevance", relevance,
                                                          info=MetricInfo(family="judge", scale=(1.0, 5.0)))
    perplexity = rng.lognormal(2, 0.2, n)
    perplexity[7] = 60.0
    metrics["perplexity"] = MetricResult.from_items(
        "perplexity", [ItemScore(item_id=i, score=float(p)) for i, p in zip(ids, perplexity, strict=True)],
        info=LOWER)
    metrics["e2e_failure_rate"] = MetricResult.from_items(
        "e2e_failure_rate", [ItemScore(item_id=f"t{j}", score=float(j % 4 == 0)) for j in range(8)],
        info=MetricInfo(direction="lower", binary=True, family="e2e"))
    rows = []
    for j, i in enumerate(ids):
        row = {"item_id": i, "question": f"question {j}?", "answer": f"answer {j}",
               "contexts": [f"context A of {i}", f"context B of {i}"], "reference_answer": f"reference {j}"}
        for name in ("faithfulness", "answer_relevance", "perplexity"):
            item = metrics[name].items[j]
            row[name] = item.score
            row[f"{name}__reason"] = item.details.get("reason")
            row[f"{name}__error"] = item.error
        rows.append(row)
    items = pd.DataFrame(rows)
    items.loc[7, "answer"] = f"Sure! {EVIL} <img src=x onerror=alert(1)>"
    items.at[7, "contexts"] = [f"doc says {EVIL}", "plain context"]
    return metrics, items


@pytest.fixture(scope="module")
def full_report() -> str:
    new, items = run()
    old, _ = run(seed=1, shift=0.3)
    th = GateThresholds(default_allowed_drop=0.01)
    cmp_prod = compare_runs(new, old, thresholds=th, new_label="this run", old_label="production")
    agreement = pd.DataFrame({"judge": ["faithfulness", f"x{EVIL}"], "kappa": [0.41, float("nan")],
                              "n": [30, 30]})
    return build_html_report(
        f"nightly {EVIL}", new, items,
        comparisons={"previous run": compare_runs(new, new, old_label="previous run"),
                     "production": cmp_prod},
        agreement=agreement, gate=gate_decision(cmp_prod, th),
        run_info={"config_fingerprint": "abc123", "models": {"judge": "local/qwen", "note": EVIL},
                  "eval_set_version": "v3"},
    )


def images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)]


def test_report_has_every_section(full_report):
    for heading in ("All metrics", "Metrics with 95% intervals", "Hit rate and recall at k",
                    "Score distributions per judge", "Judge agreement", "Comparisons", "Worst items",
                    "Failed items (3)", "Run info"):
        assert f"<h2>{heading}</h2>" in full_report, heading
    assert "vs production" in full_report and "vs previous run" in full_report
    assert "Gate: NOT PROMOTED (regression)" in full_report and "faithfulness regressed" in full_report
    assert "abc123" in full_report and "eval_set_version" in full_report


def test_report_reads_top_down_as_a_lead_would(full_report):
    # verdict, headline, comparison, plots, the items that failed or regressed; every metric last
    order = ['id="verdict"', 'id="headline"', "<h2>Comparisons</h2>", "<h2>Metrics with 95% intervals</h2>",
             "<h2>Hit rate and recall at k</h2>", "<h2>Unsupported statements", "<h2>Worst items</h2>",
             "<h2>Failed items", "<h2>Judge agreement</h2>", "<h2>All metrics</h2>",
             '<table class="retrieval-matrix"', "<h2>Run info</h2>"]
    positions = [full_report.index(marker) for marker in order]
    as_found = [m for _, m in sorted(zip(positions, order, strict=True))]
    assert positions == sorted(positions), as_found


def _matrix(page: str, mode: str) -> str:
    return re.search(rf'<table class="retrieval-matrix" data-mode="{mode}">.*?</table>', page).group(0)


def test_retrieval_metrics_read_as_one_matrix_per_mode(full_report):
    new, _ = run()
    every_metric = full_report.split("<h2>All metrics</h2>")[1]
    assert "<td>vector/hit_rate@1</td>" not in every_metric  # not one row per mode, k and measure
    assert every_metric.count('class="retrieval-matrix"') == 2
    for mode in ("vector", "bm25"):
        table = _matrix(every_metric, mode)
        assert re.findall(r"<th>(@\d+)</th>", table) == ["@1", "@3", "@5"]
        row = re.search(r"<tr><th>hit_rate</th>(.*?)</tr>", table).group(1)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        assert len(cells) == 3
        for k, cell in zip((1, 3, 5), cells, strict=True):
            m = new[f"{mode}/hit_rate@{k}"]
            assert f"{m.score:.3f}" in cell and f"[{m.ci_low:.3f}, {m.ci_high:.3f}]" in cell, (mode, k, cell)
        assert f"n = {new[f'{mode}/hit_rate@1'].n_scored} questions" in table


def test_a_metric_not_available_for_the_system_is_said_so_not_measured_or_failed():
    metrics, items = run()
    metrics = {k: v for k, v in metrics.items() if k != "perplexity"}
    reason = "not available for this system (it returns no token logprobs)"
    page = build_html_report("t", metrics, items, settings=ReportSettings(headline=["answer_confidence",
                                                                                    "missing_metric"]),
                             unavailable={"answer_confidence": reason, "perplexity": reason})
    headline = re.search(r'<table id="headline".*?</table>', page).group(0)
    row = re.search(r"<tr><td><b>answer_confidence</b></td>.*?</tr>", headline).group(0)
    assert "not available for this system" in row and "not measured" not in row
    assert "not measured in this run" in re.search(r"<tr><td><b>missing_metric</b></td>.*?</tr>", headline).group(0)
    listed = re.search(r'<ul id="unavailable".*?</ul>', page).group(0)
    assert f"answer_confidence, perplexity: {reason}" in listed
    assert "perplexity" not in page.split("<h2>Failed items")[1].split("</table>")[0]


def test_report_contains_the_plots_as_inline_png(full_report):
    pngs = images(full_report)
    assert len(pngs) == 3  # intervals, hit rate at k, judge histograms
    assert all(p.startswith(b"\x89PNG\r\n\x1a\n") and len(p) > 2000 for p in pngs)


def test_report_is_self_contained(full_report):
    assert "<script" not in full_report.lower()
    assert not re.search(r'(src|href)="(?!data:)', full_report)
    assert "http://" not in full_report and "https://" not in full_report


def test_untrusted_text_is_escaped(full_report):
    assert EVIL not in full_report
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in full_report
    assert "<img src=x" not in full_report and "&lt;img src=x onerror=alert(1)&gt;" in full_report
    assert full_report.count("&lt;script&gt;") >= 6  # title, answer, context, reason, agreement, run info


def test_headline_table_shows_scores_intervals_and_counts(full_report):
    new, _ = run()
    m = new["answer_relevance"]
    every_metric = full_report.split("<h2>All metrics</h2>")[1]
    row = re.search(r"<tr><td>answer_relevance</td><td>judge.*?</tr>", every_metric).group(0)
    assert f"{m.score:.3f}" in row and f"[{m.ci_low:.3f}, {m.ci_high:.3f}]" in row
    assert f">{m.n_scored}<" in row and f">{m.n_failed}<" in row and m.n_failed == 3


def test_worst_items_rank_the_worst_first_with_contexts_collapsed(full_report):
    worst = full_report.split("<h2>Worst items</h2>", 1)[1].split("<h2>", 1)[0]
    first_card = worst.split('<div class="card">')[1]
    assert '<div class="id">q007</div>' in first_card
    assert "<details><summary>2 contexts</summary>" in first_card and "doc says &lt;script&gt;" in first_card
    assert "reason for q007" in first_card
    assert worst.count('<div class="card">') == 10


def test_worst_by_one_metric_respects_its_direction():
    metrics, items = run()
    items.loc[3, "perplexity"] = 500.0  # lower is better: the highest perplexity is the worst
    page = build_html_report("t", metrics, items, worst_by="perplexity", n_worst=1)
    worst = page.split("<h2>Worst items</h2>", 1)[1]
    assert '<div class="id">q003</div>' in worst and worst.count('<div class="card">') == 1
    with pytest.raises(ValueError, match="worst_by='nope'"):
        build_html_report("t", metrics, items, worst_by="nope")


def test_failed_items_list_reasons_and_questions(full_report):
    failed = full_report.split("<h2>Failed items (3)</h2>", 1)[1].split("<h2>", 1)[0]
    assert "answer_relevance" in failed and "judge reply unparsable" in failed
    assert "question 9?" in failed and "q019" in failed and "q029" in failed
    assert re.search(r'<td class="num">3</td>', failed)


def test_comparison_verdicts_are_coloured(full_report):
    section = full_report.split("<h2>Comparisons</h2>", 1)[1].split("<h2>", 1)[0]
    assert 'style="background:#c62828"' in section  # a regressed metric
    assert "faithfulness" in section


def test_report_builds_without_optional_parts():
    metrics, items = run(n=12)
    page = build_html_report("bare", metrics, None)
    assert "<h2>All metrics</h2>" in page
    for absent in ("Judge agreement", "Comparisons", "Worst items", "Run info"):
        assert f"<h2>{absent}</h2>" not in page
    only_judges = {k: v for k, v in metrics.items() if "hit_rate" not in k}
    bare_items = items.drop(columns=["contexts", "reference_answer"])
    page = build_html_report("no retrieval", only_judges, bare_items)
    assert "Hit rate and recall at k" not in page and "<h2>Worst items</h2>" in page
    assert len(images(page)) == 2
    empty = build_html_report("empty", {}, pd.DataFrame({"item_id": []}))
    assert "<h2>Metrics with 95% intervals</h2>" not in empty and "<h2>Failed items" not in empty


def test_no_baseline_comparison_and_promoting_gate_render():
    metrics, items = run(n=10)
    cmp = compare_runs(metrics, None, old_label="production")
    page = build_html_report("t", metrics, items, comparisons={"production": cmp},
                             gate=gate_decision(cmp, GateThresholds()))
    assert "No production baseline to compare with." in page and "Gate: PROMOTED (first production baseline)" in page


def test_contexts_survive_artifact_round_trips():
    metrics, items = run(n=10)
    items["contexts"] = [np.array(c, dtype=object) for c in items["contexts"]]  # as read back from parquet
    items.at[0, "contexts"] = '["json ctx one", "json ctx two"]'
    page = build_html_report("t", metrics, items, worst_by="faithfulness", n_worst=10)
    assert '[1]</span> json ctx one</div>' in page and '[2]</span> json ctx two</div>' in page
    assert '[1]</span> context A of q001</div>' in page


def test_bad_items_get_clear_errors():
    metrics, items = run(n=10)
    with pytest.raises(ValueError, match="item_id"):
        build_html_report("t", metrics, items.drop(columns=["item_id"]))
    with pytest.raises(TypeError, match="DataFrame"):
        build_html_report("t", metrics, items.to_dict("records"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MetricResult"):
        build_html_report("t", {"m": 0.5}, items)  # type: ignore[dict-item]


def test_two_hundred_items_build_in_seconds():
    metrics, items = run(n=200)
    start = time.perf_counter()
    page = build_html_report("big", metrics, items)
    elapsed = time.perf_counter() - start
    assert elapsed < 30, f"report took {elapsed:.1f} s"
    assert len(page) < 2_000_000


def test_the_at_k_plot_and_the_kinds_come_from_metric_info_not_names():
    # a name that looks like nothing: the metric's info says what it is
    odd = {"x": MetricResult.from_items("x", [ItemScore(item_id="a", score=1.0)],
                                        info=MetricInfo(family="retrieval", measure="recall", k=3, mode="bm25"))}
    page = build_html_report("t", odd, None)
    assert "Hit rate and recall at k" in page and '<table class="retrieval-matrix" data-mode="bm25">' in page
    assert "<th>recall</th>" in page and "<th>@3</th>" in page
    # an at-k looking name with no identity is not plotted
    plain = {"bm25/hit_rate@5": MetricResult.from_items("bm25/hit_rate@5", [ItemScore(item_id="a", score=1.0)])}
    assert "Hit rate and recall at k" not in build_html_report("t", plain, None)


def test_markdown_summary():
    new, _ = run()
    old, _ = run(seed=1, shift=0.3)
    cmp = compare_runs(new, old, old_label="production")
    gate = GateDecision(promote=False, reasons=["faithfulness regressed | by a lot"])
    md = build_markdown_summary(f"nightly {EVIL}", new, comparisons={"production": cmp}, gate=gate,
                                run_info={"config_fingerprint": "abc123"})
    assert md.startswith("# nightly &lt;script&gt;")
    assert "**Gate: NOT PROMOTED (regression)**" in md and "faithfulness regressed \\| by a lot" in md
    m = new["faithfulness"]
    assert f"| faithfulness | {m.score:.3f} | - | [{m.ci_low:.3f}, {m.ci_high:.3f}] | 30 | 0 |" in md
    assert md.index("Worse than production: faithfulness regressed") < md.index("**Gate:")
    assert "**answer_relevance**: 3 of 30 failed: judge reply unparsable: &lt;script&gt;" in md
    assert "(x3)" in md
    assert "## vs production" in md and "- **regressed** faithfulness" in md
    assert "`abc123`" in md and EVIL not in md
    clean = {"m": MetricResult.from_items("m", [ItemScore(item_id="a", score=1.0)])}
    assert "No failed items." in build_markdown_summary("t", clean)


def test_duplicate_index_and_text_columns_do_not_break_the_worst_items():
    metrics, items = run(n=10)
    items.index = [0] * len(items)
    items["verdict"] = "fine"  # a text column that looks like a metric (it has a reason column)
    items["verdict__reason"] = "because"
    page = build_html_report("t", metrics, items, n_worst=3)
    worst = page.split("<h2>Worst items</h2>", 1)[1]
    assert worst.count('<div class="card">') == 3 and "verdict:" not in worst


def judge_info() -> MetricInfo:
    return MetricInfo(scale=(0.0, 1.0), prompt_version="faithfulness-v2", family="judge")


def test_first_screen_answers_better_or_worse_with_deltas_per_baseline():
    new, items = run()
    old, _ = run(seed=1, shift=0.3)
    new["faithfulness"].info = judge_info()
    new["faithfulness"].details["weighted"] = 0.612
    # a judge of unknown agreement gates only when the team trusts it (gate.trust_unknown_agreement)
    th = GateThresholds(default_allowed_drop=0.01, gated_metrics=["faithfulness"],
                        trust_unknown_agreement=["faithfulness"])
    cmp_prod = compare_runs(new, old, thresholds=th, old_label="production")
    cmp_prev = compare_runs(new, new, thresholds=th, old_label="previous run")
    page = build_html_report("t", new, items, comparisons={"previous run": cmp_prev, "production": cmp_prod},
                             gate=gate_decision(cmp_prod, th))
    top = page.split("<h2>", 1)[0]  # everything before the first section heading
    verdict = re.search(r'<div id="verdict" class="verdict-line bad">(.*?)</div>', top).group(1)
    assert "Worse than production: faithfulness regressed" in verdict
    assert "Same as previous run" in verdict and "Gate: NOT PROMOTED (regression)" in verdict
    headline = re.search(r'<table id="headline".*?</table>', top).group(0)
    assert [m for m in re.findall(r"<tr><td><b>(.*?)</b>", headline)] == [
        "faithfulness", "similarity", "answer_confidence", "e2e_failure_rate", "system/hit_rate"]
    faith = re.search(r"<tr><td><b>faithfulness</b>.*?</tr>", headline).group(0)
    row = cmp_prod.row("faithfulness")
    assert f"{row.diff:+.3f} [{row.diff_low:+.3f}, {row.diff_high:+.3f}]" in faith and ">regressed<" in faith
    assert ">unchanged<" in faith and "(agreement unknown; weighted 0.612)" in faith
    assert "not measured in this run" in headline  # answer_confidence is not in this run
    # warnings: agreement with human labels unknown for the judge; its value is marked
    assert "agreement with labels of the kind it scores is unknown" in top

    # by default such a judge is shown, not gated: the line names its regression as "not gated", the table
    # cell says so, and the gate promotes
    untrusted = th.model_copy(update={"trust_unknown_agreement": []})
    cmp_prod = compare_runs(new, old, thresholds=untrusted, old_label="production")
    gate = gate_decision(cmp_prod, untrusted)
    page = build_html_report("t", new, items, comparisons={"production": cmp_prod}, gate=gate)
    top = page.split("<h2>", 1)[0]
    verdict = re.search(r'<div id="verdict" class="verdict-line ok">(.*?)</div>', top).group(1)
    assert "Not gated: faithfulness regressed." in verdict and verdict.endswith("Gate: PROMOTED.")
    faith = re.search(r"<tr><td><b>faithfulness</b>.*?</tr>", top).group(0)
    assert ">regressed (not gated)<" in faith


def test_constant_judge_and_poor_agreement_get_a_warning_box():
    from ragwatch.results import LabelledEstimate

    metrics = {"faithfulness": MetricResult.from_items(
        "faithfulness", [ItemScore(item_id=f"q{i}", score=0.0) for i in range(12)], info=judge_info())}
    metrics["correctness"] = MetricResult.from_items(
        "correctness", [ItemScore(item_id=f"q{i}", score=float(i % 2)) for i in range(12)], info=judge_info())
    metrics["correctness"].labelled = LabelledEstimate(method="ppi++", score=0.9, ci_low=0.85, ci_high=0.95,
                                                       n_labels=50, n_items=12)
    page = build_html_report("t", metrics, None, settings=ReportSettings(headline=["correctness"]))
    headline = re.search(r'<table id="headline".*?</table>', page).group(0)
    assert "with human labels 0.900 [0.850, 0.950], 50 labels" in headline and "0.500" in headline
    box = re.search(r'<div class="warnbox">.*?</div>', page).group(0)
    assert "faithfulness: every one of 12 items got 0" in box and "does not gate" in box
    assert "correctness: the judge says 0.500, human labels say 0.900" in box and "poor agreement" in box


def test_keyword_tests_and_unsupported_statements_are_shown():
    from ragwatch.checks.e2e import E2ETables, run_e2e_tests
    from ragwatch.types import RagAnswer

    tables = E2ETables.model_validate({"bad_answers": [{"question": "Default orchestrator?",
                                                        "bad_words": ["Flyte"]}]})
    report = run_e2e_tests(tables, lambda qs: [RagAnswer(question=q, answer="Flyte, surely.") for q in qs])
    metrics = dict(report.metrics)
    metrics["faithfulness"] = MetricResult.from_items("faithfulness", [ItemScore(
        item_id="q1", score=0.5, details={"statements": ["ZenML runs on Mars.", "ZenML is Python."], "verdicts": [
            StatementVerdict(statement="ZenML runs on Mars.", verdict=False, reason="not in context").model_dump(),
            StatementVerdict(statement="ZenML is Python.", verdict=True, reason="ok").model_dump()]})],
        info=judge_info())
    items = pd.DataFrame([{"item_id": "q1", "question": "What is ZenML?", "answer": "..."}])
    page = build_html_report("t", metrics, items)
    kw = page.split("<h2>Keyword tests</h2>", 1)[1].split("<h2>", 1)[0]
    assert "Default orchestrator?" in kw and "<b>Flyte</b>" in kw and "Flyte, surely." in kw and "failed" in kw
    un = page.split("<h2>Unsupported statements (1 answers)</h2>", 1)[1].split("<h2>", 1)[0]
    assert "ZenML runs on Mars." in un and "not in context" in un and "ZenML is Python." not in un

    # a verdict read from P(supported) at its cut-off shows both, then the evidence that decided
    metrics["faithfulness"] = MetricResult.from_items("faithfulness", [ItemScore(
        item_id="q1", score=0.5, details={"statements": ["ZenML runs on Mars.", "ZenML is Python."], "verdicts": [
            StatementVerdict(statement="ZenML runs on Mars.", verdict=False, p_supported=0.62, threshold=0.9,
                             reason="not stated by the cited [2] ZenML runs pipelines").model_dump(),
            StatementVerdict(statement="ZenML is Python.", verdict=True, p_supported=0.97, threshold=0.9,
                             reason="ok").model_dump()]})],
        info=judge_info())
    un = build_html_report("t", metrics, items).split("<h2>Unsupported statements (1 answers)</h2>", 1)[1]
    assert "P(supported) 0.62 &lt; 0.90. not stated by the cited [2] ZenML runs pipelines" in un.split("<h2>", 1)[0]


def test_five_thousand_items_build_quickly_with_capped_sections():
    n = 5000
    ids = [f"q{i}" for i in range(n)]
    rng = np.random.default_rng(0)
    metrics = {"faithfulness": MetricResult.from_items("faithfulness", [
        ItemScore(item_id=i, error="judge reply unparsable") if j % 5 == 0 else
        ItemScore(item_id=i, score=float(rng.uniform()), details={
            "statements": ["a claim"], "verdicts": [{"statement": "a claim", "verdict": False, "reason": "no"}]})
        for j, i in enumerate(ids)],
        info=judge_info())}
    scores = [it.score for it in metrics["faithfulness"].items]
    items = pd.DataFrame({"item_id": ids, "question": [f"question {i}" for i in range(n)],
                          "answer": ["an answer"] * n, "faithfulness": scores})
    started = time.perf_counter()
    page = build_html_report("big", metrics, items)
    seconds = time.perf_counter() - started
    assert seconds < 20, seconds
    assert "… and 3800 more in the artifact." in page  # 4000 unsupported answers, 200 shown
    assert "… and 800 more in the artifact." in page  # 1000 failed items, 200 shown
    assert len(page) < 2_000_000


def test_comparison_page_is_styled_like_the_report_with_the_verdict_first():
    from ragwatch.report.comparison import build_comparison_page

    new, _ = run()
    old, _ = run(seed=1, shift=0.3)
    page = build_comparison_page({"production": compare_runs(new, old, old_label="production")})
    body = page.split("<body>", 1)[1]
    assert body.index('id="verdict"') < body.index("<table")
    assert "Worse than production: " in body and "<h2>vs production</h2>" in body and ".verdict-line" in page


def test_summary_text_is_what_run_py_prints_first():
    from ragwatch.report.summary import summary_text

    new, _ = run()
    old, _ = run(seed=1, shift=0.3)
    th = GateThresholds(default_allowed_drop=0.01, gated_metrics=["faithfulness"], inconclusive="promote")
    cmp = compare_runs(new, old, thresholds=th, old_label="production")
    text = summary_text(new, {"production": cmp}, gate_decision(cmp, th), ["faithfulness", "e2e_failure_rate"])
    lines = text.splitlines()
    assert lines[0].startswith("Worse than production: faithfulness regressed")
    assert lines[0].endswith("Gate: NOT PROMOTED (regression).")
    assert lines[2].split() == ["metric", "scale", "value", "95%", "CI", "n", "vs", "production"]
    # each metric's scale from its MetricInfo: 0-1 for faithfulness, pass/fail and lower-better for e2e
    assert lines[4].split()[:2] == ["faithfulness", "0-1"]
    assert lines[5].startswith("e2e_failure_rate  0/1, lower is better")
    faith = next(line for line in lines if line.startswith("faithfulness"))
    row = cmp.row("faithfulness")
    assert f"{row.diff:+.3f} [{row.diff_low:+.3f}, {row.diff_high:+.3f}] regressed" in faith
    assert any(line.startswith("  - faithfulness regressed: dropped by") for line in lines)
    held = GateThresholds(gated_metrics=["answer_relevance"], inconclusive="hold")
    cmp_held = compare_runs(new, new | {"answer_relevance": old["answer_relevance"]}, thresholds=held)
    assert "NOT PROMOTED (held: too little evidence)" in summary_text(new, {"production": cmp_held},
                                                                     gate_decision(cmp_held, held))
