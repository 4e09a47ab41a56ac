"""The review page over HTTP: a small JSON API on 127.0.0.1 and one static, keyboard-first page.

The standard library's threading HTTP server is enough for one person (or a few tabs) on the local
machine and adds no dependency; the labelling logic lives in `ragwatch.review.session`. Routes:

    GET  /                    the page (static/: page.html, page.css, page.js)
    GET  /api/state?tab=T     progress, agreement, estimates, the next item, the latest evaluation
    GET  /api/item/N          item N (the judge's view only once the item is labelled)
    POST /api/label           {tab, item_id, metric, value | statements, seen}
    POST /api/undo            {tab}
    POST /api/skip            {tab, item_id}
    GET  /report              the latest evaluation report of the system (when a provider is given)

POSTs must be JSON and the Host header must name this server, so another web page open in the same
browser cannot label on the person's behalf (a cross-site JSON POST needs a preflight we never grant;
a rebound DNS name fails the Host check).

Example:
    >>> server = make_server(8239, app=ReviewApp(session))  # doctest: +SKIP
    >>> server.serve_forever()  # doctest: +SKIP
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from ragwatch.review.session import ReviewSession

STATIC = Path(__file__).parent / "static"
FILES = {"/": ("page.html", "text/html; charset=utf-8"), "/page.css": ("page.css", "text/css; charset=utf-8"),
         "/page.js": ("page.js", "text/javascript; charset=utf-8")}
MAX_BODY = 64 * 1024


class PortInUseError(ValueError):
    """The port is taken (another review page, or anything else)."""


class ReviewApp:
    """What the HTTP handler calls: the session, plus hooks to the ZenML side.

    `on_change()` runs after every stored event (the artifact sync wakes up); `latest()` describes
    the newest evaluation of the system (for the page's result link) and `report()` returns its HTML.
    """

    def __init__(self, session: ReviewSession, *, on_change: Callable[[], None] | None = None,
                 latest: Callable[[], dict[str, Any] | None] | None = None,
                 report: Callable[[], str | None] | None = None,
                 status: Callable[[], dict[str, Any]] | None = None) -> None:
        self.session = session
        self.on_change = on_change or (lambda: None)
        self.latest = latest or (lambda: None)
        self.report = report or (lambda: None)
        self.status = status or (lambda: {})
        self.lock = threading.Lock()  # one writer at a time inside this process (the log locks across processes)

    def state(self, tab: str) -> dict[str, Any]:
        return {**self.session.state(tab), "latest": self.latest(), "sync": self.status()}

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        tab = str(body.get("tab") or "")
        if not tab:
            raise ValueError("every request names its tab (the page sends one)")
        with self.lock:
            if path == "/api/label":
                out = self.session.label(tab, str(body.get("item_id") or ""), str(body.get("metric") or ""),
                                         value=body.get("value"), statements=body.get("statements"),
                                         seen=body.get("seen"))
            elif path == "/api/undo":
                out = self.session.undo(tab)
            elif path == "/api/skip":
                out = self.session.skip(tab, str(body.get("item_id") or ""))
            else:
                raise LookupError(f"no such endpoint: {path}")
        self.on_change()
        return out


class _Handler(BaseHTTPRequestHandler):
    app: ReviewApp
    server_version = "ragwatch-review"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per key press would bury the server's own messages

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the tab closed mid-answer: what was stored stays stored

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        return host in ("127.0.0.1", "localhost", "::1")

    def do_GET(self) -> None:
        if not self._host_ok():
            return self._json(HTTPStatus.FORBIDDEN, {"error": "unknown Host header"})
        url = urlparse(self.path)
        try:
            if url.path in FILES:
                name, content_type = FILES[url.path]
                return self._send(HTTPStatus.OK, (STATIC / name).read_bytes(), content_type)
            if url.path == "/api/state":
                tab = parse_qs(url.query).get("tab", [""])[0]
                return self._json(HTTPStatus.OK, self.app.state(tab))
            if url.path.startswith("/api/item/"):
                return self._json(HTTPStatus.OK, self.app.session.item_view(int(url.path.rsplit("/", 1)[1])))
            if url.path == "/report":
                html = self.app.report()
                if html is None:
                    return self._send(HTTPStatus.NOT_FOUND, b"no evaluation report of this system yet: "
                                      b"run `python run.py evaluate`", "text/plain; charset=utf-8")
                return self._send(HTTPStatus.OK, html.encode(), "text/html; charset=utf-8")
            return self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})
        except (IndexError, ValueError) as exc:
            return self._json(HTTPStatus.NOT_FOUND, {"error": str(exc)})

    def do_POST(self) -> None:
        if not self._host_ok():
            return self._json(HTTPStatus.FORBIDDEN, {"error": "unknown Host header"})
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            return self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send JSON"})
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "request too large"})
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("send a JSON object")
            return self._json(HTTPStatus.OK, self.app.post(urlparse(self.path).path, body))
        except LookupError as exc:
            return self._json(HTTPStatus.CONFLICT, {"error": str(exc).strip("'\"")})
        except ValueError as exc:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})


def make_server(port: int = 8239, host: str = "127.0.0.1", app: ReviewApp | None = None) -> ThreadingHTTPServer:
    """A bound (not yet serving) server; `PortInUseError` when the port is taken.

    Binding comes first so a taken port is reported before the run is loaded; `attach` the app
    before serving."""
    handler = type("ReviewHandler", (_Handler,), {"app": app})
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        if exc.errno in (98, 48, 10048):  # EADDRINUSE on Linux, macOS, Windows
            raise PortInUseError(f"port {port} on {host} is in use (another `review serve`?): "
                                 f"pass --port with a free one") from exc
        raise
    server.daemon_threads = True
    return server


def attach(server: ThreadingHTTPServer, app: ReviewApp) -> None:
    """Serve `app` on a server from `make_server`."""
    server.RequestHandlerClass.app = app  # type: ignore[attr-defined]
