"""Likelihood signals of statements: the arithmetic, the evidence shown, and reading the evidence once
(the context rewound per statement) on a fake llama that keeps logits as llama-cpp-python 0.3 does."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragwatch.judges.faithfulness.evidence import context_sentences
from ragwatch.judges.faithfulness.likelihood import (
    EMPTY,
    STATEMENT_CUE,
    PromptReader,
    evidence_prefix,
    evidence_sentences,
    signals_of,
    statement_likelihoods,
    target_logprobs,
)
from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier

VOCAB = 13


class FakeLlama:
    """`Llama.eval` semantics: the KV cache past `n_tokens` is dropped, each position's logits depend on
    every token before it, and `scores` keeps them only when `_logits_all` (else nothing, as 0.3.36)."""

    def __init__(self, n_ctx: int = 256, lock: threading.Lock | None = None) -> None:
        self._n_ctx, self._logits_all, self.n_tokens = n_ctx, True, 0
        self.input_ids = np.zeros(n_ctx, dtype=int)
        self.scores = np.full((n_ctx, VOCAB), np.nan)
        self.calls: list[tuple[int, bool]] = []  # (tokens read, logits kept) per eval
        self.lock = lock

    def n_ctx(self) -> int:
        return self._n_ctx

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        ids = [sum(map(ord, w)) % (VOCAB - 1) + 1 for w in text.decode().split()]
        return ([0] if add_bos else []) + ids

    def reset(self) -> None:
        self.n_tokens = 0

    def eval(self, tokens: list[int]) -> None:
        if self.lock is not None:
            assert self.lock.locked(), "read without the model's lock"
        self.calls.append((len(tokens), self._logits_all))
        for t in tokens:
            p = self.n_tokens
            self.input_ids[p] = t
            seed = hash(tuple(int(i) for i in self.input_ids[: p + 1])) % 2**32
            if self._logits_all:
                self.scores[p] = np.random.default_rng(seed).normal(0, 2, VOCAB)
            self.n_tokens += 1


def fresh_logprobs(llm: FakeLlama, prefix: list[int], tokens: list[int]) -> np.ndarray:
    """The statement read from scratch after the prefix, every position's logits kept."""
    llm.reset()
    llm.eval(prefix + tokens)
    return target_logprobs(llm.scores[len(prefix) - 1 : len(prefix) + len(tokens) - 1], tokens)


CONTEXTS = ["ZenML caches step outputs by default. A pipeline is a list of steps.",
            "The orchestrator runs pipelines on Kubernetes. Artifacts are stored in the artifact store."]
STATEMENTS = ["ZenML caches step outputs.", "Pipelines run on Kubernetes.", "Artifacts live in the store."]


def test_target_logprobs_is_the_log_softmax_at_each_target():
    logits = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    got = target_logprobs(logits, [2, 0])
    expected = [3 - np.log(np.exp([1.0, 2.0, 3.0]).sum()), 0.0]
    assert got == pytest.approx(expected)
    with pytest.raises(ValueError, match="one row per target"):
        target_logprobs(logits, [1])


def test_signals_arithmetic():
    s = signals_of([-1.0, -2.0, -6.0, -3.0], [-2.0, -2.0, -3.0, -5.0])
    assert s.n_tokens == 4
    assert s.mean_logprob_evidence == pytest.approx(-3.0) and s.mean_logprob_plain == pytest.approx(-3.0)
    assert s.pmi == pytest.approx(0.0) and s.min_logprob_evidence == -6.0
    assert s.share_raised == pytest.approx(0.5)  # a tie (-2 vs -2) is not raised


@pytest.mark.parametrize(("e", "p", "message"), [([], [], EMPTY), ([-1.0], [-1.0, -2.0], "same tokens"),
                                                 ([float("-inf")], [-1.0], "not finite")])
def test_signals_refuse_what_has_no_value(e, p, message):
    with pytest.raises(ValueError, match=message):
        signals_of(e, p)


