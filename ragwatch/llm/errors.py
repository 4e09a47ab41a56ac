"""A failed LLM call in words: the kind of fault and the address it happened at, never the key.

litellm wraps the faults of an OpenAI-compatible server in its own classes (a refused connection
arrives as an `InternalServerError` with status 500), so the kind is read from the exception's chain
of causes, innermost first: a refused or dropped connection, an unknown host, a timeout, a reply that
is not JSON, then an HTTP status a server really sent. The address is the configured `api_base`, else
the URL the request went to, reduced to scheme, host, port and path (no query, no user info); the
whole text is scrubbed of the key (`retry.scrub`). A fault of none of these kinds keeps its class name
and message (`retry.describe`).

Example:
    >>> explain(exc, secret=None, address="http://127.0.0.1:18113/v1")  # doctest: +SKIP
    'connection refused: http://127.0.0.1:18113/v1'
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from ragwatch.llm.retry import describe, scrub

MAX_DETAIL_CHARS = 200
_LIBRARY = "litellm"  # its exceptions carry made-up statuses and placeholder requests: not evidence
# the same kinds said in words, for libraries that raise them without a builtin cause
_TEXT_KINDS = (
    (re.compile(r"(?i)connection refused|errno 111\b|errno 61\b|connect call failed"), "connection refused"),
    (re.compile(r"(?i)name or service not known|nodename nor servname|getaddrinfo failed|"
                r"temporary failure in name resolution|no address associated"), "host not found"),
    (re.compile(r"(?i)server disconnected|connection reset|connection aborted|remote end closed|"
                r"incomplete chunked read|peer closed connection"), "connection dropped"),
    (re.compile(r"(?i)timed out|timeout"), "timed out"),
)


def explain(exc: BaseException, *, secret: str | None, address: str | None = None,
            timeout_s: float | None = None) -> str:
    """`kind: address` (an HTTP status adds the server's message in brackets), scrubbed of `secret`."""
    chain = causes(exc)
    where = clean_url(address) if address else request_url(chain)
    kind, detail = _builtin_kind(chain, timeout_s)
    if kind is None:
        status, detail = _http_status(chain)
        if status is not None:
            phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
            kind = f"HTTP {status} {phrase}".rstrip()
    if kind is None:
        kind, detail = _text_kind(chain, timeout_s)
    if kind is None:  # none of the known kinds: the class and message say the most
        text = describe(exc, secret)
        return scrub(f"{text} ({where})", secret) if where else text
    text = f"{kind}: {where}" if where else kind
    if detail:
        text += f" ({_short(detail)})"
    return scrub(text, secret)


def causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from, outermost first (as Python's traceback follows them)."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and all(link is not seen for seen in chain) and len(chain) < 32:
        chain.append(link)
        link = link.__cause__ if link.__cause__ is not None else (
            None if link.__suppress_context__ else link.__context__)
    return chain


def clean_url(url: str) -> str:
    """Scheme, host, port and path of `url`: no user info, query or fragment (where keys hide)."""
    parts = urlsplit(str(url).strip())
    if not parts.scheme or not parts.netloc:
        return re.split(r"[?#]", str(url).strip(), maxsplit=1)[0]
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}"


def request_url(chain: list[BaseException]) -> str | None:
    """The URL the innermost exception that knows its request was sending to, cleaned; None if none does."""
    for link in reversed(chain):
        if _from_library(link):
            continue
        try:
            request = getattr(link, "request", None)  # httpx raises when an exception has no request
        except RuntimeError:
            continue
        url = getattr(request, "url", None)
        if url is not None and str(url):
            return clean_url(str(url))
    return None


def _builtin_kind(chain: list[BaseException], timeout_s: float | None) -> tuple[str | None, str | None]:
    """(kind, detail) of the innermost cause Python or the HTTP library raised, else (None, None)."""
    for link in reversed(chain):  # the innermost cause, not the wrapper's guess
        name = type(link).__name__
        if isinstance(link, ConnectionRefusedError):
            return "connection refused", None
        if isinstance(link, socket.gaierror):
            return "host not found", None
        if isinstance(link, ssl.SSLError | ssl.CertificateError):
            return "TLS failed", str(link)
        if isinstance(link, ConnectionResetError | ConnectionAbortedError | BrokenPipeError):
            return "connection dropped", None
        if isinstance(link, TimeoutError) or ("Timeout" in name and not _from_library(link)):
            return _timed_out(timeout_s), None
        if "Disconnected" in name or name == "RemoteProtocolError":
            return "connection dropped", None
        if isinstance(link, json.JSONDecodeError):
            return "the reply is not JSON", str(link)
    return None, None


def _http_status(chain: list[BaseException]) -> tuple[int | None, str | None]:
    """The status a server sent (innermost exception outside litellm that has one) and its message."""
    for link in reversed(chain):
        if _from_library(link):
            continue
        status = getattr(link, "status_code", None)
        response = getattr(link, "response", None)
        if not isinstance(status, int):
            status = getattr(response, "status_code", None)
        if isinstance(status, int) and 100 <= status <= 599:
            return status, _server_message(link)
    return None, None


def _server_message(link: BaseException) -> str | None:
    body: Any = getattr(link, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)
    if isinstance(body, str) and body.strip():
        return body
    text = re.sub(r"^Error code: \d+ - ", "", str(link)).strip()
    return text.split("\n", 1)[0] or None


def _text_kind(chain: list[BaseException], timeout_s: float | None) -> tuple[str | None, str | None]:
    text = " ".join(str(link) for link in chain)
    for pattern, kind in _TEXT_KINDS:
        if pattern.search(text):
            return (_timed_out(timeout_s) if kind == "timed out" else kind), None
    if any("Connection" in type(link).__name__ for link in chain):
        innermost = chain[-1]
        return "connection failed", f"{type(innermost).__name__}: {innermost}"
    return None, None


def _timed_out(timeout_s: float | None) -> str:
    return f"timed out after {timeout_s:g} s" if timeout_s else "timed out"


def _from_library(link: BaseException) -> bool:
    return type(link).__module__.split(".", 1)[0] == _LIBRARY


def _short(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


UNREACHABLE = ("connection refused", "host not found", "connection dropped", "connection failed", "timed out")
"""The kinds `explain` gives a server that could not be reached or did not answer in time."""
_UNREACHABLE = re.compile(r"(?:^|: )(?:" + "|".join(UNREACHABLE) + r")\b")


def is_unreachable(reason: str) -> bool:
    """Whether an error `explain` wrote (possibly behind "gave up after ...: ") says the server was unreachable."""
    return _UNREACHABLE.search(reason) is not None
