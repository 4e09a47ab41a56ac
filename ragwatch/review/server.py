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

A malformed request is answered, never dropped: 400 with the reason (a Content-Length that is not a
whole number, JSON that does not parse or nests too deeply, a field of the wrong type), 413 past
`MAX_BODY`, 408 when a body stops arriving for `READ_TIMEOUT_S`; a bug answers 500 and the page stays up.

Example:
    >>> server = make_server(8239, app=ReviewApp(session))  # doctest: +SKIP
    >>> server.serve_forever()  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import re
import socket
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
READ_TIMEOUT_S = 10.0  # a client that stops sending mid-request holds a thread no longer than this
LINGER_S = 2.0  # after an early answer, how long the rest of a body is read (and dropped) before closing
LINGER_BYTES = 1024 * 1024
MAX_ERROR_CHARS = 300  # an error quoting the request (a huge value) is cut: the reason comes first

log = logging.getLogger("ragwatch.review")


class _Refused(Exception):
    """A request answered with `status` and `reason` before its body was read."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


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
    timeout = READ_TIMEOUT_S  # socketserver sets it on the connection: every read is bounded

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
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # the tab closed mid-answer: what was stored stays stored

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _error(self, status: int, reason: str) -> None:
        if len(reason) > MAX_ERROR_CHARS:
            reason = reason[:MAX_ERROR_CHARS - 3] + "..."
        self._json(status, {"error": reason})

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
            return self._error(HTTPStatus.NOT_FOUND, str(exc))
        except Exception as exc:  # a bug answers 500; the server and the other tabs carry on
            log.exception("GET %s failed", url.path)
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(exc).__name__}: {exc}")

    def do_POST(self) -> None:
        try:
            body = self._read_json()
        except _Refused as exc:
            self._error(exc.status, str(exc))
            return self._linger()
        try:
            return self._json(HTTPStatus.OK, self.app.post(urlparse(self.path).path, body))
        except LookupError as exc:
            return self._error(HTTPStatus.CONFLICT, str(exc).strip("'\""))
        except ValueError as exc:
            return self._error(HTTPStatus.BAD_REQUEST, str(exc))
        except Exception as exc:  # a bug answers 500; the server and the other tabs carry on
            log.exception("POST %s failed", self.path)
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(exc).__name__}: {exc}")

    def _read_json(self) -> dict[str, Any]:
        """The request's JSON object; `_Refused` with the status and reason when there is none."""
        if not self._host_ok():
            raise _Refused(HTTPStatus.FORBIDDEN, "unknown Host header")
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            raise _Refused(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send JSON")
        length = self._content_length()
        if length > MAX_BODY:
            raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                           f"request too large: {length} bytes, at most {MAX_BODY} are read")
        try:
            raw = self.rfile.read(length)
        except TimeoutError:
            raise _Refused(HTTPStatus.REQUEST_TIMEOUT, f"the body did not arrive: {length} bytes announced, "
                           f"then nothing more for {self.timeout:g} s") from None
        if len(raw) < length:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"the body ended after {len(raw)} of the {length} bytes "
                           "its Content-Length announced")
        try:
            body = json.loads(raw or b"{}")
        except RecursionError:
            raise _Refused(HTTPStatus.BAD_REQUEST, "the JSON nests too deeply: send a flat object") from None
        except UnicodeDecodeError as exc:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"the body is not UTF-8 text: {exc}") from None
        except ValueError as exc:  # json.JSONDecodeError, or an integer too long to convert
            raise _Refused(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _Refused(HTTPStatus.BAD_REQUEST, f"send a JSON object, not a {type(body).__name__}")
        return body

    def _content_length(self) -> int:
        """The announced body length (0 when there is none); `_Refused` unless it is one whole number."""
        if self.headers.get("Transfer-Encoding"):
            raise _Refused(HTTPStatus.LENGTH_REQUIRED,
                           "send the body with a Content-Length (a chunked body is not read)")
        values = {value.strip() for value in self.headers.get_all("Content-Length") or []}
        if len(values) > 1:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"conflicting Content-Length headers: {sorted(values)}")
        text = values.pop() if values else "0"
        if not re.fullmatch(r"[0-9]{1,18}", text):
            raise _Refused(HTTPStatus.BAD_REQUEST,
                           f"Content-Length {text[:40]!r} is not the body's size in bytes (a whole number >= 0)")
        return int(text)

    def _linger(self) -> None:
        """After answering before the body was read: end our side, then read (and drop) what the client
        still sends for a moment, so closing does not reset the connection before it reads the answer."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(LINGER_S)
            left = LINGER_BYTES
            while left > 0:
                chunk = self.connection.recv(min(65536, left))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:  # timed out or reset: the answer was sent, the connection ends either way
            pass


def make_server(port: int = 8239, host: str = "127.0.0.1", app: ReviewApp | None = None, *,
                read_timeout_s: float = READ_TIMEOUT_S) -> ThreadingHTTPServer:
    """A bound (not yet serving) server; `PortInUseError` when the port is taken.

    Binding comes first so a taken port is reported before the run is loaded; `attach` the app
    before serving. `read_timeout_s` bounds every read of a request (408 when a body stalls)."""
    if not read_timeout_s > 0:
        raise ValueError(f"read_timeout_s must be > 0 seconds, got {read_timeout_s}")
    handler = type("ReviewHandler", (_Handler,), {"app": app, "timeout": read_timeout_s})
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
