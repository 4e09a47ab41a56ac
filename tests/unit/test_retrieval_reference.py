"""Property tests: our retrieval measures equal ranx's on random rankings and graded qrels."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragwatch.retrieval import average_precision, evaluate_retrieval, judge
from ragwatch.types import Chunk, EvalSample, RelevantItem, SearchHit

ranx = pytest.importorskip("ranx")

POOL = [f"d{i}" for i in range(12)]
KS = (1, 3, 5, 10)


@st.composite
def query(draw):
    relevant = draw(st.dictionaries(st.sampled_from(POOL), st.integers(1, 3), min_size=1, max_size=6))
    retrieved = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=12, unique=True))
    return relevant, retrieved


def to_hits(ids: list[str]) -> list[SearchHit]:
    return [
        SearchHit(chunk=Chunk(id=c, document_id=c, source=f"{c}.md", text=c, start=0, end=len(c)),
                  score=float(len(ids) - i), rank=i + 1)
        for i, c in enumerate(ids)
    ]


# few examples with many queries each: one ranx call per example is the slow part
@settings(max_examples=25, deadline=None)
@given(st.lists(query(), min_size=1, max_size=25))
def test_measures_match_ranx(queries):
    samples, rankings = [], []
    qrels_dict, run_dict = {}, {}
    for i, (relevant, retrieved) in enumerate(queries):
        qid = f"q{i}"
        samples.append(EvalSample(id=qid, question=qid, relevant=[
            RelevantItem(kind="chunk_id", value=d, grade=float(g)) for d, g in relevant.items()]))
        rankings.append(to_hits(retrieved))
        qrels_dict[qid] = dict(relevant)
        # strictly decreasing scores, so ranx's sort keeps our order
        run_dict[qid] = {d: float(len(retrieved) - j) for j, d in enumerate(retrieved)}
    report = evaluate_retrieval(samples, rankings, ks=KS)
    names = ["mrr"] + [f"{m}@{k}" for m in ("hit_rate", "ndcg", "recall", "precision") for k in KS]
    run = ranx.Run(run_dict)
    ranx.evaluate(ranx.Qrels(qrels_dict), run, [*names, "map", *(f"map@{k}" for k in KS)])
    # per query, not only the means, so that errors cannot cancel out
    for name in [*names, "map"]:
        for item in report.metrics[name].items:
            assert item.score == pytest.approx(run.scores[name][item.item_id], abs=1e-6), (name, item.item_id)
    for k in KS:
        for s, r in zip(samples, rankings, strict=True):
            ours = average_precision(judge(s, r).gains, len(s.relevant), k)
            assert ours == pytest.approx(run.scores[f"map@{k}"][s.id], abs=1e-6), (f"map@{k}", s.id)
