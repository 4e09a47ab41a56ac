"""A fake answer relevance judge behind `tests/fake_llm_server.py`, and a small log of answers whose
relevance is known: the judge drift tests plant a judge change or a system change with them.

The judge reads the fenced ANSWER of each request. Mode "good": a shipped anchor answer gets its
reference label back (except every seventh, flipped: a judge with errors), and a logged answer is
relevant when it holds `ON_TOPIC`. Mode "yes": every answer is relevant; "lenient": as "good", but half of what it
would fail passes. The mode is per model
(`modes[model]`, default `modes["*"]`), so a test can switch a judge silently or name another model.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ragwatch.judges.base import neutralize
from ragwatch.monitoring.anchor import SHIPPED
from tests.fake_llm_server import first_user_text

ON_TOPIC = "zenml stack register"
_ANSWER = re.compile(r"<<<BEGIN ANSWER>>>\n(.*?)\n<<<END ANSWER>>>", re.S)


def _key(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()[:16]


def anchor_labels() -> dict[str, bool]:
    """The shipped answer relevance anchor: answer key -> relevant."""
    (path,) = SHIPPED["answer_relevance"][1]
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {_key(neutralize(r["answer"])): r["relevant"] for r in rows if isinstance(r.get("relevant"), bool)}


class PlantedJudge:
    """The responder: `modes` maps a model name (or "*") to "good" or "yes"; `calls` counts replies."""

    def __init__(self, modes: dict[str, str] | None = None) -> None:
        self.modes = dict(modes or {"*": "good"})
        self.labels = anchor_labels()
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> str:
        self.calls += 1
        model = str(body.get("model", "")).split("/")[-1]
        mode = self.modes.get(model, self.modes.get("*", "good"))
        match = _ANSWER.search(first_user_text(body))
        answer = match.group(1) if match else ""
        key = _key(answer)
        if mode == "yes":
            relevant = True
        elif key in self.labels:
            relevant = self.labels[key] != (int(key, 16) % 7 == 0)
        else:
            relevant = ON_TOPIC in answer
        if mode == "lenient" and not relevant:
            relevant = int(key, 16) % 2 == 0  # half of what it would fail, it passes
        return json.dumps({"verdict": "yes" if relevant else "no"})


def write_log(path: Path, on_topic: dict[int, float], per_day: int = 60) -> None:
    """A JSONL log of `per_day` answers a day from 2026-11-18; day d answers `on_topic[d]` of them on topic."""
    first = datetime(2026, 11, 18, tzinfo=UTC)
    rows = []
    for day, share in on_topic.items():
        good = round(share * per_day)
        for i in range(per_day):
            answer = (f"Register stack {i} with zenml stack register NAME." if i < good
                      else f"The weather is fine today and nothing else is known (note {i}).")
            when = first + timedelta(days=day, seconds=86400 * i // per_day)
            rows.append({"trace_id": f"d{day}-{i}", "timestamp": when.isoformat(),
                         "question": f"How do I register stack number {i}?", "answer": answer,
                         "contexts": [{"text": "Register a stack with zenml stack register NAME.", "id": "c1"}]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
