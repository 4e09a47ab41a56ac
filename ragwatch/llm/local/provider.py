"""The local runtime as a litellm provider: `model="local/<name>"` runs the packaged GGUF model in
this process. `ragwatch.llm.local.register()` installs it; the runtime's `chat` answers each call.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from litellm.llms.custom_llm import CustomLLM, CustomLLMError
from litellm.types.utils import ModelResponse

from ragwatch.llm.local.registry import ModelNotInstalledError, get_model
from ragwatch.llm.models import LOCAL_PREFIX, local_name

_pool_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


class LocalProvider(CustomLLM):
    """litellm handler for `local/<name>`: `chat(name, messages, **params)` answers in OpenAI's shape."""

    def __init__(self, chat: Callable[..., dict[str, Any]]) -> None:
        super().__init__()
        self._chat = chat

    def completion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: ModelResponse,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        name = local_name(model)
        try:
            get_model(name)
            started = time.perf_counter()
            result = self._chat(name, messages, **optional_params)
        except (ModelNotInstalledError, ValueError) as exc:
            # 4xx: litellm maps it to a non-retryable error, and the message says what to install
            raise CustomLLMError(status_code=400, message=str(exc)) from exc
        result.setdefault("id", f"local-{uuid.uuid4().hex}")
        response = ModelResponse(**result)
        response.model = LOCAL_PREFIX + name
        response._hidden_params["local_latency_s"] = time.perf_counter() - started
        return response

    async def acompletion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: ModelResponse,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        # a pool of our own: asyncio's default one has cpu_count + 4 threads (6 here), fewer than the
        # requests the decode engine can take; these threads only wait for the engine
        loop = asyncio.get_running_loop()
        call = functools.partial(
            self.completion,
            model,
            messages,
            api_base,
            custom_prompt_dict,
            model_response,
            print_verbose,
            encoding,
            api_key,
            logging_obj,
            optional_params,
            *args,
            **kwargs,
        )
        return await loop.run_in_executor(_calls_pool(), call)


def _calls_pool() -> ThreadPoolExecutor:
    global _executor
    with _pool_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="ragwatch-local")
        return _executor
