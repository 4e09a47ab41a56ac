"""Evaluation-set imports (every format, malformed rows, unusable files) and export round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragwatch.evalset.export import describe_samples, export_hf_dataset, export_jsonl, export_review_jsonl
from ragwatch.evalset.imported import (
    HANDWRITTEN_CASES_PATH,
    ZENML_QA_PATH,
    ColumnMap,
    DatasetImportError,
    ImportSettings,
    import_dataset,
    load_handwritten_retrieval_cases,
    load_zenml_qa,
)
from ragwatch.types import EvalSample, RelevantItem


def samples() -> list[EvalSample]:
    return [
        EvalSample(id="s1", question="How are artifacts versioned?",
                   reference_answer="In the artifact store.",
                   reference_contexts=["Artifacts are versioned in the artifact store."],
                   relevant=[RelevantItem(kind="chunk_id", value="c1"),
                             RelevantItem(kind="document", value="docs/a.md", grade=0.5)],
                   kind="factual", metadata={"answerable": True, "source_chunk_ids": ["c1"], "seed": 0}),
        EvalSample(id="s2", question="Which GPU does ZenML need?", reference_answer=None,
                   kind="unanswerable", metadata={"answerable": False}),
    ]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ JSONL
def test_jsonl_export_round_trips(tmp_path):
    path = export_jsonl(samples(), tmp_path / "set.jsonl")
    report = import_dataset(ImportSettings(format="jsonl", path=str(path)))
    assert report.samples == samples() and report.skipped == []


def test_jsonl_malformed_rows_are_skipped_with_line_numbers(tmp_path):
    path = write_lines(tmp_path / "mixed.jsonl", [
        json.dumps({"question": "What is a step?", "relevant": ["docs/steps.md"]}),
        "{not json",
        "",
        json.dumps({"question": "", "relevant": ["x"]}),
        json.dumps(["a", "list"]),
        json.dumps({"question": "What is a stack?", "relevant": [{"kind": "nope", "value": "x"}]}),
        json.dumps({"question": "What is a step?", "relevant": ["docs/steps.md"]}),  # duplicate of line 1
    ])
    report = import_dataset(ImportSettings(format="jsonl", path=str(path), relevance_kind="document"))
    assert [s.question for s in report.samples] == ["What is a step?"]
    assert report.samples[0].relevant == [RelevantItem(kind="document", value="docs/steps.md")]
    assert [line for line, _ in report.skipped] == [2, 4, 5, 6, 7]  # line 3 is blank, not an error
    reasons = dict(report.skipped)
    assert "not valid JSON" in reasons[2] and "no question" in reasons[4] and "JSON object" in reasons[5]
    assert "bad relevant item" in reasons[6] and "duplicate id" in reasons[7] and "line 1" in reasons[7]


def test_no_usable_row_names_expected_and_found_columns(tmp_path):
    path = write_lines(tmp_path / "other.jsonl", [json.dumps({"query": "What?", "answer": "x"})])
    with pytest.raises(DatasetImportError) as err:
        import_dataset(ImportSettings(format="jsonl", path=str(path)))
    message = str(err.value)
    assert "'question': 'question'" in message and "['answer', 'query']" in message and "columns:" in message


def test_missing_file_says_so(tmp_path):
    with pytest.raises(DatasetImportError, match="not found"):
        import_dataset(ImportSettings(format="jsonl", path=str(tmp_path / "nope.jsonl")))


def test_unknown_setting_key_is_an_error():
    with pytest.raises(ValueError, match="colums"):
        ImportSettings(format="jsonl", path="x", colums={})
    with pytest.raises(ValueError, match="questoin"):
        ColumnMap(questoin="q")


# -------------------------------------------------------------------------------------- CSV
def test_csv_with_column_mapping_and_per_row_kinds(tmp_path):
    path = tmp_path / "qa.csv"
    path.write_text(
        "qid,q,gold,rel,rel_kind,ctx\n"
        'a1,What is a step?,A function.,docs/steps.md|docs/intro.md,document,\n'
        'a2,"What is a\nmultiline question?",x,"[""c9""]",chunk_id,\n'
        "a3,,no question,x,url,\n"
        "a4,Bad kind?,x,y,planet,\n"
        "a5,Too,many,cells,url,z,extra\n"
        "a6,Text relevance?,yes,,,\"[\"\"Steps are functions.\"\"]\"\n",
        encoding="utf-8",
    )
    cols = ColumnMap(question="q", reference_answer="gold", relevant="rel", relevant_kind="rel_kind",
                     contexts="ctx", id="qid", kind=None, metadata=None)
    report = import_dataset(ImportSettings(format="csv", path=str(path), columns=cols))
    by_id = {s.id: s for s in report.samples}
    assert list(by_id) == ["a1", "a2", "a6"]
    assert [r.value for r in by_id["a1"].relevant] == ["docs/steps.md", "docs/intro.md"]
    assert by_id["a2"].relevant == [RelevantItem(kind="chunk_id", value="c9")]
    assert by_id["a6"].relevant == [RelevantItem(kind="text", value="Steps are functions.")]  # from contexts
    assert [line for line, _ in report.skipped] == [5, 6, 7]  # a2 spans lines 3-4, so a3 starts on 5
    assert "planet" in dict(report.skipped)[6] and "more cells" in dict(report.skipped)[7]


# --------------------------------------------------------------------------------- LlamaIndex
def test_llamaindex_rag_dataset(tmp_path):
    data = {"examples": [
        {"query": "What is ZenML?", "query_by": {"model_name": "gpt-4", "type": "ai"},
         "reference_contexts": ["ZenML is an MLOps framework.", "It runs pipelines."],
         "reference_answer": "An MLOps framework.",
         "reference_answer_by": {"model_name": "", "type": "human"}},
        {"query": None, "reference_contexts": [], "reference_answer": "x"},
        "garbage",
    ]}
    path = tmp_path / "rag_dataset.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = import_dataset(ImportSettings(format="llamaindex", path=str(path)))
    [s] = report.samples
    assert s.reference_answer == "An MLOps framework." and s.metadata["query_by"] == "ai:gpt-4"
    assert [r.value for r in s.relevant] == data["examples"][0]["reference_contexts"]
    assert {r.kind for r in s.relevant} == {"text"} and s.id.startswith("imp-")
    assert [n for n, _ in report.skipped] == [2, 3]
    path.write_text(json.dumps({"data": []}), encoding="utf-8")
    with pytest.raises(DatasetImportError, match="'examples' list"):
        import_dataset(ImportSettings(format="llamaindex", path=str(path)))


# ------------------------------------------------------------------------------- Hugging Face
def test_hf_dataset_round_trips(tmp_path):
    path = export_hf_dataset(samples(), tmp_path / "hf")
    report = import_dataset(ImportSettings(format="hf_disk", path=str(path)))
    assert report.samples == samples()


def test_hf_dataset_dict_needs_a_split(tmp_path):
    import datasets

    ds = datasets.Dataset.from_list([{"question": "What is a step?", "url": "docs/steps"}])
    datasets.DatasetDict({"test": ds, "train": ds}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(DatasetImportError, match=r"split.*\['test', 'train'\]|\['test', 'train'\].*split"):
        import_dataset(ImportSettings(format="hf_disk", path=str(tmp_path / "dd")))
    cols = ColumnMap(relevant="url")
    report = import_dataset(ImportSettings(format="hf_disk", path=str(tmp_path / "dd"), split="test",
                                           columns=cols, relevance_kind="url"))
    assert report.samples[0].relevant == [RelevantItem(kind="url", value="docs/steps")]


# ---------------------------------------------------------------------------------- review
def test_review_jsonl_layout(tmp_path):
    path = export_review_jsonl(samples(), tmp_path / "review.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[0] == {
        "id": "s1", "question": "How are artifacts versioned?", "answer": "In the artifact store.",
        "contexts": ["Artifacts are versioned in the artifact store."], "kind": "factual",
        "relevant": ["chunk_id:c1", "document:docs/a.md"], "verdict": None, "comment": "",
    }
    assert len(rows) == 2


# ------------------------------------------------------------------------- shipped question sets
def test_shipped_zenml_question_set(tmp_path):
    loaded = load_zenml_qa()
    assert len(loaded) == 166 and len({s.id for s in loaded}) == 166
    first = json.loads(ZENML_QA_PATH.read_text().splitlines()[0])
    s = next(x for x in loaded if x.id == f"zenml-qa-{first['id']}")
    assert s.question == first["positive"] and s.reference_contexts == [first["anchor"]]
    assert s.relevant == [RelevantItem(kind="url", value=first["url"])]
    path = write_lines(tmp_path / "z.jsonl", [
        json.dumps({"positive": "How?", "url": "https://docs.zenml.io/x", "anchor": "a", "id": 1}),
        json.dumps({"positive": "No url?", "url": "", "anchor": "a", "id": 2}),
    ])
    assert [s.id for s in load_zenml_qa(path)] == ["zenml-qa-1"]


def test_handwritten_retrieval_cases(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"question_doc_pairs": [
        {"question": "How do I write a custom materializer?", "url_ending": "how-to/custom-materializer"},
        {"question": "Missing url?"},
    ]}), encoding="utf-8")
    [s] = load_handwritten_retrieval_cases(path)
    assert s.relevant == [RelevantItem(kind="url", value="how-to/custom-materializer")]
    if HANDWRITTEN_CASES_PATH.exists():  # copied into data/sample/eval by another part of the project
        assert all(c.relevant for c in load_handwritten_retrieval_cases())


def test_describe_samples_for_artifact_metadata():
    info = describe_samples(samples())
    assert info["size"] == 2 and info["kinds"] == {"factual": 1, "unanswerable": 1}
    assert info["relevance_kinds"] == {"chunk_id": 1, "document": 1} and info["without_relevance"] == 1
    changed = samples()
    changed[1].question = "Which GPU does ZenML require?"
    assert describe_samples(changed)["fingerprint"] != info["fingerprint"]
    assert describe_samples(samples())["fingerprint"] == info["fingerprint"]


def test_limit_and_seeded_sample(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"question {i}?"}) + "\n" for i in range(20)))
    first = import_dataset(ImportSettings(format="jsonl", path=str(path), limit=5))
    assert [s.id for s in first.samples] == ["q0", "q1", "q2", "q3", "q4"] and first.usable == 20
    picked = import_dataset(ImportSettings(format="jsonl", path=str(path), sample=4, seed=7))
    again = import_dataset(ImportSettings(format="jsonl", path=str(path), sample=4, seed=7))
    ids = [s.id for s in picked.samples]
    assert ids == [s.id for s in again.samples] and len(set(ids)) == 4
    assert ids == sorted(ids, key=lambda i: int(i[1:]))  # file order kept
    both = import_dataset(ImportSettings(format="jsonl", path=str(path), limit=3, sample=10))
    assert [s.id for s in both.samples] == ["q0", "q1", "q2"]
    assert import_dataset(ImportSettings(format="jsonl", path=str(path))).usable is None
