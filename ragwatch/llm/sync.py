"""Sync over async: `run_sync(coro)` runs a coroutine on the one background event loop and waits.

`LLMClient.generate` / `generate_many` are blocking calls over the async client; they go through here.

Example:
    >>> run_sync(asyncio.sleep(0, result="done"))
    'done'
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
LOOP_THREAD = "ragwatch-llm-loop"

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """One long-lived event loop on a daemon thread serves every sync call: litellm caches async
    HTTP clients per loop, so a fresh `asyncio.run` per call would strand them; and it also works
    when the caller already runs a loop (notebooks)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name=LOOP_THREAD, daemon=True).start()
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    loop = _background_loop()
    if threading.current_thread().name == LOOP_THREAD:
        coro.close()
        raise RuntimeError("generate()/generate_many() block; inside async code await agenerate()/agenerate_many()")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()
