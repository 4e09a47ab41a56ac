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
                        prompt_tokens=2000, completion_tokens=120, wall_s=8.0)
    dry = DryClient(LLMSettings(model="gpt-4o-mini", max_tokens=500), role="generator", history=[other])
    dry.generate_many(["q1", "q2"], desc="rag answers")
    count = dry.stages["rag answers"]
    assert count.reply_basis == "history of another model" and count.completion_tokens == 2 * 30
    assert count.rate is None  # a local model's seconds per call say nothing about a hosted one


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


def corpus_config(tmp_path: Path, name: str, docs: list[str]) -> FullConfig:
    """A config whose corpus is `docs` of the sample, copied under a hidden folder (as a clone in `~/.x/` is):
    the folder's name must not make two corpora look alike."""
    corpus = tmp_path / ".work" / name
    for relative in docs:
        (corpus / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "data" / "sample" / "zenml_docs" / relative, corpus / relative)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"ingest": {"corpus": {"paths": [str(corpus)]}}}))
    return load_config(path, FullConfig)


def ingest_chunks(estimate) -> int:
    note = next(n for n in estimate.notes if n.startswith("ingest: "))
    return int(note.split()[1])


def test_the_chunk_cache_never_serves_another_corpus(tmp_path, no_network):
    """Two corpora estimated in one cache, each then again: each counts its own chunks, cached or not; a
    changed file or other chunking settings chunk again."""
    from ragwatch.corpus.chunking import chunk_documents
    from ragwatch.corpus.documents import load_documents
    from ragwatch.estimate.workload import corpus_key
    from ragwatch.indexing.embeddings import get_embedder

    small = corpus_config(tmp_path, "small", DOCS[:1])
    large = corpus_config(tmp_path, "large", DOCS)

    def truth(config: FullConfig) -> int:
        embedder = get_embedder(config.ingest.embedding)
        documents = load_documents(config.ingest.corpus.paths).documents
        return len(chunk_documents(documents, config.ingest.chunking, embedder.count_tokens,
                                   max_window=embedder.max_input_tokens))

    n_small, n_large = truth(small), truth(large)
    assert n_small < n_large
    assert corpus_key(small) != corpus_key(large)
    for config, n in [(small, n_small), (large, n_large), (small, n_small), (large, n_large)]:
        assert ingest_chunks(estimate_pipeline("ingest", config, history=[])) == n
    assert len(list((tmp_path / "cache" / "estimate").glob("chunks-*.json"))) == 2

    first = Path(small.ingest.corpus.paths[0]) / DOCS[0]
    key = corpus_key(small)
    first.write_text(first.read_text() + "\n\nA new closing paragraph about stacks.\n" * 40)
    assert corpus_key(small) != key
    assert ingest_chunks(estimate_pipeline("ingest", small, history=[])) == truth(small) > n_small
    finer = small.model_copy(deep=True)
    finer.ingest.chunking.max_tokens = 100
    assert corpus_key(finer) != corpus_key(small)
    assert ingest_chunks(estimate_pipeline("ingest", finer, history=[])) == truth(finer) > truth(small)


def test_stage_times_come_from_the_idle_runs_of_this_model_and_stage(tmp_path, no_network):
    """The history holds idle runs (0.5 s of wall per judge call), runs under load (2-4 s), another model's
    fast runs and another stage's: the judge's time is its calls at the idle rate, and the table says so;
    a stage this model never ran gets a rough default, labelled."""
    from ragwatch.llm.history import StageRecord

    stage = "judge correctness stage 1"
    per_call = [2.0, 0.5, 3.1, 0.52, 4.0, 2.6, 0.55, 3.3]  # oldest first; the newest run was under load too
    history = [StageRecord(time=1.7e9 + 3600 * k, model="gpt-4o-mini", stage=stage, requests=40, calls=40,
                           prompt_tokens=40 * 600, completion_tokens=40 * 50, latency_s=40 * 40 / 8 * s,
                           wall_s=40 * s, run_id=f"run{k}") for k, s in enumerate(per_call)]
    history.append(StageRecord(time=1.8e9, model="gpt-4.1-nano", stage=stage, calls=40, wall_s=40 * 0.05, run_id="x"))
    history.append(StageRecord(time=1.8e9, model="gpt-4o-mini", stage="rag answers", calls=40, wall_s=40 * 9.0,
                               run_id="y"))
    config = load_config(write_config(tmp_path, ["correctness"]), FullConfig)
    estimate = estimate_pipeline("evaluate", config, history=history)
    judge = next(r for r in estimate.rows if r.stage == stage)
    assert judge.time_basis == "history"
    assert judge.wall_s == pytest.approx(judge.calls * 0.52)
    assert "0.52 s/call: the 0.25 quantile of 8 runs (320 calls" in judge.time_source
    answers = next(r for r in estimate.rows if r.stage == "rag answers")
    assert answers.wall_s == pytest.approx(answers.calls * 9.0)  # its own record, not the judge's rate
    text = format_estimate(estimate)
    assert f"  {stage}: " in text and "= 7 x 0.52 s/call" in text

    bare = estimate_pipeline("evaluate", config, history=[])
    guessed = next(r for r in bare.rows if r.stage == stage)
    assert guessed.time_basis == "rule of thumb" and "no run recorded: rough default" in guessed.time_source
    assert "no history to stand on" in format_estimate(bare)


def test_the_accuracy_benchmark_replays_the_estimate_against_a_recorded_run(tmp_path, no_network):
    """`python -m benchmarks estimate_accuracy`, run as a user runs it, on a history of two runs of the same
    config: one under load (3x slower), then an idle one. Right after the idle run the estimate is its times
    (ratio 1.00 per stage); held out (only the loaded run before it) every stage is 3x and marked."""
    from ragwatch.llm.history import StageRecord

    def bench(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "benchmarks", "estimate_accuracy", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout
    path = write_config(tmp_path, ["correctness"])
    planned = estimate_pipeline("full", load_config(path, FullConfig), history=[])
    idle = {"testset: generating questions": 1.2, "rag answers": 0.4, "judge correctness stage 1": 0.25}
    history = tmp_path / "history.jsonl"
    lines = []
    for run, started, slower in (("loaded", 1.7e9, 3.0), ("idle", 1.7e9 + 3600, 1.0)):
        for k, row in enumerate(r for r in planned.rows if r.calls):
            lines.append(StageRecord(time=started + k, model=row.model, stage=row.stage, requests=row.calls,
                                     calls=row.calls, prompt_tokens=row.prompt_tokens, completion_tokens=50 * row.calls,
                                     wall_s=row.calls * idle[row.stage] * slower, run_id=run).model_dump_json())
    history.write_text("\n".join(lines) + "\n")
    out = bench(str(history), "--config", str(path))
    assert out.startswith("run idle: 3 records")
    part1, part2 = out.split("\n2. ")
    for stage in idle:
        assert any(line.startswith(stage) and " 1.00  " in line for line in part1.splitlines())
        assert any(line.startswith(stage) and " 1.00  " in line for line in part2.splitlines())
    assert " 1.00" in next(line for line in part2.splitlines() if line.startswith("TOTAL"))
    held_out = bench(str(history), "--config", str(path), "--held-out")
    assert "rates from 3 records before it (held out)" in held_out
    assert sum(" 3.00 !  " in line for line in held_out.splitlines()) == 2 * len(idle)