def test_evidence_is_what_the_verifier_shows_for_the_claims():
    statements = [*STATEMENTS, "Here:"]  # no claim: never asked, so it picks no sentence
    shown = EvidenceVerifier(support_model=None).shown_sentences(context_sentences(CONTEXTS), STATEMENTS)
    assert evidence_sentences(CONTEXTS, statements) == [s.text for s in shown]
    one = EvidenceVerifier(sentences_per_statement=1, max_sentences=1, support_model=None)
    assert evidence_sentences(CONTEXTS, STATEMENTS, max_sentences=1) == [
        s.text for s in one.shown_sentences(context_sentences(CONTEXTS), STATEMENTS)]
    assert evidence_prefix(["a.", "b."]).endswith("a.\nb.\n\n" + STATEMENT_CUE)


def test_rewound_readings_equal_fresh_ones_and_the_evidence_is_read_once():
    llm = FakeLlama()
    reader = PromptReader(llm)
    out = statement_likelihoods(reader, CONTEXTS, STATEMENTS)
    prefix = reader.tokens(evidence_prefix(evidence_sentences(CONTEXTS, STATEMENTS)), first=True)
    plain = reader.tokens(STATEMENT_CUE, first=True)
    # the evidence once, without logits but for its last token; then each statement with logits
    statement_lengths = [len(reader.tokens(" " + s, first=False)) for s in STATEMENTS]
    assert llm.calls[:2] == [(len(prefix) - 1, False), (1, True)]
    assert llm.calls[2:5] == [(n, True) for n in statement_lengths]
    assert sum(n for n, _ in llm.calls) == len(prefix) + len(plain) + 2 * sum(statement_lengths)
    for row, statement in zip(out, STATEMENTS, strict=True):
        assert row.ok and row.evidence_tokens == len(prefix)
        tokens = reader.tokens(" " + statement, first=False)
        e, p = fresh_logprobs(llm, prefix, tokens), fresh_logprobs(llm, plain, tokens)
        assert row.signals == signals_of(e, p)


def test_reading_out_of_order_after_a_rewind_changes_nothing():
    """Each statement is read after the evidence alone, not after the statements read before it."""
    forward = statement_likelihoods(PromptReader(FakeLlama()), CONTEXTS, STATEMENTS)
    backward = statement_likelihoods(PromptReader(FakeLlama()), CONTEXTS, STATEMENTS[::-1])
    assert [r.signals for r in forward] == [r.signals for r in backward[::-1]]


def test_an_empty_statement_is_an_explicit_failure_and_the_others_are_scored():
    out = statement_likelihoods(PromptReader(FakeLlama()), CONTEXTS, [STATEMENTS[0], "  ", STATEMENTS[1]])
    assert [r.ok for r in out] == [True, False, True]
    assert out[1].error == EMPTY and out[1].signals is None


def test_evidence_is_cut_to_fit_the_window_and_a_statement_that_cannot_fit_fails():
    full = statement_likelihoods(PromptReader(FakeLlama()), CONTEXTS, STATEMENTS)
    small = statement_likelihoods(PromptReader(FakeLlama(n_ctx=24)), CONTEXTS, STATEMENTS)
    assert all(r.ok for r in small)
    assert small[0].evidence_sentences < full[0].evidence_sentences and small[0].evidence_tokens + 8 <= 24
    long = " ".join(["word"] * 40)
    out = statement_likelihoods(PromptReader(FakeLlama(n_ctx=24)), CONTEXTS, [STATEMENTS[0], long])
    assert out[0].ok and not out[1].ok and "window" in (out[1].error or "")


def test_the_model_lock_is_held_while_reading_and_a_prefix_is_needed():
    lock = threading.Lock()
    out = statement_likelihoods(PromptReader(FakeLlama(lock=lock), lock), CONTEXTS, STATEMENTS)
    assert all(r.ok for r in out) and not lock.locked()
    with pytest.raises(ValueError, match="prefix first"):
        PromptReader(FakeLlama()).continuation_logprobs([1, 2])
