"""A faithfulness regression a weak judge cannot decide, decided by 30 labels given in the browser.

The whole way a user goes, on a temporary ZenML store: production answers are evaluated and promoted;
a candidate that puts a number or name of its answers' own contexts in the wrong place
(`tests/planted_faithfulness.py`: 32 of 48 answers, lexically invisible) is evaluated. Its judge is
below `gate.min_judge_kappa` (the shipped calibration of the local 1.5B judge, kappa 0.52, which the
fake judge carries here) and sees a drop it cannot size: the gate says NEEDS LABELS with how many and
the `review serve` command. That command is run, the page opened in headless Chromium, and 30 items
labelled by clicking yes / no per statement (a careful reader's truth); `evaluate` again, as the
needs-labels text says, decides on the prediction-powered paired difference: REGRESSED, not
promoted. A no-op replay of production is then promoted, labels and all.

The judge is a fake OpenAI-compatible server with token logprobs (no local model); the system under
test a Python callable. The server and the browser: tests/review_browser.py; skipped with the reason
when Chromium or Playwright is missing.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from zenml.client import Client
from zenml.enums import ModelStages

import tests.planted_faithfulness as planted
from ragwatch.judges.faithfulness import PROMPT_VERSION as FAITHFULNESS_PROMPT
from ragwatch.judges.faithfulness import calibrations
from ragwatch_zenml import cli
from tests.fake_llm_server import FakeLLMServer
from tests.integration.conftest import write_config
from tests.review_browser import NEEDS_BROWSER, Server, free_port, review_page

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,  # four pipeline runs, a server and 30 items labelled in a browser: about 3-5 minutes
    *NEEDS_BROWSER,
    pytest.mark.usefixtures("no_review_server_left"),
]
MODEL = "ragwatch-planted-faithfulness"
JUDGE = "openai/fake-judge"
LABELS = 30
NEEDS = re.compile(r"label (\d+) of this run's answers .*?: python run\.py review serve --run (\S+) "
                   r"--metric faithfulness --n (\d+), then evaluate again")


@pytest.fixture
def config(tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch):
    """The config, and the flag file that switches the system to the planted answers."""
    monkeypatch.setenv("FAKE_JUDGE_KEY", "sk-fake")
    # the fake judge stands in for the default local judge: its shipped calibration (level data, kappa 0.52)
    shipped = next(c for c in calibrations.CALIBRATIONS if c.level_data)
    monkeypatch.setattr(calibrations, "CALIBRATIONS", (*calibrations.CALIBRATIONS, shipped.model_copy(
        update={"model": JUDGE})))
    flag = tmp_path / "planted.flag"
    (tmp_path / "planted_rag.py").write_text(
        "import pathlib\n"
        "import tests.planted_faithfulness as planted\n"
        f"FLAG = pathlib.Path({str(flag)!r})\n"
        "def answer(question):\n"
        "    return planted.answer_of(question, planted=FLAG.exists())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "planted_rag", raising=False)
    with FakeLLMServer(responder=planted.judge_reply, lifetime_s=1800) as server:
        judge = {"model": JUDGE, "api_base": server.base_url, "api_key_env": "FAKE_JUDGE_KEY",
                 "max_tokens": 200, "cache": False}
        path = write_config(
            tmp_path / "cfg", tiny_corpus, synthetic=False,
            system={"model_name": MODEL, "rag": {"kind": "callable", "callable": "planted_rag:answer"}},
            judges={"llm": judge, "enabled": ["faithfulness"], "use_logprobs": True,
                    "faithfulness": {"statements": "sentences", "max_statements": 4}},
            # the shipped gate (configs/evaluate.yaml): drops of 0.05 allowed, min_judge_kappa 0.6
            gate={"default_allowed_drop": 0.05, "per_metric": {"system/*": 0.0}, "gated_metrics": ["faithfulness"]})
        rows = planted.questions()
        (path.parent / "labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        yield path, flag


def _label_by_clicking(page, labelled: int) -> None:
    """Answer the item shown statement by statement with the yes / no buttons, as a careful reader
    would (the planted truth); wait until the label is stored (`labelled` items in all)."""
    statements = page.locator("ol.statements li > span:first-child").all_inner_texts()
    assert len(statements) == 4, statements
    for text in statements:
        word = "yes" if planted.truth(text) else "no"
        page.locator(".ask button.key", has_text=word).click()
    page.wait_for_function("n => document.getElementById('progress-text').textContent.startsWith(n + ' /')",
                           arg=labelled)
    page.wait_for_selector("#next-hint:not([hidden])")


def test_needs_labels_then_thirty_labels_in_the_browser_decide_the_planted_change(config, capsys) -> None:
    path, flag = config
    assert cli.main(["full", "--config", str(path)]) == 0
    production = Client().get_model_version(MODEL, ModelStages.PRODUCTION)
    capsys.readouterr()

    # the planted change: the weak judge sees a drop it cannot size
    flag.touch()
    assert cli.main(["evaluate", "--config", str(path)]) == 1
    out = capsys.readouterr().out
    assert "NOT PROMOTED (needs labels" in out, out
    shipped = calibrations.faithfulness_calibration("local/qwen2.5-coder-1.5b-instruct", FAITHFULNESS_PROMPT)
    assert shipped is not None
    assert "faithfulness needs labels: its judge sees a drop" in out, out
    assert f"kappa {shipped.agreement.kappa:.2f}" in out, out
    needs_line = next(line for line in out.splitlines() if "faithfulness needs labels" in line)
    needed, run_name, n = NEEDS.search(out.replace("\n", " ")).groups()
    assert needed == n and LABELS <= int(n) <= 48, out  # the power computation names at least the 30 given
    run = Client().get_pipeline_run(run_name)
    assert run.run_metadata["gate"]["status"] == "needs_labels"
    # the paired difference is of the headline's own quantity: the calibrated level per item
    entry = run.run_metadata["gated_metrics"]["faithfulness"]
    assert entry["vs_production"]["diff"] == pytest.approx(
        entry["score"] - production.run_metadata["gated_metrics"]["faithfulness"]["score"], abs=1e-9)

    # the command the gate names, then 30 labels by clicking
    port = free_port()
    server = Server(port, choose=("--run", run_name, "--metric", "faithfulness", "--n", n))
    with review_page(server.url, width=1280, height=900) as page:
        page.wait_for_selector("ol.statements li.current")
        assert page.inner_text("#progress-text") == f"0 / {n} labelled"
        for k in range(1, LABELS + 1):
            page.wait_for_selector("ol.statements li.current")
            _label_by_clicking(page, k)
            page.keyboard.press("Enter")
        page.wait_for_function("!document.getElementById('sync').textContent.includes('saving')", timeout=60_000)
    assert f"{LABELS} of {n} items labelled" in server.stop()
    labels = Client().list_artifact_versions(name="human_labels", sort_by="desc:created", size=1).items[0].load()
    assert labels.counts() == {"faithfulness": LABELS}

    # evaluate again, as the needs-labels text says: the prediction-powered paired difference decides
    capsys.readouterr()
    assert cli.main(["evaluate", "--config", str(path)]) == 1
    out = capsys.readouterr().out
    decided = re.search(r"faithfulness regressed on human labels: diff (-\d\.\d+), 95% CI \[(-\d\.\d+), (-\d\.\d+)\] "
                        r"from (\d+) human labels on the 32 of 48 answers that changed", out.replace("\n", " "))
    assert decided is not None, out
    diff, low, high = (float(x) for x in decided.groups()[:3])
    assert low <= diff <= high < -0.05  # beyond the allowed drop: blocked
    assert 10 <= int(decided.group(4)) <= LABELS  # the labels that fell on the answers that changed
    assert Client().get_model_version(MODEL, ModelStages.PRODUCTION).id == production.id

    # a no-op replay of production is promoted, with the labels in the store
    flag.unlink()
    capsys.readouterr()
    assert cli.main(["evaluate", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "needs labels" not in out and "NOT PROMOTED" not in out, out
    gate = Client().list_pipeline_runs(sort_by="desc:created", size=1, hydrate=True).items[0].run_metadata["gate"]
    assert gate["status"] == "promote" and gate["promoted"] is True, gate
    with capsys.disabled():
        print(f"\nneeds labels: {needs_line.strip()}\nafter {LABELS} labels: {decided.group(0)}")
