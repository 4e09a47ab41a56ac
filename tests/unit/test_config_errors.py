"""A mistyped config key names the nearest known key of its block and the page of every key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragwatch.config import FullConfig
from ragwatch.config_loader import REFERENCE_PAGE, ConfigError, load_config
from ragwatch.monitoring.settings import MonitorConfig
from ragwatch.preflight import preflight

ROOT = Path(__file__).resolve().parents[2]


def _error(tmp_path: Path, text: str, model=FullConfig) -> str:
    path = tmp_path / "ragwatch.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, model)
    return str(caught.value)


def test_a_mistyped_key_names_the_nearest_key_and_the_reference_page(tmp_path):
    message = _error(tmp_path, "evaluate:\n  system:\n    rag: {kind: builtin, topk: 5}\n")
    assert "evaluate.system.rag.topk: unknown key; did you mean 'top_k'?" in message
    assert message.rstrip().endswith(f"every key, its type and default: {REFERENCE_PAGE}")
    assert "ragwatch/config.py" not in message
    assert (ROOT / REFERENCE_PAGE).is_file()


def test_keys_inside_lists_and_optional_blocks_are_matched(tmp_path):
    message = _error(tmp_path, (
        "testset:\n  imports:\n    - {format: jsonl, path: qa.jsonl, relevance_knd: document}\n"
        "logs: {path: answers.jsonl, windw: 1d}\n"
        "evaluate:\n  retrieval: {match: {onn: auto}}\n"))
    assert "testset.imports.0.relevance_knd: unknown key; did you mean 'relevance_kind'?" in message
    assert "logs.windw: unknown key; did you mean 'window'?" in message
    assert "evaluate.retrieval.match.onn: unknown key; did you mean 'on'?" in message
    assert message.count(REFERENCE_PAGE) == 1  # said once, after every problem


def test_no_near_key_lists_the_keys_of_the_block(tmp_path):
    message = _error(tmp_path, "zzz: 1\n")
    assert "zzz: unknown key; the keys here: ingest, testset, evaluate, retrieval_only, reports_dir, logs" in message


def test_a_judge_block_name_is_suggested_too(tmp_path):
    message = _error(tmp_path, "evaluate:\n  judges:\n    faithfulnes: {}\n")
    assert "unknown key 'faithfulnes' in judges" in message and "did you mean 'faithfulness'?" in message


def test_a_judge_option_is_matched_against_that_judges_options(tmp_path):
    message = _error(tmp_path, "evaluate:\n  judges:\n    faithfulness: {statments: sentences}\n")
    assert "evaluate.judges.faithfulness.statments: unknown key; did you mean 'statements'?" in message
    assert "validation error for" not in message  # pydantic's own text, nested, is not what a user reads


def test_the_monitor_config_suggests_its_own_keys(tmp_path):
    message = _error(tmp_path, "logs: {path: a.jsonl}\nwindw: {length: 1d}\ndrift: {tolerence: 0.2}\n",
                     MonitorConfig)
    assert "windw: unknown key; did you mean 'window'?" in message
    assert "drift.tolerence: unknown key; did you mean 'tolerance'?" in message


def test_preflight_and_run_py_say_it_before_anything_runs(tmp_path):
    config = tmp_path / "ragwatch.yaml"
    config.write_text("evaluate:\n  retrieval: {kss: [1, 3]}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"evaluate\.retrieval\.kss: unknown key; did you mean 'ks'\?"):
        preflight("full", config)
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "config", "show", "--config", str(config)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert "did you mean 'ks'?" in done.stderr and REFERENCE_PAGE in done.stderr
