"""API keys from a ZenML secret, for steps that call hosted models.

`zenml secret create ragwatch_api_keys --OPENAI_API_KEY=sk-...` makes the key available as the
environment variable that `api_key_env` names, inside the step process only. Variables the
environment already has win, and values are never logged or stored in artifacts.
"""

from __future__ import annotations

import os

from zenml.client import Client

SECRET_NAME = os.environ.get("RAGWATCH_SECRET_NAME", "ragwatch_api_keys")


def export_api_keys(secret_name: str = SECRET_NAME) -> list[str]:
    """Put the secret's values into os.environ (unless set); returns the names, never the values."""
    try:
        secret = Client().get_secret(secret_name)
    except (KeyError, RuntimeError):
        return []
    exported = []
    for name, value in secret.secret_values.items():
        if name not in os.environ:
            os.environ[name] = value
            exported.append(name)
    return exported
