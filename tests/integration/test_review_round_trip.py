"""Human labels round trip on a temporary ZenML store: run -> review export -> labels -> review import
-> evaluate shows the prediction-powered estimate; bad label files; labels accumulating.

The judge is a fake OpenAI-compatible server (a stable 1-5 score per prompt) and the system under
test a Python callable, so the test exercises our plumbing, not a model.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest
from zenml.client import Client

from ragwatch_zenml import cli
from tests.fake_llm_server import FakeLLMServer, first_user_text
from tests.integration.conftest import write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODEL = "ragwatch-review-rag"
GOOD = "The local orchestrator is the default orchestrator of ZenML; it runs pipelines locally."
HUMAN = {"local-default": "5", "failure-hooks": "2", "orchestrator-role": "4"}  # what a reviewer wrote


def _likert(body: dict) -> str:
    digest = int(hashlib.sha256(first_user_text(body).encode()).hexdigest(), 16)
    return json.dumps({"reasoning": "compared with the reference", "score": 1 + digest % 5})


@pytest.fixture
def config(tmp_path: Path, tiny_corpus: Path, oracle_module, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_JUDGE_KEY", "sk-fake")
    oracle_module({"*": GOOD})
    with FakeLLMServer(responder=_likert, lifetime_s=900) as server:
        judge = {"model": "openai/fake-judge", "api_base": server.base_url, "api_key_env": "FAKE_JUDGE_KEY",
                 "max_tokens": 64, "cache": False}
        yield write_config(tmp_path / "cfg", tiny_corpus, synthetic=False,
                           system={"model_name": MODEL, "rag": {"kind": "callable", "callable": "fixed_rag:answer"}},
                           judges={"llm": judge, "enabled": ["correctness", "similarity"]},
                           gate={"gated_metrics": ["similarity"]})


def _fill(path: Path, labels: dict[str, str]) -> None:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows, fields = list(reader), reader.fieldnames
    for row in rows:
        row["label:correctness"] = labels.get(row["item_id"], "")
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _human_labels():
    versions = Client().list_artifact_versions(name="human_labels", sort_by="desc:created", size=1, hydrate=True)
    return versions.items[0]


def test_round_trip_bad_files_and_accumulation(config: Path, tmp_path: Path, capsys) -> None:
    assert cli.main(["full", "--config", str(config)]) == 0
    capsys.readouterr()

    out_dir = tmp_path / "reviews"
    assert cli.main(["review", "export", "--n", "3", "--metric", "correctness", "--out", str(out_dir)]) == 0
    printed = capsys.readouterr().out
    assert "3 items" in printed and "label:correctness" in printed
    csv_path = next(out_dir.glob("*-review.csv"))
    assert len(list(out_dir.glob("*-review.jsonl"))) == 1
    _fill(csv_path, HUMAN)

    assert cli.main(["review", "import", str(csv_path)]) == 0
    assert "3 new" in capsys.readouterr().out
    version = _human_labels()
    assert version.run_metadata["model_name"] == MODEL and version.run_metadata["added"] == 3
    linked = Client().list_artifact_versions(name="human_labels", model=MODEL, size=10)
    assert version.id in {v.id for v in linked.items}

    assert cli.main(["evaluate", "--config", str(config)]) == 0
    printed = capsys.readouterr().out
    assert "with human labels (PPI++" in printed
    after = printed.split("with human labels (PPI++")[1].splitlines()
    assert any(row.startswith("correctness ") and "3 labels of 3 items" in row for row in after), printed
    run = Client().list_pipeline_runs(sort_by="desc:created", size=1, hydrate=True).items[0]
    estimate = run.run_metadata["human_labels"]["metrics"]["correctness"]
    assert estimate["n_labels"] == 3 and estimate["score"] == pytest.approx((5 + 2 + 4) / 3)  # every item labelled
    assert run.model_version.run_metadata["human_labels"]["metrics"]["correctness"]["n_labels"] == 3
    assert cli.main(["calibrate", "--labels"]) == 0
    table = capsys.readouterr().out
    assert "| correctness | graded | 3 | Spearman |" in table and "weighted kappa" in table
    metrics = run.steps["attach_human_labels"].outputs["labelled_judge_metrics"][0].load().metrics
    assert metrics["correctness"].labelled.method == "ppi++"
    assert metrics["similarity"].labelled is None

    # A bad file: an unknown id, a label off the 1-5 scale, a duplicate, broken JSON; one good change.
    run_id = str(run.id)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"item_id": "local-default", "run_id": run_id, "label:correctness": 3}),
        json.dumps({"item_id": "no-such-item", "run_id": run_id, "label:correctness": 4}),
        json.dumps({"item_id": "failure-hooks", "run_id": run_id, "label:correctness": 9}),
        "{not json",
        json.dumps({"item_id": "local-default", "run_id": run_id, "label:correctness": 1}),
    ]) + "\n")
    assert cli.main(["review", "import", str(bad)]) == 2
    printed = capsys.readouterr().out
    assert "1 changed" in printed and "4 row(s) or cell(s) not imported" in printed
    for line_no, words in ((2, "unknown item id"), (3, "outside the metric's scale"), (4, "not valid JSON"),
                           (5, "duplicate")):
        assert any(f"line {line_no}" in row and words in row for row in printed.splitlines()), (line_no, printed)

    labels = _human_labels().load()
    values = {lab.item_id: lab.value for lab in labels.for_metric("correctness").values()}
    assert values == {"local-default": 3.0, "failure-hooks": 2.0, "orchestrator-role": 4.0}  # later wins
    assert [(c.item_id, c.old, c.new) for c in labels.history] == [("local-default", 5.0, 3.0)]
    assert len(labels.imports) == 2

    # A file with nothing valid is refused and stores nothing.
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"item_id": "ghost", "run_id": run_id, "label:correctness": 2}) + "\n")
    before = _human_labels().id
    assert cli.main(["review", "import", str(empty)]) == 2
    assert "no valid label" in capsys.readouterr().err
    assert _human_labels().id == before
