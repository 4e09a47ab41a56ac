"""Likelihood signals with the tiny packaged model (SmolLM2-135M-Instruct): a rewound reading equals a fresh
one, and the evidence raises a copied statement more than a fabricated one."""

from __future__ import annotations

import numpy as np
import pytest

from ragwatch.judges.faithfulness.likelihood import (
    PromptReader,
    answer_likelihoods,
    evidence_prefix,
    evidence_sentences,
    target_logprobs,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MODEL = "smollm2-135m-instruct"
CONTEXTS = ["ZenML caches the outputs of steps by default. A pipeline is a sequence of steps.",
            "The orchestrator runs the pipeline on a Kubernetes cluster."]
COPIED = "ZenML caches the outputs of steps by default."
FABRICATED = "ZenML was written in Rust by a team at Airflow in 1999."


@pytest.fixture(scope="module")
def llm():
    pytest.importorskip("llama_cpp")
    from ragwatch.llm import local

    return local.load(MODEL, logits_all=True)


def test_signals_of_an_answer(llm):
    rows = answer_likelihoods(f"local/{MODEL}", CONTEXTS, [COPIED, FABRICATED, ""])
    copied, fabricated, empty = rows
    assert copied.ok and fabricated.ok and not empty.ok
    assert copied.signals.pmi > fabricated.signals.pmi
    assert copied.signals.mean_logprob_evidence > copied.signals.mean_logprob_plain
    for row in (copied, fabricated):
        values = row.signals.model_dump().values()
        assert all(np.isfinite(v) for v in values) and 0 <= row.signals.share_raised <= 1


def test_a_rewound_reading_equals_a_fresh_one(llm):
    model, lock = llm
    reader = PromptReader(model, lock)
    prefix = reader.tokens(evidence_prefix(evidence_sentences(CONTEXTS, [COPIED, FABRICATED])), first=True)
    tokens = reader.tokens(" " + FABRICATED, first=False)
    with lock:
        reader.read_prefix(prefix)
        reader.continuation_logprobs(reader.tokens(" " + COPIED, first=False))  # then rewound past it
        rewound = reader.continuation_logprobs(tokens)
        model.reset()
        model.eval(prefix + tokens)
        fresh = target_logprobs(model.scores[len(prefix) - 1 : len(prefix) + len(tokens) - 1], tokens)
    assert rewound == pytest.approx(fresh, abs=1e-3)
