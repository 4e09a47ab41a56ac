"""How much more likely a local model finds a statement after reading its evidence: prompt reading only.

For each statement of an answer, a local model reads (never decodes) the statement twice: after the
evidence the evidence-first verifier shows for that answer (`EvidenceVerifier.shown_sentences`, the
same sentences in the same order) and after a short neutral prefix. From the two readings' token
log-probabilities come the signals of `LikelihoodSignals`: the mean log-probability with and without
the evidence, their difference (pointwise mutual information of statement and evidence), the
smallest log-probability with the evidence (the one token the evidence least explains) and the share
of tokens the evidence makes more likely.

The evidence is shared by the statements of an answer, so it is read once: its KV state is kept and
each statement is read after rewinding the context to the evidence's end (`n_tokens`). Only the
statement tokens need logits; the evidence is read without them (an lm-head pass over Qwen's 152k
vocabulary per token would cost about a third more than the transformer layers of the 0.5B model).
A statement without tokens, or one that does not fit the model's window, is an explicit failure
with its reason, never NaN.

Example:
    >>> rows = answer_likelihoods("qwen2.5-0.5b-instruct", contexts, statements)  # doctest: +SKIP
    >>> rows[0].signals.pmi if rows[0].ok else rows[0].error  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragwatch.judges.faithfulness.evidence import context_sentences, makes_no_claim
from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier

EVIDENCE_HEADER = "Documents:\n"
STATEMENT_CUE = "Statement:"  # ends both prefixes, so the two readings differ only by the evidence
SIGNALS = ("mean_logprob_evidence", "mean_logprob_plain", "pmi", "min_logprob_evidence", "share_raised")
EMPTY = "the statement has no tokens"


class LikelihoodSignals(BaseModel):
    """A statement's token log-probabilities summed up (natural log, per token)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_tokens: int
    mean_logprob_evidence: float
    mean_logprob_plain: float
    pmi: float  # mean_logprob_evidence - mean_logprob_plain
    min_logprob_evidence: float
    share_raised: float  # share of tokens whose log-probability is higher with the evidence


class StatementLikelihood(BaseModel):
    """One statement's signals, or why it has none; and what the model read before it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    statement: str
    signals: LikelihoodSignals | None = None
    error: str | None = None
    evidence_sentences: int = 0
    evidence_tokens: int = 0

    @property
    def ok(self) -> bool:
        return self.signals is not None


def target_logprobs(logits: np.ndarray, targets: Sequence[int]) -> np.ndarray:
    """log-softmax of each row of `logits` at its target token (row i predicts targets[i])."""
    rows = np.asarray(logits, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != len(targets):
        raise ValueError(f"{rows.shape} logits for {len(targets)} targets: pass one row per target token")
    peak = rows.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(rows - peak).sum(axis=1)) + peak[:, 0]
    return rows[np.arange(len(targets)), np.asarray(targets, dtype=int)] - log_norm


def signals_of(with_evidence: Sequence[float], plain: Sequence[float]) -> LikelihoodSignals:
    """The signals from the per-token log-probabilities of the two readings of the same tokens."""
    e, p = np.asarray(with_evidence, dtype=np.float64), np.asarray(plain, dtype=np.float64)
    if e.shape != p.shape or e.ndim != 1:
        raise ValueError(f"{e.shape} and {p.shape} log-probabilities: both readings score the same tokens")
    if e.size == 0:
        raise ValueError(EMPTY)
    if not (np.isfinite(e).all() and np.isfinite(p).all()):
        raise ValueError("a token log-probability is not finite")
    return LikelihoodSignals(n_tokens=int(e.size), mean_logprob_evidence=float(e.mean()),
                             mean_logprob_plain=float(p.mean()), pmi=float(e.mean() - p.mean()),
                             min_logprob_evidence=float(e.min()), share_raised=float((e > p).mean()))


def evidence_sentences(contexts: Sequence[str], statements: Sequence[str], *, sentences_per_statement: int = 4,
                       max_sentences: int = 14) -> list[str]:
    """The sentences the evidence-first verifier shows for this answer's statements (those that make a
    claim; the others are never shown to the judge), in context order."""
    asked = [s for s in statements if not makes_no_claim(s)] or list(statements)
    # the verifier shows at least `sentences_per_statement`: fewer (to fit a window) need fewer per statement
    verifier = EvidenceVerifier(sentences_per_statement=min(sentences_per_statement, max_sentences),
                                max_sentences=max_sentences, support_model=None)
    return [s.text for s in verifier.shown_sentences(context_sentences(contexts), asked)]


def evidence_prefix(sentences: Sequence[str]) -> str:
    return EVIDENCE_HEADER + "\n".join(sentences) + "\n\n" + STATEMENT_CUE


class PromptReader:
    """Reads a prefix once and continuations after it, on a llama-cpp-python `Llama` created with
    `logits_all=True` (its `eval` keeps every position's logits in `scores`)."""

    def __init__(self, llm: Any, lock: threading.Lock | None = None) -> None:
        self.llm = llm
        self.lock = lock
        self.prefix_len = 0

    def window(self) -> int:
        return int(self.llm.n_ctx())

    def tokens(self, text: str, *, first: bool) -> list[int]:
        """`text`'s tokens; `first`: it opens the context (a BOS where the model has one)."""
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=first, special=False))

    def read_prefix(self, tokens: Sequence[int]) -> None:
        """Read `tokens` from an empty context, keeping only the last position's logits."""
        if not tokens:
            raise ValueError("an empty prefix: the first statement token would have nothing to follow")
        if len(tokens) >= self.window():
            raise ValueError(f"the prefix has {len(tokens)} tokens, the model's window {self.window()}")
        llm = self.llm
        llm.reset()
        if len(tokens) > 1:
            self._eval(list(tokens[:-1]), logits=False)
        self._eval(list(tokens[-1:]), logits=True)
        self.prefix_len = len(tokens)

    def continuation_logprobs(self, tokens: Sequence[int]) -> np.ndarray:
        """Each token's log-probability after the prefix and the tokens before it; the context is
        rewound to the prefix's end first, so the prefix's KV state is reused, not read again."""
        if self.prefix_len == 0:
            raise ValueError("read a prefix first")
        n = self.prefix_len
        if n + len(tokens) > self.window():
            raise ValueError(f"prefix and statement have {n + len(tokens)} tokens, more than the model's window "
                             f"({self.window()})")
        self.llm.n_tokens = n  # `eval` drops the KV cache past n_tokens before it reads
        self._eval(list(tokens), logits=True)
        # row n-1 (kept from the prefix's last token) predicts the first statement token
        return target_logprobs(self.llm.scores[n - 1 : n - 1 + len(tokens), :], tokens)

    def _eval(self, tokens: list[int], *, logits: bool) -> None:
        llm = self.llm
        if logits or not hasattr(llm, "_logits_all"):
            llm.eval(tokens)
            return
        # llama-cpp-python asks the model for every position's logits when the context was made with
        # logits_all; the prefix needs none but the last, which the caller reads with logits on
        saved = llm._logits_all
        llm._logits_all = False
        try:
            llm.eval(tokens)
        finally:
            llm._logits_all = saved


