"""How long the review page makes a person wait per label, and how much there is to read per item.

Drives the real page (`ragwatch.review.server` over `ragwatch.review.session`) in headless Chromium with
Playwright: each item is answered by key presses as a person would (one key per statement, a digit
on 1-5 metrics, Enter for the next item); the time from the first key of an item to the next item
on screen is the page's share of a label (request, fsync of the log, agreement and PPI preview,
rendering). Labels go to a temporary log and nothing is saved to ZenML; the artifact save happens
in the background in `review serve` and is not on this path.

Items come from an evaluation run in the current ZenML store (`--run`, read only; default: the last
one) or, with `--synthetic`, from a generated run of the same shape. The words a person reads per
item (question, answer, contexts) are counted, so the reading time can be estimated; reading speed
is an assumption (`--wpm`), not a measurement.

    python -m lab.review_page --synthetic --n 30
    python -m lab.review_page --metric faithfulness --n 30
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.review import LabelLog, ReviewApp, ReviewSession, attach, make_server
from ragwatch.statements import StatementVerdict

NEXT_ITEM = "head => document.querySelector('#item-head b').textContent.startsWith(head)"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def synthetic_run(n: int) -> tuple[list[dict], dict[str, MetricResult], str, str]:
    """`n` items shaped like the embedded default's: a 3-sentence answer, three ~120-word passages."""
    passage = ("ZenML runs each step of a pipeline on the orchestrator of the active stack. The local "
               "orchestrator runs steps one after another in the same process. ") * 5
    rows, faith = [], []
    for i in range(n):
        answer = ("The local orchestrator runs steps in one process. It is the default orchestrator. "
                  "Remote orchestrators need a container registry.")
        rows.append({"item_id": f"q{i}", "question": f"How does the local orchestrator run step {i}?",
                     "answer": answer, "contexts": [passage] * 3, "context_sources": ["a.md", "b.md", "c.md"],
                     "reference_answer": ""})
        marks = [1, 1, i % 2]
        statements = re.split(r"(?<=\.) ", answer)
        faith.append(ItemScore(item_id=f"q{i}", score=sum(marks) / 3, details={
            "statements": statements, "verdicts": [
                StatementVerdict(statement=s, verdict=bool(m), reason="...", window=1).model_dump()
                for s, m in zip(statements, marks, strict=True)]}))
    judged = {"faithfulness": MetricResult.from_items("faithfulness", faith, info=MetricInfo(
        prompt_version="faithfulness-v4", family="judge"))}
    return rows, judged, "synthetic", "synthetic"


def store_run(run: str | None) -> tuple[list[dict], dict[str, MetricResult], str, str]:
    from ragwatch_zenml.env import configure_environment, ensure_repository

    configure_environment()
    ensure_repository()
    from ragwatch_zenml.commands.review import find_run, run_items

    found = find_run(run)
    rows, judged = run_items(found)
    return rows, judged, str(found.id), str(found.name)


def words(text: str) -> int:
    return len(text.split())


def guided_words(item) -> int:
    """Question, answer, reference (for graded tasks) and the sentences the reading aid underlines."""
    total = words(item.question) + words(item.answer)
    for task in item.tasks:
        if task.kind != "statements":
            total += words(item.reference_answer)
        for hints in task.hints:
            total += sum(words(item.passages[h.passage].text[h.start:h.end]) for h in hints)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", help="evaluation run (default: the last one)")
    parser.add_argument("--synthetic", action="store_true", help="a generated run instead of the store's")
    parser.add_argument("--metric", action="append")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--wpm", type=float, default=230.0, help="assumed reading speed for the estimate")
    parser.add_argument("--screenshot", help="save a screenshot of the last labelled item here")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("Chromium is not installed: apt-get install -y --no-install-recommends chromium")
    rows, judged, run_id, run_name = synthetic_run(args.n) if args.synthetic else store_run(args.run)
    with tempfile.TemporaryDirectory() as tmp:
        session = ReviewSession.start(rows, judged, LabelLog(Path(tmp) / "bench.labels.jsonl"), run_id=run_id,
                                      run_name=run_name, n=args.n, metrics=args.metric)
        server = make_server(0)
        attach(server, ReviewApp(session))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        per_item, keys = [], 0
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url)
            page.wait_for_selector("#tasks .task")
            for k, item in enumerate(session.items):
                presses = []
                for task in item.tasks:
                    judge = item.judge[task.metric]
                    if task.kind == "statements":  # the judge's own verdicts: the figure is the page's time
                        presses += ["y" if s.supported else "n" for s in judge.statements]
                    elif task.kind == "binary":
                        presses.append("y" if judge.score >= 0.5 else "n")
                    else:
                        presses.append(str(round(judge.score)))
                started = time.perf_counter()
                for key in presses:
                    page.keyboard.press(key)
                page.wait_for_selector("#next-hint:not([hidden])")  # stored, the judge shown
                if args.screenshot and k == len(session.items) - 1:
                    page.screenshot(path=args.screenshot)
                page.keyboard.press("Enter")
                if k < len(session.items) - 1:
                    page.wait_for_function(NEXT_ITEM, arg=f"Item {k + 2} ")
                per_item.append(time.perf_counter() - started)
                keys += len(presses) + 1
            browser.close()
        server.shutdown()
    full = [words(it.question) + words(it.answer) + sum(words(p.text) for p in it.passages) for it in session.items]
    guided = [guided_words(it) for it in session.items]
    page_s = statistics.median(per_item)
    print(f"run {run_name}: {len(per_item)} items, metrics {', '.join(session.sample.metrics)}")
    print(f"page time per label (first key -> stored -> judge shown -> next item shown): median {page_s:.2f} s, "
          f"max {max(per_item):.2f} s; {keys / len(per_item):.1f} key presses per item")
    for name, counts in (("every context word", full), ("the reading aid's sentences only", guided)):
        read_s = statistics.median(counts) / args.wpm * 60
        print(f"words per item, question + answer + {name}: median {statistics.median(counts):.0f} "
              f"-> {read_s:.0f} s at an assumed {args.wpm:.0f} words/min; thirty labels "
              f"{30 * (read_s + page_s) / 60:.1f} min (an estimate, not a measurement)")


if __name__ == "__main__":
    main()
