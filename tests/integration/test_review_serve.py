"""The review page in a real browser, on a temporary ZenML store: a full run with mock judges, then
`review serve`; ten items labelled by key presses (statement by statement for faithfulness, a digit
for correctness), a reload mid-way, the server killed (SIGKILL) and restarted, an undo and a skip; then
`evaluate` shows the prediction-powered estimate from n = 10 labels, and the page links to it.
Bad input (unknown run, a run without judged items, a port in use) exits 2 with a message.

The judge is a fake OpenAI-compatible server and the system under test a Python callable, so this
exercises our plumbing, not a model. The server and the browser: tests/review_browser.py; skipped
with the reason when Chromium or Playwright is missing. The screenshot of a labelled item is kept as
review_page.png in the test session's reports directory (`session_reports`, a pytest temporary
directory: the checkout's reports/ is the user's).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from zenml.client import Client

from ragwatch.judges.faithfulness.verify_evidence import prompt_statements
from ragwatch_zenml import cli
from tests.fake_llm_server import FakeLLMServer, first_user_text
from tests.integration.conftest import write_config
from tests.review_browser import NEEDS_BROWSER, ROOT, Server, free_port, review_page

MODEL = "ragwatch-review-page-rag"
CONTEXT = ("The local orchestrator is the default orchestrator of ZenML. It runs every step of a pipeline "
           "in the same process on your machine.\n\nA failure hook runs when a step fails; attach it with "
           "the on_failure argument of the step decorator.")
TOPICS = ["orchestrator", "failure hook", "step", "pipeline", "stack", "artifact", "cache", "model",
          "schedule", "secret", "service", "container"]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,  # a full run, three server starts and a browser: about 2-3 minutes on 2 cores
    *NEEDS_BROWSER,
    pytest.mark.usefixtures("no_review_server_left"),
]


def _judge(body: dict) -> str:
    """Faithfulness: a check per statement (supported, citing sentence 1, when it mentions the
    local orchestrator or a hook); correctness: a stable 1-5 score per prompt."""
    text = first_user_text(body)
    statements = prompt_statements(text)
    if statements:  # evidence first: the first context sentence, for the statements it supports
        checks = [{"evidence": [1], "verdict": "yes"} if ("local" in s or "hook" in s) else
                  {"evidence": [], "verdict": "no"} for s in statements]
        return json.dumps({"checks": checks})
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return json.dumps({"reasoning": "compared with the reference", "score": 1 + digest % 5})


@pytest.fixture
def config(tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_JUDGE_KEY", "sk-fake")
    module = tmp_path / "page_rag.py"
    module.write_text(
        "def answer(question):\n"
        "    topic = question.split('about the ')[-1].rstrip('?')\n"
        "    return {'answer': f'The local orchestrator runs the {topic}. The {topic} is stored in the cloud.',\n"
        f"            'contexts': [{{'text': {CONTEXT!r}, 'source': 'component-guide/orchestrators/local.md'}},\n"
        "                         {'text': 'Stacks combine an orchestrator and an artifact store.',\n"
        "                          'source': 'component-guide/stacks.md'}]}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    with FakeLLMServer(responder=_judge, lifetime_s=1200) as server:
        judge = {"model": "openai/fake-judge", "api_base": server.base_url, "api_key_env": "FAKE_JUDGE_KEY",
                 "max_tokens": 200, "cache": False}
        path = write_config(tmp_path / "cfg", tiny_corpus, synthetic=False,
                            system={"model_name": MODEL, "rag": {"kind": "callable", "callable": "page_rag:answer"}},
                            judges={"llm": judge, "enabled": ["faithfulness", "correctness"],
                                    "faithfulness": {"statements": "sentences", "max_statements": 3}},
                            gate={"gated_metrics": ["system/hit_rate"]})
        rows = [{"id": f"q{i:02d}", "question": f"What do I need to know about the {topic}?",
                 "reference_answer": f"The local orchestrator runs the {topic}.",
                 "relevant": ["component-guide/orchestrators/local.md"]} for i, topic in enumerate(TOPICS)]
        (path.parent / "labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        yield path


def _label_item(page, digit: str, marks: str, labelled: int) -> None:
    """Answer the item shown: one key per statement, then the correctness digit; wait until it is
    stored (`labelled` items in all) and the judge is shown."""
    for key in marks:
        page.keyboard.press(key)
    page.keyboard.press(digit)
    page.wait_for_function("n => document.getElementById('progress-text').textContent.startsWith(n + ' /')",
                           arg=labelled)
    page.wait_for_selector("#next-hint:not([hidden])")


def _labelled(page) -> int:
    return int(page.inner_text("#progress-text").split("/")[0])


def test_label_ten_items_in_the_browser(config: Path, tmp_path: Path, capsys, session_reports: Path) -> None:
    assert cli.main(["full", "--config", str(config)]) == 0
    assert cli.main(["ingest", "--config", str(config)]) == 0
    capsys.readouterr()
    ingest_run = Client().list_pipeline_runs(sort_by="desc:created", size=1).items[0].name

    # bad input: a clear message and exit 2
    port = free_port()
    assert cli.main(["review", "serve", "--run", "no-such-run", "--port", str(port)]) == 2
    assert "no single pipeline run matches 'no-such-run'" in capsys.readouterr().err
    assert cli.main(["review", "serve", "--run", ingest_run, "--port", str(port)]) == 2
    assert "has no judged items" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert cli.main(["review", "serve", "--port", str(port)]) == 2
        assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err

    server = Server(port)
    screenshot = session_reports / "review_page.png"
    with review_page(server.url, width=1280, height=800) as page:
        page.wait_for_selector("ol.statements li")
        assert page.inner_text("#progress-text") == "0 / 12 labelled"
        assert page.locator(".judge").count() == 0  # the judge is hidden until the item is labelled

        started = time.monotonic()
        _label_item(page, "4", "yn", 1)
        assert "judge:" in page.inner_text("#tasks")  # revealed once answered
        page.keyboard.press("Enter")
        _label_item(page, "2", "yy", 2)
        page.keyboard.press("Enter")
        page.wait_for_selector("ol.statements li.current")
        page.keyboard.press("y")  # half an item, then a reload: the stored labels are all there
        page.reload()
        page.wait_for_selector("ol.statements li.current")
        assert _labelled(page) == 2
        for k, digit in enumerate("345", start=3):
            _label_item(page, digit, "yn", k)
            page.keyboard.press("Enter")
        page.wait_for_selector("ol.statements li.current")
        server.kill()  # SIGKILL right after a label: nothing may be lost

        server = Server(port)
        assert "5 of 12 items labelled" in "".join(server.lines)
        page.reload()
        page.wait_for_selector("ol.statements li.current")
        assert _labelled(page) == 5
        _label_item(page, "1", "nn", 6)
        page.keyboard.press("u")  # undo takes the last answer (the correctness digit) back
        page.wait_for_function("document.getElementById('progress-text').textContent.startsWith('5 /')")
        assert page.locator("ol.statements li.current").count() == 0  # the statements stay answered
        _label_item(page, "3", "", 6)
        page.keyboard.press("Enter")
        page.wait_for_selector("ol.statements li.current")
        skipped = page.inner_text("#item-head b")
        page.keyboard.press("s")  # skip one
        page.wait_for_function("s => document.querySelector('#item-head b').textContent !== s", arg=skipped)
        for k, digit in enumerate("1234", start=7):
            page.wait_for_selector("ol.statements li.current")
            _label_item(page, digit, "yn", k)
            if digit != "4":
                page.keyboard.press("Enter")
        per_label_s = (time.monotonic() - started) / 10
        assert _labelled(page) == 10
        page.wait_for_function("!document.getElementById('sync').textContent.includes('saving')", timeout=60_000)
        # the bar moves at once, the figures with the next state refresh (slower on a loaded machine)
        page.wait_for_function("document.getElementById('agreement').textContent.includes('(10 items)')",
                               timeout=60_000)
        agreement = page.inner_text("#agreement")
        assert "accuracy" in agreement and "n = 20 statements (10 items)" in agreement, agreement
        page.locator(".where").first.click()
        page.screenshot(path=str(screenshot))
    out = server.stop()
    assert "10 of 12 items labelled" in out, out
    print(f"browser-driven labelling: {per_label_s:.2f} s per label, page and server included")

    latest = Client().list_artifact_versions(name="human_labels", sort_by="desc:created", size=1, hydrate=True).items[0]
    labels = latest.load()
    assert labels.counts() == {"correctness": 10, "faithfulness": 10}
    assert latest.run_metadata["via"] == "review serve" and latest.run_metadata["model_name"] == MODEL
    assert {lab.reviewer for lab in labels.labels} == {"tester"}
    assert all(0 < lab.inclusion_prob <= 1 for lab in labels.labels)

    capsys.readouterr()
    assert cli.main(["evaluate", "--config", str(config)]) == 0
    printed = capsys.readouterr().out
    after = printed.split("with human labels (PPI++")[1].splitlines()
    assert any(row.startswith("faithfulness ") and "10 labels of 12 items" in row for row in after), printed
    run = Client().list_pipeline_runs(sort_by="desc:created", size=1, hydrate=True).items[0]
    assert run.run_metadata["human_labels"]["metrics"]["faithfulness"]["n_labels"] == 10

    server = Server(port)  # the page now links to that evaluation
    state = server.state()
    assert state["latest"]["run"] == run.name and state["latest"]["labelled"]["faithfulness"]["n_labels"] == 10
    with urllib.request.urlopen(server.url + "report", timeout=60) as res:
        assert b"ragwatch" in res.read()
    server.stop()
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
