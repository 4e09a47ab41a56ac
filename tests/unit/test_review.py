"""Review export/import files, label accumulation, and attaching PPI estimates (no ZenML, no LLM)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.review.files import read_label_file, validate_labels, write_review_files
from ragwatch.review.labelled import attach_labelled, labelled_summary
from ragwatch.review.labels import HumanLabel, HumanLabels
from ragwatch.review.sample import allocate, review_sample


def _metrics(n: int = 40, seed: int = 0) -> tuple[list[dict], dict[str, MetricResult]]:
    rng = np.random.default_rng(seed)
    rows = [{"item_id": f"q{i}", "question": f"question {i}?", "answer": f"answer {i}",
             "contexts": [f"ctx {i} a", f"ctx {i} b"], "reference_answer": f"ref {i}"} for i in range(n)]
    faith = [ItemScore(item_id=f"q{i}", score=float(rng.uniform() < 0.7)) for i in range(n - 1)]
    faith.append(ItemScore(item_id=f"q{n - 1}", error="judge reply unparsable"))
    corr = [ItemScore(item_id=f"q{i}", score=float(rng.integers(1, 6))) for i in range(n)]
    metrics = {
        "faithfulness": MetricResult.from_items("faithfulness", faith, info=MetricInfo(
            binary=True, threshold=0.5, prompt_version="f-v1", family="judge")),
        "correctness": MetricResult.from_items("correctness", corr, info=MetricInfo(
            scale=(1.0, 5.0), threshold=4.0, prompt_version="c-v1", family="judge")),
        "similarity": MetricResult.from_items("similarity", [ItemScore(item_id="q0", score=0.3)],
                                              info=MetricInfo(scale=(-1.0, 1.0))),
    }
    return rows, metrics


def test_allocation_is_proportional_with_two_per_stratum():
    assert allocate({"fail": 10, "pass": 90}, 20) == {"fail": 3, "pass": 17}
    assert allocate({"fail": 1, "pass": 90}, 10) == {"fail": 1, "pass": 9}
    assert allocate({"a": 3, "b": 4}, 50) == {"a": 3, "b": 4}
    assert sum(allocate({"a": 7, "b": 13, "c": 29}, 17).values()) == 17


def test_sample_is_seeded_stratified_and_records_inclusion(tmp_path):
    rows, metrics = _metrics()
    sample = review_sample(rows, metrics, n=12, seed=3, run_id="run-1", design="uniform")
    assert sample.metrics == ["faithfulness", "correctness"]  # LLM-judged only: no similarity
    assert review_sample(rows, metrics, n=12, seed=3, run_id="run-1", design="uniform").rows == sample.rows
    assert review_sample(rows, metrics, n=12, seed=4, run_id="run-1", design="uniform").rows != sample.rows
    assert len(sample.rows) == 12 and len({r["item_id"] for r in sample.rows}) == 12
    for h, counts in sample.strata.items():
        drawn = [r for r in sample.rows if r["stratum"] == h]
        assert len(drawn) == counts["drawn"] >= min(2, counts["items"])
        assert all(r["inclusion_prob"] == pytest.approx(counts["drawn"] / counts["items"]) for r in drawn)
    assert set(sample.strata) == {"pass", "fail", "unscored"}  # q39's faithfulness failed
    csv_path, jsonl_path = write_review_files(sample, tmp_path, "run-1")
    header = next(csv.reader(csv_path.open()))
    assert "label:faithfulness" in header and "judge:correctness" in header
    first = json.loads(jsonl_path.read_text().splitlines()[0])
    assert first["label:faithfulness"] == "" and first["contexts"][0].startswith("ctx")
    with pytest.raises(ValueError, match="no judged metric"):
        review_sample(rows, metrics, metric_names=["nope"])


def _fill(path, values: dict[str, dict[str, str]]):
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows, fields = list(reader), reader.fieldnames
    for row in rows:
        row.update(values.get(row["item_id"], {}))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def test_import_reports_each_bad_row_with_its_line_and_keeps_the_rest(tmp_path):
    rows, metrics = _metrics()
    sample = review_sample(rows, metrics, n=6, seed=0, run_id="run-1")
    csv_path, _ = write_review_files(sample, tmp_path, "r")
    ids = [r["item_id"] for r in sample.rows]
    _fill(csv_path, {ids[0]: {"label:faithfulness": "yes", "label:correctness": "4"},
                     ids[1]: {"label:faithfulness": "0.5"},           # not pass/fail
                     ids[2]: {"label:correctness": "7"},              # outside 1-5
                     ids[3]: {"item_id": "ghost", "label:faithfulness": "1"},
                     ids[4]: {"label:faithfulness": "no"}})
    with csv_path.open("a", newline="") as handle:  # a duplicate of the first row, at the end
        csv.writer(handle).writerow([ids[0], "run-1", "pass", "1", "q", "a", "", "", "", "", "0", "", "", ""])
    labels, problems = validate_labels(read_label_file(csv_path), metrics, source="r.csv")
    got = {(lab.item_id, lab.metric): lab.value for lab in labels}
    assert got == {(ids[0], "faithfulness"): 1.0, (ids[0], "correctness"): 4.0, (ids[4], "faithfulness"): 0.0}
    lines = csv_path.read_text().splitlines()
    for problem in problems:  # each line number points at the row's first line in the file
        assert lines[problem.line - 1].startswith(problem.item_id)
    messages = {p.item_id: p.message for p in problems if p.item_id != ids[0]}
    assert "pass/fail" in messages[ids[1]] and "scale 1-5" in messages[ids[2]]
    assert "unknown item id" in messages["ghost"]
    duplicate = next(p for p in problems if p.item_id == ids[0])
    assert "duplicate" in duplicate.message and duplicate.line == len(lines)
    # contexts hold newlines inside quoted cells: line numbers are the file's real lines
    assert len(problems) == 4


def test_jsonl_import_reports_bad_json():
    _, metrics = _metrics()
    rows = [(1, {"item_id": "q1", "label:faithfulness": 1}), (2, {"__error__": "not valid JSON (x)"}),
            (3, {"item_id": "q2", "label:unknown": 1})]
    labels, problems = validate_labels(rows, metrics)
    assert [lab.item_id for lab in labels] == ["q1"]
    assert [p.line for p in problems] == [2, 3] and "unknown metric" in problems[1].message


def test_labels_accumulate_and_later_wins():
    first = HumanLabels().merge([HumanLabel(item_id="q1", metric="m", value=1.0),
                                 HumanLabel(item_id="q2", metric="m", value=0.0)], source="a.csv")
    second = first.merge([HumanLabel(item_id="q1", metric="m", value=0.0),
                          HumanLabel(item_id="q3", metric="m", value=1.0)], source="b.csv")
    assert {lab.item_id: lab.value for lab in second.labels} == {"q1": 0.0, "q2": 0.0, "q3": 1.0}
    assert [(c.item_id, c.old, c.new, c.source) for c in second.history] == [("q1", 1.0, 0.0, "b.csv")]
    assert [(r.added, r.changed) for r in second.imports] == [(2, 0), (1, 1)]
    assert first.for_metric("m")["q1"].value == 1.0  # merging returns a new collection


def test_attach_labelled_fills_ppi_estimate_only_where_labels_exist():
    _, metrics = _metrics(200, seed=1)
    truth = {it.item_id: 1.0 - it.score for it in metrics["faithfulness"].items if it.ok}  # judge always wrong
    labelled_ids = list(truth)[:30]
    labels = HumanLabels().merge([HumanLabel(item_id=i, metric="faithfulness", value=truth[i])
                                  for i in labelled_ids] + [HumanLabel(item_id="q0", metric="correctness",
                                                                       value=3.0)], source="x")
    out, skipped = attach_labelled(metrics, labels)
    est = out["faithfulness"].labelled
    assert est is not None and est.method == "ppi++" and est.n_labels == 30 and est.n_items == 199
    assert est.ci_low <= np.mean([truth[i] for i in labelled_ids]) <= est.ci_high
    assert metrics["faithfulness"].score > est.ci_high  # the judge-only figure is far off
    assert out["correctness"].labelled is None and "at least 2" in skipped["correctness"]
    assert out["similarity"].labelled is None and "similarity" not in skipped
    summary = labelled_summary(out)
    assert set(summary) == {"faithfulness"} and summary["faithfulness"]["n_labels"] == 30


def test_agreement_with_human_labels_pass_fail_and_graded():
    from sklearn.metrics import cohen_kappa_score

    from ragwatch.calibration.human import agreement_markdown, agreement_with_labels

    _, metrics = _metrics(40, seed=2)
    judged = {it.item_id: it.score for it in metrics["faithfulness"].items if it.ok}
    human = {i: (s if int(i[1:]) % 4 else 1.0 - s) for i, s in judged.items()}  # a quarter disagree
    graded = {it.item_id: it.score for it in metrics["correctness"].items}
    labels = HumanLabels().merge(
        [HumanLabel(item_id=i, metric="faithfulness", value=v) for i, v in human.items()]
        + [HumanLabel(item_id=i, metric="correctness", value=v) for i, v in graded.items()], source="x")
    rows = {r.metric: r for r in agreement_with_labels(metrics, labels, resamples=200)}
    assert rows["faithfulness"].kind == "pass/fail" and rows["faithfulness"].n == 39
    kappa = rows["faithfulness"].measures["Cohen's kappa"].value
    assert kappa == pytest.approx(cohen_kappa_score(list(human.values()), list(judged.values())))
    assert rows["correctness"].kind == "graded" and rows["correctness"].measures["Spearman"].value == pytest.approx(1.0)
    assert "| faithfulness | pass/fail | 39 | accuracy |" in agreement_markdown(list(rows.values()))


def test_a_label_belongs_to_the_answer_it_judged_not_to_a_later_answer_of_the_same_question():
    from ragwatch.judges.engine import judged_key

    def run(answers: dict[str, str]) -> dict[str, MetricResult]:
        items = [ItemScore(item_id=i, score=1.0 if "Paris" in a else 0.0,
                           details={"statements": [a], "judged_key": judged_key(a, [a])}) for i, a in answers.items()]
        return {"faithfulness": MetricResult.from_items("faithfulness", items, info=MetricInfo(
            binary=True, prompt_version="f-v1", family="judge"))}

    first = {f"q{i}": ("Paris is the capital." if i % 2 else "Lyon is the capital.") for i in range(6)}
    rows = [{"item_id": i, "label:faithfulness": "1" if "Paris" in a else "0"} for i, a in first.items()]
    labels, problems = validate_labels([(n, r) for n, r in enumerate(rows, start=2)], run(first), source="r.csv")
    assert not problems and len(labels) == 6 and all(lab.judged_key for lab in labels)
    store = HumanLabels().merge(labels, source="r.csv")

    same, why = attach_labelled(run(first), store)
    assert not why, why
    assert same["faithfulness"].labelled.n_labels == 6
    assert same["faithfulness"].labelled.details["labels_of_changed_answers"] == 0
    # the system changed: four answers are new text; their labels judged other answers and must not count
    changed = {**first, **{f"q{i}": "Marseille is the capital." for i in range(4)}}
    out, _ = attach_labelled(run(changed), store)
    est = out["faithfulness"].labelled
    assert est.n_labels == 2 and est.details["labels_of_changed_answers"] == 4
    # the same answer with other statements is another judged item too
    resplit = run(first)
    for it in resplit["faithfulness"].items:
        it.details["judged_key"] = judged_key(first[it.item_id], ["a different split"])
    none, skipped = attach_labelled(resplit, store)
    assert none["faithfulness"].labelled is None and "earlier answer" in skipped["faithfulness"]
