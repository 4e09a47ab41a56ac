"""Retry policy for provider faults: classify an exception, pick a delay (flow control: `limiter.py`).

Transient faults (429, 5xx, timeouts, dropped connections) are retried with exponential backoff and
full jitter, honouring Retry-After. Auth errors, bad requests and unknown models fail fast.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import random
import re
import time
from typing import Literal

from ragwatch.llm.backend import load_litellm

Kind = Literal["rate_limit", "transient", "fatal"]
_Kinds = tuple[type[BaseException], ...]


@functools.cache
def _exception_kinds() -> tuple[_Kinds, _Kinds]:
    """litellm's transient and fatal exception classes (read on the first failure, not at import)."""
    litellm = load_litellm()
    transient = (
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        asyncio.TimeoutError,
        ConnectionError,
    )
    fatal = (
        litellm.AuthenticationError,
        litellm.PermissionDeniedError,
        litellm.BadRequestError,
        litellm.NotFoundError,
        litellm.UnprocessableEntityError,
    )
    return transient, fatal


_KEYLIKE = re.compile(r"(?i)(api[_-]?key[^:=]{0,20}[:=]\s*|bearer\s+|key provided:\s*)\S+")


class FatalLLMError(Exception):
    """A configuration problem no retry can fix (missing key, missing model, bad request)."""


def classify(exc: BaseException) -> Kind:
    litellm = load_litellm()
    transient, fatal = _exception_kinds()
    if isinstance(exc, litellm.RateLimitError):
        return "rate_limit"
    if isinstance(exc, (FatalLLMError, *fatal)):
        return "fatal"
    if is_auth_error(exc):
        return "fatal"  # litellm maps a missing key to a 500; no retry can fix it
    if isinstance(exc, transient):
        return "transient"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return "rate_limit"
        if status >= 500 or status == 408:
            return "transient"
        return "fatal"
    return "transient" if isinstance(exc, litellm.APIError) else "fatal"


def is_auth_error(exc: BaseException) -> bool:
    litellm = load_litellm()
    return isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError) or (
        "Missing credentials" in str(exc) or "api_key client option must be set" in str(exc)
    )


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (Retry-After as seconds or an HTTP date), if any."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if not headers:
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value is None:
            continue
        try:
            return max(float(value), 0.0)
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(email.utils.mktime_tz(parsed) - time.time(), 0.0)
    return None


def backoff_s(retry_index: int, base_s: float, max_s: float) -> float:
    """Full-jitter exponential backoff: uniform in [0, min(max, base * 2**i)], at least base/2."""
    ceiling = min(max_s, base_s * 2**retry_index)
    return max(random.uniform(0.0, ceiling), min(base_s / 2, ceiling))


def scrub(text: str, secret: str | None) -> str:
    """Remove an API key (and key-like fragments providers echo back) from a message."""
    if secret:
        text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub(lambda m: m.group(1) + "[redacted]", text)


def describe(exc: BaseException, secret: str | None) -> str:
    message = str(exc) or type(exc).__name__
    # litellm appends long help banners; the first lines carry the reason
    message = " ".join(message.split("\n")[:3]).strip()
    return scrub(f"{type(exc).__name__}: {message}"[:600], secret)
