"""`--estimate`: calls, tokens and dollars per role and judge stage, with no LLM call and no network."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ragwatch.config import FullConfig
from ragwatch.config_loader import load_config
from ragwatch.estimate import estimate_pipeline, format_estimate
from ragwatch.estimate.dry import DryClient
from ragwatch.llm import LLMClient, LLMSettings
from ragwatch.llm.history import read_history
from ragwatch.llm.pricing import call_cost, count_tokens
from tests.fake_llm_server import FakeLLMServer, schema_reply

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["component-guide/orchestrators/orchestrators.md", "component-guide/orchestrators/local.md",
        "how-to/build-pipelines/use-failure-success-hooks.md"]
HOSTED = {"model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY", "max_tokens": 200}


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))


def write_config(tmp_path: Path, judges: list[str], *, n_chunks: int = 3, **judge_llm) -> Path:
    corpus = tmp_path / "corpus"
    for relative in DOCS:
        (corpus / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "data" / "sample" / "zenml_docs" / relative, corpus / relative)
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What does component {i} of a stack do?",
                                            "reference_answer": f"Component {i} runs the steps."}) + "\n"
                                for i in range(4)))
    config = {
        "ingest": {"corpus": {"paths": ["corpus"]}},
        "testset": {"generator": HOSTED, "testset": {"n_chunks": n_chunks, "questions_per_chunk": 1},
                    "imports": [{"format": "jsonl", "path": "labelled.jsonl"}]},
        "evaluate": {"system": {"generator": HOSTED}, "e2e": {"enabled": False},
                     "judges": {"enabled": judges, "llm": {**HOSTED, **judge_llm}}},
    }
    path = tmp_path / "hosted.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt or LLM call fails the test."""
    import litellm

    def refuse(*args, **kwargs):
        raise AssertionError("the estimate tried to reach the network or an LLM")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for name in ("completion", "acompletion"):
        monkeypatch.setattr(litellm, name, refuse)


def test_full_estimate_counts_every_role_and_judge_stage(tmp_path, no_network):
    config = load_config(write_config(tmp_path, ["correctness", "answer_relevance", "similarity"]), FullConfig)
    estimate = estimate_pipeline("full", config, history=[])
    rows = {(r.role, r.stage): r for r in estimate.rows}
    assert rows[("testset generator", "testset: generating questions")].calls == 3
    answers = rows[("generator", "rag answers")]
    assert answers.calls == 3 + 4  # 3 synthetic pairs + 4 imported questions
    assert rows[("judge", "judge correctness stage 1")].calls == 7
    assert rows[("judge", "judge answer_relevance stage 1")].calls == 7
    assert not any("similarity" in stage for _, stage in rows)  # no judge call: not in the bill
    for row in estimate.rows:  # replies at max_tokens without history; dollars from litellm's map
        cap = 600 if row.stage.startswith("testset") else 200  # the recipe's own max_tokens, else the role's
        assert row.completion_tokens == row.calls * cap
        assert row.cost_usd == pytest.approx(call_cost("gpt-4o-mini", row.prompt_tokens, row.completion_tokens))
        assert row.prompt_tokens > 100 * row.calls
    assert estimate.cost_usd > 0
    text = format_estimate(estimate)
    assert "TOTAL" in text and "judge correctness stage 1" in text and f"${estimate.cost_usd:.4f}" in text


def test_pipelines_count_only_their_own_calls(tmp_path, no_network):
    config = load_config(write_config(tmp_path, ["correctness"]), FullConfig)
    assert estimate_pipeline("ingest", config, history=[]).rows == []
    testset = {r.role for r in estimate_pipeline("testset", config, history=[]).rows}
    assert testset == {"testset generator"}
    evaluate = {r.role for r in estimate_pipeline("evaluate", config, history=[]).rows}
    assert evaluate == {"generator", "judge"}


def test_budget_below_the_estimate_is_named(tmp_path, no_network):
    config = load_config(write_config(tmp_path, ["correctness"], budget_usd=0.0001), FullConfig)
    estimate = estimate_pipeline("evaluate", config, history=[])
    assert any("budget_usd $0.0001" in note for note in estimate.notes)


