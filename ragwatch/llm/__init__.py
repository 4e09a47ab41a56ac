"""The only door to LLMs in ragwatch: one client for every call, offline by default.

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
