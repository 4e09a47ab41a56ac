"""The only door to LLMs in ragwatch: one client for every call, offline by default.

Example:
    >>> from ragwatch.llm import LLMClient, LLMSettings
    >>> client = LLMClient(LLMSettings(model="local/smollm2-135m-instruct", cache=False))
    >>> client.generate("Say hi", mock_response="hi").text
    'hi'
"""

import os

# litellm fetches a price map from the internet at import time unless told otherwise; this must
# run before the first `import litellm` anywhere in the process.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from ragwatch.llm.client import LLMClient
from ragwatch.llm.types import Generation, LLMSettings, TokenLogprob, Usage

__all__ = ["Generation", "LLMClient", "LLMSettings", "TokenLogprob", "Usage"]