def statement_likelihoods(reader: PromptReader, contexts: Sequence[str], statements: Sequence[str], *,
                          sentences_per_statement: int = 4, max_sentences: int = 14) -> list[StatementLikelihood]:
    """The signals of every statement of one answer, the evidence read once for all of them.

    Evidence that would leave a statement no room in the window is cut to fewer sentences, in the
    order the verifier picks them (each statement's best first).
    """
    toks = [reader.tokens(" " + s.strip(), first=False) if s.strip() else [] for s in statements]
    longest = max((len(t) for t in toks), default=0)
    for m in range(max_sentences, 0, -1):
        shown = evidence_sentences(contexts, statements, sentences_per_statement=sentences_per_statement,
                                   max_sentences=m)
        prefix = reader.tokens(evidence_prefix(shown), first=True)
        if len(prefix) + longest <= reader.window() or m == 1:
            break
    plain = reader.tokens(STATEMENT_CUE, first=True)
    with reader.lock if reader.lock is not None else nullcontext():
        with_evidence = _read_all(reader, prefix, toks)
        without = _read_all(reader, plain, toks)
    out = []
    for statement, tokens, e, p in zip(statements, toks, with_evidence, without, strict=True):
        meta = {"statement": statement, "evidence_sentences": len(shown), "evidence_tokens": len(prefix)}
        error = EMPTY if not tokens else e if isinstance(e, str) else p if isinstance(p, str) else None
        if error is not None:
            out.append(StatementLikelihood(error=error, **meta))
            continue
        try:
            out.append(StatementLikelihood(signals=signals_of(e, p), **meta))
        except ValueError as exc:
            out.append(StatementLikelihood(error=str(exc), **meta))
    return out


def _read_all(reader: PromptReader, prefix: list[int], statements: list[list[int]]) -> list[np.ndarray | str]:
    """Each statement's token log-probabilities after `prefix` (read once), or the reason it has none."""
    try:
        reader.read_prefix(prefix)
    except ValueError as exc:
        return [str(exc)] * len(statements)
    out: list[np.ndarray | str] = []
    for tokens in statements:
        if not tokens:
            out.append(EMPTY)
            continue
        try:
            out.append(reader.continuation_logprobs(tokens))
        except ValueError as exc:
            out.append(str(exc))
    return out


def answer_likelihoods(model: str, contexts: Sequence[str], statements: Sequence[str],
                       **options: int) -> list[StatementLikelihood]:
    """`statement_likelihoods` with a packaged local model (`<name>` or `local/<name>`), on its
    logits-keeping context (`ragwatch.llm.local.load(..., logits_all=True)`)."""
    from ragwatch.llm import local  # late: loading llama.cpp is what this call is for, not an import's cost

    llm, lock = local.load(model.removeprefix("local/"), logits_all=True)
    return statement_likelihoods(PromptReader(llm, lock), contexts, statements, **options)
