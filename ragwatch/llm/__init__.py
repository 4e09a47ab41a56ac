"""The only door to LLMs in ragwatch: one client for every call, offline by default.

`LLMClient` sends each call (cache, flow control, budget, retries, usage); a stage with `batch: true`
goes out as one provider batch job (`provider_batch.py`). `local/<name>` models run in this process
on the local runtime, whose one door is `ragwatch.llm.local`.

Example:
    >>> from ragwatch.llm import LLMClient, LLMSettings
    >>> client = LLMClient(LLMSettings(model="local/smollm2-135m-instruct", cache=False))
    >>> client.generate("Say hi", mock_response="hi").text
    'hi'
"""

# Light to import: litellm (seconds) loads on first use (backend.py); ragwatch/__init__.py points it at
# its bundled price map first.
from ragwatch.llm.client import LLMClient
from ragwatch.llm.types import Generation, LLMSettings, TokenLogprob, Usage

__all__ = ["Generation", "LLMClient", "LLMSettings", "TokenLogprob", "Usage"]
