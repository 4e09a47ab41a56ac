"""Answer checks without an LLM judge: the system's own retrieval and the lexical grounding of its answers
(`system_metrics`), and the handcrafted keyword tests (`e2e`)."""