def test_cached_calls_are_free_and_history_sets_reply_length():
    prompts = [f"question {i}" for i in range(3)]
    with FakeLLMServer(responder=schema_reply, lifetime_s=60) as server:
        settings = LLMSettings(model="openai/gpt-4o-mini", api_base=server.base_url, max_tokens=100)
        since = time.time()
        LLMClient(settings).generate_many(prompts[:2], desc="rag answers")
        assert server.calls == 2
        dry = DryClient(settings, role="generator", history=read_history(since=since))
        dry.generate_many(prompts, desc="rag answers")
        assert server.calls == 2  # the dry client sent nothing
    count = dry.stages["rag answers"]
    assert (count.requests, count.cached, count.calls) == (3, 2, 1)
    assert count.reply_basis == "history"
    recorded = read_history(since=since)[0]
    assert count.completion_tokens == pytest.approx(recorded.completion_tokens / recorded.calls)
    assert count.prompt_tokens == count_tokens("openai/gpt-4o-mini", [{"role": "user", "content": "question 2"}])


def test_run_py_estimate_offline_with_network_off(tmp_path):
    """`python run.py full --estimate --config configs/hosted.yaml` (gpt-4o-mini for every role) in a
    fresh process whose sockets all refuse to connect."""
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(
        "import socket\n"
        "def _refuse(*a, **k):\n    raise OSError('network is off in this test')\n"
        "socket.socket.connect = _refuse\nsocket.create_connection = _refuse\n"
        "socket.getaddrinfo = _refuse\n")
    env = {**os.environ, "PYTHONPATH": f"{guard}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "RAGWATCH_CACHE_DIR": str(tmp_path / "cache")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "full", "--estimate", "--config",
                           str(ROOT / "configs" / "hosted.yaml")], capture_output=True, text=True, env=env, timeout=120)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-2000:]
    for row in ("testset: generating questions", "reference answers", "rag answers", "judge faithfulness stage 1"):
        assert row in done.stdout
    total = done.stdout.split("\nTOTAL")[1].split("\n")[0]
    assert float(total.split("$")[1].split()[0]) > 0  # a hosted model's run costs something
    print(f"run.py full --estimate (configs/hosted.yaml, cold): {seconds:.1f} s")


def test_batch_roles_are_priced_at_the_batch_rate(tmp_path, no_network):
    online = estimate_pipeline("evaluate", load_config(write_config(tmp_path, ["correctness"]), FullConfig),
                               history=[])
    batch = estimate_pipeline("evaluate", load_config(write_config(tmp_path, ["correctness"], batch=True),
                                                      FullConfig), history=[])
    judge_online = next(r for r in online.rows if r.role == "judge")
    judge_batch = next(r for r in batch.rows if r.role == "judge")
    assert judge_batch.batch and judge_batch.prompt_tokens == judge_online.prompt_tokens
    assert judge_batch.cost_usd == pytest.approx(judge_online.cost_usd / 2)
    assert "[batch]" in format_estimate(batch)


def test_reply_lengths_come_from_another_models_history_when_this_one_has_none():
    from ragwatch.llm.history import StageRecord

    other = StageRecord(time=0, model="local/qwen2.5-0.5b-instruct", stage="rag answers", requests=4, calls=4,
                        prompt_tokens=2000, completion_tokens=120)
    dry = DryClient(LLMSettings(model="gpt-4o-mini", max_tokens=500), role="generator", history=[other])
    dry.generate_many(["q1", "q2"], desc="rag answers")
    count = dry.stages["rag answers"]
    assert count.reply_basis == "history of another model" and count.completion_tokens == 2 * 30
    assert count.latency_s is None  # a local model's latency says nothing about a hosted one


def test_a_cascading_faithfulness_judge_is_counted_at_every_statement_of_unwritten_answers(tmp_path, no_network):
    """With the cascade the local judge asks only where its reply can change a verdict, which depends on words not yet
    written: the estimate counts one call per judged item (an upper bound) and says so."""
    path = write_config(tmp_path, ["faithfulness"], model="local/qwen2.5-coder-1.5b-instruct")
    config = yaml.safe_load(path.read_text())
    config["evaluate"]["judges"]["faithfulness"] = {"cascade": True}  # as `--quick` sets it
    path.write_text(yaml.safe_dump(config))
    estimate = estimate_pipeline("evaluate", load_config(path, FullConfig), history=[])
    judge = [r for r in estimate.rows if r.role == "judge"]
    assert judge and sum(r.calls for r in judge) == 7  # 4 labelled + 3 generated questions, one call each
    assert any("at most these" in note for note in estimate.notes)
