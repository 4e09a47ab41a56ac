"""The judge's server is down: `run.py full` exits 3 and says why in words a person can act on, the
kind of fault and the address ("connection refused: http://127.0.0.1:<port>/v1"), never the key.

The generator is litellm's `mock_response` and the judge an OpenAI-compatible address nothing listens on,
so the only fault is the judge's; retries are quick so the test waits for none of the backoff.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ragwatch_zenml import cli
from tests.integration.conftest import write_config

pytestmark = [pytest.mark.integration]

SECRET = "sk-judge-secret-0123456789"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed on return: nothing listens there


def test_a_judge_that_is_down_exits_3_naming_the_fault_and_the_address(
        tmp_path: Path, tiny_corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_DOWN_KEY", SECRET)
    address = f"http://127.0.0.1:{_free_port()}/v1"
    config = write_config(
        tmp_path, tiny_corpus, synthetic=False,
        system={"model_name": "ragwatch-judge-down-rag",
                "generator": {"model": "openai/mock-generator", "max_tokens": 64,
                              "extra": {"mock_response": "The local orchestrator is the default."}}},
        judges={"enabled": ["faithfulness", "correctness"],
                "llm": {"model": "openai/judge", "api_base": address, "api_key_env": "JUDGE_DOWN_KEY",
                        "max_retries": 4, "retry_base_s": 0.001, "retry_max_s": 0.01, "max_tokens": 160}},
        e2e={"enabled": False},
        gate={"gated_metrics": ["faithfulness"]},
    )
    assert cli.main(["full", "--config", str(config)]) == 3
    captured = capsys.readouterr()
    out = captured.out + captured.err
    last = captured.out.rstrip().splitlines()[-1]
    assert last.startswith("could not evaluate: the judges failed on "), last
    assert f"most often: gave up after 5 attempt(s): connection refused: {address})" in last, last
    assert "InternalServerError" not in last
    assert SECRET not in out
