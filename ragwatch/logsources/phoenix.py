"""Arize Phoenix as a trace source, through its REST API (stdlib HTTP: no Phoenix package here):
pull a project's spans (OpenInference, read by `openinference.read_spans`). Writing the monitor's
verdicts back is `ragwatch.monitoring.phoenix_annotate` (the monitoring side; a source knows no monitor).

Example:
    >>> log = pull_spans(PhoenixSource(url="http://127.0.0.1:6006"))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any

from ragwatch.logsources.openinference import EXPECTED, read_spans
from ragwatch.logsources.records import LogReadResult
from ragwatch.logsources.settings import PhoenixSource

TIMEOUT_S = 30.0


def call(url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            text = response.read().decode()
    except OSError as exc:
        raise ValueError(f"Phoenix at {url}: {exc}; is `phoenix serve` running there?") from exc
    return json.loads(text) if text else {}


def pull_spans(source: PhoenixSource, page: int = 1000) -> LogReadResult:
    """Every span of the project (`GET /v1/projects/{project}/spans`, page by page), as records."""
    base = source.url.rstrip("/")
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"limit": page, **({"cursor": cursor} if cursor else {})}
        reply = call(f"{base}/v1/projects/{urllib.parse.quote(source.project)}/spans?"
                      + urllib.parse.urlencode(query))
        spans += [s for s in reply.get("data", []) if isinstance(s, dict)]
        cursor = reply.get("next_cursor")
        if not cursor:
            break
    result = LogReadResult(source=f"{base} project {source.project}", format="phoenix", expected=EXPECTED,
                           found=f"{len(spans)} spans" if spans else "no span in the project yet")
    return read_spans([(f"span {(s.get('context') or {}).get('span_id', i)}", s) for i, s in enumerate(spans)], result)
