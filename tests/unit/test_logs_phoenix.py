"""The Phoenix adapter against a stand-in of Phoenix's REST API (the real server: tests/integration/
test_phoenix.py): spans pulled page by page, verdicts posted back as span annotations on root spans."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from ragwatch.logsources.read import read_log
from ragwatch.logsources.settings import LogSettings, PhoenixSource
from ragwatch.monitoring.monitor import evaluate_window, monitor_report
from ragwatch.monitoring.phoenix_annotate import annotate_window
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch.monitoring.windows import select_windows

SPANS = [json.loads(line) for line in (Path(__file__).resolve().parent.parent / "data" / "logs" / "spans.jsonl")
         .read_text().splitlines() if line.startswith("{\"")]


class _Phoenix(BaseHTTPRequestHandler):
    posted: ClassVar[list] = []

    def log_message(self, *args):  # quiet
        pass

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        assert self.path.startswith("/v1/projects/default/spans")
        start = int(self.path.split("cursor=")[1]) if "cursor=" in self.path else 0
        page = SPANS[start:start + 7]  # several pages
        nested = [{"context": {"trace_id": s["context.trace_id"], "span_id": s["context.span_id"]},
                   **{k: v for k, v in s.items() if not k.startswith("context.")}} for s in page]
        self._reply({"data": nested, "next_cursor": str(start + 7) if start + 7 < len(SPANS) else None})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Phoenix.posted.append((self.path, body))
        self._reply({"data": [{"id": str(i)} for i, _ in enumerate(body["data"])]})


@pytest.fixture
def phoenix():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Phoenix)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Phoenix.posted = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_pull_evaluate_and_annotate(phoenix):
    config = MonitorConfig(logs=LogSettings(format="phoenix", phoenix=PhoenixSource(url=phoenix)))
    log = read_log(config.logs)
    assert log.format == "phoenix" and log.counts["kept"] == 6 and log.counts["missing_contexts"] == 1
    windows = select_windows(log.records, config.window)
    current, previous, reference = (evaluate_window(w, config) for w in (windows.current, windows.previous,
                                                                          windows.reference))
    report = monitor_report(log, windows, current, previous, reference, config)
    assert annotate_window(config.logs.phoenix, report, current) == 3
    path, body = _Phoenix.posted[0]
    assert path.startswith("/v1/span_annotations")
    spans = {a["span_id"] for a in body["data"]}
    assert spans == {"t4" * 8 + "-root", "t5" * 8 + "-root", "t6" * 8 + "-root"}  # the root spans of the window
    first = body["data"][0]
    assert first["name"] == "ragwatch" and first["annotator_kind"] == "CODE"
    assert first["result"]["label"] in ("drift", "no drift", "undecided")
    assert "unpaired" in first["result"]["explanation"]


def test_phoenix_down_says_what_to_do():
    with pytest.raises(ValueError, match="phoenix serve"):
        read_log(LogSettings(format="phoenix", phoenix=PhoenixSource(url="http://127.0.0.1:9")))
