"""A new user's first hour, end to end, on files the test writes: their own documents (a PDF, an HTML
page, a DOCX, Markdown and broken files), their own labelled sets in every import format with
document-id relevance, their own config in a directory outside the checkout, `run.py` run from yet
another directory, retrieval only (no LLM at all).

Hand-worked expectations (BM25; every question's words occur in its own documents only):
- jsonl-ice: "paper" at document rank 1; jsonl-gone: its label names no file -> an explicit failure
- csv-rosin: "notes" at rank 1; hf-orbit: "guide" at rank 1
- hf-sourdough: relevant "page" and "notes". Every chunk of the long page outranks the one DOCX
  chunk that mentions sourdough, so ranked by chunk, "notes" falls below rank 3; ranked by document
  (best chunk per document) the page is rank 1 and the notes rank 2: recall@1 = 1/2, recall@3 = 1,
  precision@3 = 2/3
- llamaindex-station: a text label (the reference context), ranked by chunk, at rank 1
Means over the 5 scored questions: hit@1 = 1, recall@1 = (4 + 1/2) / 5 = 0.9, recall@3 = 1,
precision@3 = (4/3 + 2/3) / 5 = 0.4, MRR = 1, nDCG@3 = 1; 1 failed.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# about 2 minutes on an idle machine (six commands, each importing ZenML); far longer on a loaded one
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

PDF_PAGES = [
    "Glacier ice cores record the ancient atmosphere. Bubbles trapped in glacier ice keep old air.",
    "The Vostok drilling station extracted the deepest cores, more than three kilometres long.",
]
SOURDOUGH = ("Sourdough fermentation relies on wild yeast and lactic bacteria. The sourdough starter "
             "ferments flour and water; fermentation gives sourdough its sour taste and its rise. ")
STATION_CONTEXT = PDF_PAGES[1]


def write_corpus(corpus: Path) -> None:
    import docx
    import pymupdf

    corpus.mkdir(parents=True)
    pdf = pymupdf.open()
    for text in PDF_PAGES:
        pdf.new_page().insert_text((72, 72), text, fontsize=10)
    pdf.save(corpus / "paper.pdf")
    paragraphs = "".join(f"<p>{SOURDOUGH * 3}</p>" for _ in range(5))
    (corpus / "page.html").write_text(
        f"<html><head><title>Bread</title><script>var x = 1;</script></head><body><h1>Sourdough</h1>"
        f"{paragraphs}</body></html>", encoding="utf-8")
    document = docx.Document()
    document.add_heading("Violin care", level=1)
    document.add_paragraph("Violin players rub rosin on the bow hair so that the bow grips the strings. "
                           "Rosin is a resin; too much rosin makes a scratchy tone.")
    document.add_paragraph("Unrelated kitchen note: a sourdough loaf was baked.")
    document.save(corpus / "notes.docx")
    (corpus / "guide.md").write_text("# Orbital mechanics\n\nSatellites stay in orbit because their "
                                     "velocity balances gravity: orbital mechanics in short.\n", encoding="utf-8")
    (corpus / "broken.pdf").write_text("this is a text file with a .pdf name", encoding="utf-8")
    (corpus / "corrupt.docx").write_bytes(b"PK\x03\x04 not really a zip archive")


def write_labelled_sets(project: Path) -> None:
    import datasets

    labels = project / "labels"
    labels.mkdir()
    rows = [{"id": "jsonl-ice", "question": "How do glacier ice cores record the ancient atmosphere?",
             "relevant": ["paper"]},
            {"id": "jsonl-gone", "question": "Which chapter was removed?", "relevant": ["gone"]}]
    (labels / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with (labels / "qa.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["qid", "query", "doc_id"])
        writer.writerow(["csv-rosin", "Why do violin players rub rosin on the bow?", "notes"])
    datasets.Dataset.from_list([
        {"id": "hf-orbit", "question": "Why do satellites stay in orbit?", "relevant": ["guide"]},
        {"id": "hf-sourdough", "question": "What does sourdough fermentation rely on?",
         "relevant": ["page", "notes"]},
    ]).save_to_disk(str(labels / "hf"))
    (labels / "rag_dataset.json").write_text(json.dumps({"examples": [{
        "query": "Which drilling station extracted the deepest cores?",
        "reference_contexts": [STATION_CONTEXT], "reference_answer": "Vostok",
        "query_by": {"type": "human"}, "reference_answer_by": {"type": "human"}}]}), encoding="utf-8")


def write_config(project: Path) -> Path:
    config = {
        "retrieval_only": True,
        "ingest": {"corpus": {"paths": ["../corpus"]}, "chunking": {"max_tokens": 48, "overlap_tokens": 0}},
        "testset": {"imports": [
            {"format": "jsonl", "path": "labels/qa.jsonl", "relevance_kind": "document"},
            {"format": "csv", "path": "labels/qa.csv", "relevance_kind": "document",
             "columns": {"id": "qid", "question": "query", "relevant": "doc_id"}},
            {"format": "hf_disk", "path": "labels/hf", "relevance_kind": "document"},
            {"format": "llamaindex", "path": "labels/rag_dataset.json"},
        ]},
        "evaluate": {"system": {"model_name": "walkthrough-rag"},
                     "retrieval": {"modes": ["bm25"], "ks": [1, 3]}},
    }
    path = project / "ragwatch.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    # the mistake from the issue: document ids imported with the default relevance kind (text)
    wrong = {**config, "testset": {"imports": [
        {"format": "csv", "path": "labels/qa.csv", "columns": {"id": "qid", "question": "query",
                                                              "relevant": "doc_id"}}]},
             "evaluate": {**config["evaluate"], "system": {"model_name": "walkthrough-wrong-kind"}},
             "reports_dir": "out"}
    (project / "wrong_kind.yaml").write_text(yaml.safe_dump(wrong, sort_keys=False), encoding="utf-8")
    return path


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=900)


def test_own_documents_own_labels_own_directory(tmp_path: Path) -> None:
    write_corpus(tmp_path / "corpus")
    project = tmp_path / "project"
    project.mkdir()
    write_labelled_sets(project)
    config = write_config(project)
    elsewhere = tmp_path / "work"  # the user's shell is neither in the checkout nor next to the config
    elsewhere.mkdir()
    env = {**os.environ, "ZENML_CONFIG_PATH": str(tmp_path / "zenml"), "PYTHONUNBUFFERED": "1"}
    env.pop("RAGWATCH_DEBUG", None)
    rel_config = os.path.relpath(config, elsewhere)

    ingest = run(["ingest", "--config", rel_config], elsewhere, env)
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr
    assert "ingest: 4 documents" in ingest.stdout, ingest.stdout
    skipped = [line for line in ingest.stdout.splitlines() if line.strip().startswith("skipped")]
    assert any("broken.pdf" in line for line in skipped), ingest.stdout
    assert any("corrupt.docx" in line for line in skipped), ingest.stdout

    early = run(["evaluate", "--config", rel_config], elsewhere, env)
    assert early.returncode == 2
    assert "run `ragwatch testset --config" in early.stderr and "Traceback" not in early.stderr

    testset = run(["testset", "--config", rel_config], elsewhere, env)
    assert testset.returncode == 0, testset.stdout + testset.stderr
    evaluate = run(["evaluate", "--config", rel_config], elsewhere, env)
    assert evaluate.returncode == 0, evaluate.stdout + evaluate.stderr
    for done in (testset, evaluate):  # the same store each time: ZenML has nothing to warn about
        assert "no longer available" not in done.stdout + done.stderr
    assert "evaluate_retrieval_step has started" in _plain(evaluate.stdout + evaluate.stderr)
    assert "evaluate_retrieval_step has finished in" in _plain(evaluate.stdout + evaluate.stderr)
    assert (elsewhere / "reports" / "latest.html").is_file()  # under the current directory
    assert not (ROOT / "reports" / "latest.html").exists() or "walkthrough" not in (
        ROOT / "reports" / "latest.html").read_text(encoding="utf-8")

    metrics = _latest_metrics(env)
    expected = {"bm25/hit_rate@1": 1.0, "bm25/recall@1": 0.9, "bm25/recall@3": 1.0, "bm25/precision@3": 0.4,
                "bm25/mrr": 1.0, "bm25/ndcg@3": 1.0}
    for name, value in expected.items():
        assert metrics[name]["score"] == pytest.approx(value), (name, metrics[name])
        assert (metrics[name]["n_scored"], metrics[name]["n_failed"]) == (5, 1), name
    assert "none of its 1 document label(s) matches anything in the index ('gone')" in metrics["error:jsonl-gone"]

    wrong = run(["full", "--config", str(project / "wrong_kind.yaml")], elsewhere, env)  # ingest is cached
    assert wrong.returncode == 0, wrong.stdout + wrong.stderr
    assert "warning: 1 of 1 relevance labels (100%) match nothing in the index (relevance kind used: text" \
        in wrong.stdout, wrong.stdout
    assert "set `relevance_kind: document`" in wrong.stdout
    assert (project / "out" / "latest.html").is_file()  # reports_dir, relative to the config


def _plain(text: str) -> str:
    """Without terminal colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _latest_metrics(env: dict[str, str]) -> dict[str, object]:
    """The last evaluation's retrieval metrics and per-question errors, read back in a subprocess
    (the store of this test, not the session's)."""
    code = (
        "import json, sys\n"
        "from zenml.client import Client\n"
        "run = Client().list_pipeline_runs(pipeline='evaluate', sort_by='desc:created', size=1).items[0]\n"
        "group = run.steps['evaluate_retrieval_step'].outputs['retrieval_metrics'][0].load()\n"
        "out = {n: m.summary() for n, m in group.metrics.items()}\n"
        "for item in group.metrics['bm25/mrr'].items:\n"
        "    if item.error: out['error:' + item.item_id] = item.error\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True, capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
