"""The labelled-statement data tools (benchmarks/): answers split as the judge splits them, the shipped
verifier's features per statement, and the blind labelling packet."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_judges_support import fake_server, last_user

# statement_features imports its neighbour rag_statements as a top-level module (issue 42 holds both files): the
# one benchmark still reached through its folder; the others import as the package's modules.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import statement_features

from benchmarks import answer_statements, labelling_packet
from ragwatch.judges import FaithfulnessJudge
from ragwatch.judges.faithfulness import PROMPT_VERSION as FAITHFULNESS_PROMPT
from ragwatch.judges.faithfulness import answer_statements as judge_split
from ragwatch.judges.faithfulness.verify_evidence import prompt_statements
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext

__all__ = ["fake_server"]

pytestmark = pytest.mark.usefixtures("isolated_cache")

CONTEXT = "Paris is the capital of France. Paris has the Louvre museum."
ANSWERS = {"q1": "Paris is the capital of France. Paris has the Louvre museum. Berlin has 7 museums.",
           "q2": "Paris is the capital of France."}


def _answers() -> tuple[list[EvalSample], list[RagAnswer]]:
    samples = [EvalSample(id=i, question=f"question {i}?", reference_answer="ref") for i in (*ANSWERS, "q3")]
    answers = [RagAnswer(question=f"question {i}?", answer=a, contexts=[RetrievedContext(text=CONTEXT, source="d.md")])
               for i, a in ANSWERS.items()]
    return samples, [*answers, RagAnswer(question="question q3?", error="generation failed: timeout")]


def test_answers_split_exactly_as_the_judge_splits_them_with_opaque_stable_ids() -> None:
    samples, answers = _answers()
    rows, counts = answer_statements.statement_rows("S1", samples, answers, max_statements=2)
    assert counts == {"answered": 2, "failed": 1, "empty": 0}
    assert [r["statement"] for r in rows if r["item_id"] == "q1"] == judge_split(ANSWERS["q1"], 2)
    assert [r["statement_index"] for r in rows] == [0, 1, 0]
    assert rows[0]["contexts"] == [CONTEXT] and rows[0]["context_sources"] == ["d.md"]
    ids = [r["statement_id"] for r in rows]
    assert len(set(ids)) == 3 and not any("S1" in i or "q1" in i for i in ids)  # says nothing of the system
    again, _ = answer_statements.statement_rows("S1", samples, answers, max_statements=2)
    assert [r["statement_id"] for r in again] == ids
    other, _ = answer_statements.statement_rows("S2", samples, answers, max_statements=2)
    assert not set(ids) & {r["statement_id"] for r in other}
    limited, counts = answer_statements.statement_rows("S1", samples, answers, max_statements=2, limit=1)
    assert {r["item_id"] for r in limited} == {"q1"} and counts["answered"] == 1
    with pytest.raises(SystemExit, match="not the run's evaluation set"):
        answer_statements.statement_rows("S1", samples[:2], answers, max_statements=2)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_features_per_statement_in_order_resuming(fake_server, tmp_path) -> None:
    """Each answer's statements judged together; a number no context holds is vetoed by the rule; a
    second run judges nothing again."""
    def judge(messages):
        n = len(prompt_statements(last_user(messages)))
        return json.dumps({"checks": [{"evidence": [1], "verdict": "yes"}] * n})

    samples, answers = _answers()
    rows, _ = answer_statements.statement_rows("S1", samples, answers, max_statements=4)
    rows[0]["label"] = "supported"
    src = _write(tmp_path / "statements.jsonl", list(reversed(rows)))  # out of order on purpose
    server = fake_server(judge)
    llm = server.client()
    verifier_judge = FaithfulnessJudge(llm, statements="sentences")
    out = tmp_path / "features.jsonl"
    loaded = statement_features.load_answers(src)
    statement_features.write_features(verifier_judge, llm, loaded, out)
    feats = sorted((json.loads(line) for line in out.read_text().splitlines()),
                   key=lambda f: (f["item_id"], f["statement_index"]))
    assert [f["statement_id"] for f in feats] == [r["statement_id"] for r in rows]
    assert [f["verdict"] for f in feats] == [True, True, False, True]
    assert feats[2]["rule"].startswith("not in any retrieved context") and feats[2]["absent_terms"]
    assert feats[0]["label"] == "supported" and feats[1]["label"] is None
    assert feats[0]["p_judge"] == 1.0 and 0 < feats[0]["lexical"] <= 1
    assert feats[0]["prompt_version"] == FAITHFULNESS_PROMPT and feats[0]["system"] == "S1"
    assert feats[0]["answer_seconds"] == pytest.approx(3 * feats[0]["seconds"])
    calls = len(server.requests)
    assert calls == 2  # one call per answer
    statement_features.write_features(verifier_judge, llm, loaded, out)
    assert len(server.requests) == calls and len(out.read_text().splitlines()) == 4
    together = tmp_path / "batched.jsonl"  # both answers gathered in one run, as the judge step does
    statement_features.write_features(verifier_judge, llm, loaded, together, batch=2)
    batched = {f["statement_id"]: f for f in map(json.loads, together.read_text().splitlines())}
    assert {i: f["verdict"] for i, f in batched.items()} == {f["statement_id"]: f["verdict"] for f in feats}
    assert {f["batch"] for f in batched.values()} == {2} and len(server.requests) == calls + 2


def test_model_free_features_need_no_call(tmp_path) -> None:
    samples, answers = _answers()
    rows, _ = answer_statements.statement_rows("S1", samples, answers, max_statements=4)
    loaded = statement_features.load_answers(_write(tmp_path / "s.jsonl", rows))
    judge = FaithfulnessJudge(object(), statements="sentences")  # never called
    out = tmp_path / "f.jsonl"
    statement_features.write_features(judge, None, loaded, out, batch=4, no_judge=True)
    listed = [json.loads(line) for line in out.read_text().splitlines()]
    feats = {f["statement"]: f for f in listed}  # the two answers' common statement has the same features
    assert len(listed) == 4 and all(f["p_judge"] is None and f["verdict"] is None for f in feats.values())
    assert feats["Berlin has 7 museums."]["absent_terms"] and feats["Berlin has 7 museums."]["missing_terms"] >= 1
    assert feats["Paris is the capital of France."]["lexical"] == 1.0
    assert all(f["uncited"] is None and f["error"] == statement_features.NOT_JUDGED for f in listed)


def test_rows_without_a_system_or_an_id_get_them() -> None:
    row = {"item_id": "zenml-qa-4", "statement_index": 2}
    assert statement_features.statement_id(row) == "zenml-qa-4#2"
    assert statement_features.statement_id({**row, "system": "S0"}) == "S0/zenml-qa-4#2"
    assert statement_features.statement_id({**row, "statement_id": "st-1"}) == "st-1"


def test_packet_is_blind_keeps_answers_together_and_is_seeded(tmp_path) -> None:
    samples, answers = _answers()
    files = []
    for code in ("S1", "S2", "S3"):
        rows, _ = answer_statements.statement_rows(code, samples, answers, max_statements=4)
        files.append(_write(tmp_path / f"{code}.jsonl", [{**r, "verdict": True} for r in rows]))
    packet = labelling_packet.packet(files, seed=35)
    assert len(packet) == 12 and set(packet[0]) == set(labelling_packet.PACKET_FIELDS)  # no verdict leaks
    keys = [(r["system"], r["item_id"]) for r in packet]
    runs = [k for n, k in enumerate(keys) if n == 0 or keys[n - 1] != k]
    assert len(runs) == len(set(runs)) == 6  # every answer's statements are contiguous
    for key in set(runs):
        assert [r["statement_index"] for r in packet if (r["system"], r["item_id"]) == key] == sorted(
            r["statement_index"] for r in packet if (r["system"], r["item_id"]) == key)
    assert labelling_packet.packet(list(reversed(files)), seed=35) == packet
    assert labelling_packet.packet(files, seed=36) != packet
    with pytest.raises(SystemExit, match="appears twice"):
        labelling_packet.packet([files[0], files[0]], seed=35)


def test_the_shipped_judge_is_built_from_the_evaluation_config() -> None:
    judge, llm = statement_features.shipped_judge(statement_features.ROOT / "configs" / "evaluate.yaml")
    assert llm.settings.cache is False and judge.statements == "sentences" and judge.max_statements == 4
    assert judge.verify == "evidence" and judge.calibration is not None
    assert judge.verifier.threshold == judge.calibration.support_model.cutoff
