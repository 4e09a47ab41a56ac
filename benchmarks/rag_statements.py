"""The faithfulness verifiers on labelled RAG answer statements (and QAGS claims): per-statement features.

For each answer of a labelled set (`statements.jsonl`: item_id, question, contexts, statement, label)
the candidate verifier judges all its statements as the product does (one plan per answer), timed
per answer, with the prompt tokens it read. The records keep every feature the support model reads,
so `fit_report` can fit and score the combination cross-fitted by answer (never on the answer it
scores). Used by `benchmarks/judge_choice.py --rag`.

    python benchmarks/judge_choice.py --rag /work/shared/data/judge_dev/rag_statements/statements.jsonl \
        --qags /work/shared/data/judge_dev/qags_xsum.jsonl --n-qags 60 --out reports/judge_choice_rag.json
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from ragwatch.judges.engine import drive, gather
from ragwatch.judges.faithfulness import PROMPT_VERSION
from ragwatch.judges.faithfulness.evidence import missing_terms
from ragwatch.judges.faithfulness.support_model import SupportModel, feature_vector
from ragwatch.judges.faithfulness.verify import Verifier
from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier, features_of
from ragwatch.statements import StatementVerdict
from ragwatch.statistics.agreement import balanced_accuracy, cohen_kappa, roc_auc, with_interval


def load_statements(path: Path) -> list[dict[str, Any]]:
    """Answers with their labelled statements: [{id, question, contexts, statements, labels}]."""
    answers: dict[str, dict[str, Any]] = {}
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in ("supported", "unsupported"):
            continue  # the readers disagreed: no reference label
        item = answers.setdefault(row["item_id"], {"id": row["item_id"], "question": row.get("question"),
                                                   "contexts": row["contexts"], "statements": [], "labels": []})
        item["statements"].append(row["statement"])
        item["labels"].append(row["label"] == "supported")
    return list(answers.values())


def qags_answers(items: Sequence[Any]) -> list[dict[str, Any]]:
    """Calibration items with a context (QAGS: article, claim) as one-statement answers."""
    return [{"id": it.id, "question": None, "contexts": list(it.contexts), "statements": [it.answer],
             "labels": [bool(it.faithful)]} for it in items]


def make_verifier(name: str) -> Any:
    if name == "windows":  # the verifier shipped until now: all contexts, verdict then reason
        return Verifier(verify="batched", max_context_tokens=1500, use_logprobs=True, support_threshold=0.5)
    if name.startswith("evidence"):
        k = int(name.removeprefix("evidence") or 4)
        return EvidenceVerifier(sentences_per_statement=k, support_model=None, support_threshold=0.5)
    if name.startswith("missing"):
        return MissingVerifier(int(name.removeprefix("missing") or 4))
    raise ValueError(f"unknown candidate {name!r}: windows, evidence<k>, missing<k>")


def judge_answer(llm: Any, verifier: Any, answer: dict[str, Any]) -> tuple[list[StatementVerdict], float, int]:
    """One answer's statements judged together as the product does (one plan): verdicts, seconds, prompt tokens."""
    ((verdicts, prompt_tokens),), seconds = judge_batch(llm, verifier, [answer])
    return verdicts, seconds, prompt_tokens


def judge_batch(llm: Any, verifier: Any, answers: Sequence[dict[str, Any]]
                ) -> tuple[list[tuple[list[StatementVerdict], int]], float]:
    """Several answers' plans gathered into one run, as the judge step gathers its items (the local
    model decodes them together up to the client's concurrency): per answer (verdicts, prompt tokens),
    and the wall seconds of the whole batch."""
    start = time.perf_counter()
    outcome, gens = drive(gather({str(i): verifier.plan(a["contexts"], a["statements"], a["question"])
                                  for i, a in enumerate(answers)}), llm)
    seconds = time.perf_counter() - start
    out = []
    for i in range(len(answers)):
        result = outcome[str(i)]
        out.append((result[0] if isinstance(result, tuple) else [], 0))
    if len(answers) == 1:  # the prompt tokens of a batch cannot be told apart per answer
        out[0] = (out[0][0], sum(g.prompt_tokens for g in gens))
    return out, seconds


def judge_answers(llm: Any, candidate: str, answers: list[dict[str, Any]], records: list[dict[str, Any]],
                  save: Callable[[], None]) -> None:
    """Judge every answer not yet in `records`, one at a time: per-statement features, seconds, tokens."""
    verifier = make_verifier(candidate)
    done = {r["answer_id"] for r in records}
    for answer in answers:
        if answer["id"] in done:
            continue
        verdicts, seconds, prompt_tokens = judge_answer(llm, verifier, answer)
        for k, label in enumerate(answer["labels"]):
            v = verdicts[k] if k < len(verdicts) else None
            feats = features_of(v) if v is not None else {}
            feats["absent_terms"] = bool(missing_terms(answer["statements"][k], answer["contexts"]))
            if v is not None and v.p_judge is None and v.p_supported is not None and not v.evidence_text:
                feats["p_judge"] = v.p_supported  # the window verifier reads P(yes) directly
            records.append({"answer_id": answer["id"], "k": k, "label": label,
                            "error": None if v is not None and v.verdict is not None else
                            (v.error if v is not None else "no verdict"),
                            "features": feats, "seconds": seconds / len(answer["labels"]),
                            "answer_seconds": seconds if k == 0 else 0.0,
                            "prompt_tokens": prompt_tokens if k == 0 else 0})
        save()


def _folds(records: list[dict[str, Any]], n_folds: int, seed: int) -> list[int]:
    """Fold per record, grouped by answer (all statements of an answer in one fold)."""
    answers = sorted({r["answer_id"] for r in records})
    random.Random(seed).shuffle(answers)
    fold_of = {a: i % n_folds for i, a in enumerate(answers)}
    return [fold_of[r["answer_id"]] for r in records]


def fit_support_model(records: list[dict[str, Any]], features: tuple[str, ...]) -> SupportModel:
    """Logistic regression (L2, balanced classes) and the cut-off of best balanced accuracy."""
    from sklearn.linear_model import LogisticRegression

    from ragwatch.statistics.cutoff import best_threshold

    x = [feature_vector(r["features"], features) for r in records]
    y = [int(r["label"]) for r in records]
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit(x, y)
    fitted = SupportModel(intercept=float(model.intercept_[0]),
                          weights={n: float(w) for n, w in zip(features, model.coef_[0], strict=True)})
    scores = [fitted.predict(r["features"]) for r in records]
    cutoff, _ = best_threshold(scores, [bool(v) for v in y])
    return fitted.model_copy(update={"cutoff": float(cutoff)})


SHIPPED_FEATURES = ("judge_logit", "lexical")


def vetoed(record: dict[str, Any]) -> bool:
    """The verifier's rules: no claim, or a number / identifier / name that no retrieved context holds."""
    return bool(record["features"].get("no_claim") or record["features"].get("absent_terms"))


def cross_fitted(records: list[dict[str, Any]], features: tuple[str, ...], *, n_folds: int = 5,
                 seed: int = 0) -> tuple[list[float], list[bool]]:
    """Each statement's combined P(supported) and verdict (under the rules) from a model fitted on the
    other answers (grouped folds: all statements of an answer in one fold)."""
    folds = _folds(records, n_folds, seed)
    scores, verdicts = [0.0] * len(records), [False] * len(records)
    for fold in range(n_folds):
        train = [r for r, f in zip(records, folds, strict=True) if f != fold]
        if len({r["label"] for r in train}) < 2:
            raise SystemExit(f"too few labelled answers to cross-fit ({len(records)} statements): a fold's training "
                             "part holds one class only; use more answers (--rag-answers) or the whole set")
        model = fit_support_model(train, features)
        for i, (r, f) in enumerate(zip(records, folds, strict=True)):
            if f == fold:
                scores[i] = model.predict(r["features"])
                verdicts[i] = scores[i] >= model.cutoff and not vetoed(r)
    return scores, verdicts


def agreement_row(labels: list[bool], scores: list[float], verdicts: list[bool], seed: int = 0) -> dict[str, Any]:
    auc = with_interval(roc_auc, labels, scores, seed=seed)
    bacc = with_interval(balanced_accuracy, labels, verdicts, seed=seed)
    kappa = with_interval(cohen_kappa, labels, verdicts, seed=seed)
    return {"n": len(labels), "auc": [auc.value, auc.ci_low, auc.ci_high],
            "balanced_accuracy": [bacc.value, bacc.ci_low, bacc.ci_high],
            "kappa": [kappa.value, kappa.ci_low, kappa.ci_high],
            "share_supported": sum(verdicts) / len(verdicts), "share_labelled": sum(labels) / len(labels)}


def fit_report(records: list[dict[str, Any]], features: tuple[str, ...] = SHIPPED_FEATURES, *, seed: int = 0,
               n_folds: int = 5, model: str | None = None) -> dict[str, Any]:
    """Judge alone (cut-off cross-fitted), lexical alone, and the combination, all cross-fitted by answer."""
    ok = [r for r in records if r["error"] is None and r["features"].get("p_judge") is not None]
    labels = [bool(r["label"]) for r in ok]
    out: dict[str, Any] = {"n_statements": len(records), "n_failed": len(records) - len(ok),
                           "s_per_answer": _mean([r["answer_seconds"] for r in records if r["k"] == 0]),
                           "prompt_tokens_per_answer": _mean([r["prompt_tokens"] for r in records if r["k"] == 0])}
    for name, feats in (("judge", ("judge_logit",)), ("lexical", ("lexical",)), ("combined", features)):
        scores, verdicts = cross_fitted(ok, feats, n_folds=n_folds, seed=seed)
        out[name] = agreement_row(labels, scores, verdicts, seed=seed)
    out["model_all"] = fit_support_model(ok, features).model_dump()
    from ragwatch.judges.faithfulness.calibrations import faithfulness_calibration

    shipped = faithfulness_calibration(model, PROMPT_VERSION) if model else None
    if shipped is not None:  # the shipped model and cut-off as they are (fitted on RAG statements), rules included
        scores = [shipped.support_model.predict(r["features"]) for r in ok]
        verdicts = [s >= shipped.support_model.cutoff and not vetoed(r) for s, r in zip(scores, ok, strict=True)]
        out["shipped"] = agreement_row(labels, scores, verdicts, seed=seed)
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


MISSING_SYSTEM = (
    "You compare a STATEMENT with numbered SENTENCES taken from the documents an answer was written from. "
    "Question: does the STATEMENT say anything that the SENTENCES do not state? Answer yes when any part "
    "of it (a name, number, default value, command, purpose or relation) is not in the sentences, is "
    "different from them, or is only suggested; also yes when the statement makes no claim of its own "
    "(a heading, a lead-in, a fragment). Answer no when the sentences state all of it.\n"
    'Reply with JSON only: {"verdict": "yes" or "no"}'
)


class MissingVerifier:
    """Experimental: one call per statement with its own best sentences, the question asked the other way
    round ("does it say anything the sentences do not?"), so a judge's yes-bias leans to unsupported."""

    def __init__(self, k: int = 4) -> None:
        self.k = k

    def plan(self, contexts: Sequence[str], statements: Sequence[str], question: str | None = None) -> Any:
        from pydantic import create_model

        from ragwatch.judges.base import fence
        from ragwatch.judges.engine import Call
        from ragwatch.judges.faithfulness.evidence import best_sentences, bigram_support, context_sentences
        from ragwatch.llm.logprobs import yes_probability_at

        schema = create_model("Missing", verdict=(Literal["yes", "no"], ...))
        sentences = context_sentences(contexts)
        calls = []
        for statement in statements:
            shown = best_sentences(statement, sentences, self.k)
            lines = "\n".join(f"[{n}] {s.text}" for n, s in enumerate(shown, start=1))
            user = f"{fence('SENTENCES', lines)}\n{fence('STATEMENT', statement)}\nReply with the JSON object only."
            calls.append(Call([{"role": "user", "content": user}], schema, MISSING_SYSTEM, True))
        gens = yield calls
        out = []
        for statement, gen in zip(statements, gens, strict=True):
            p_missing = yes_probability_at(gen) if gen.ok else None
            out.append(StatementVerdict(statement=statement, verdict=None if p_missing is None else p_missing < 0.5,
                                        p_judge=None if p_missing is None else 1 - p_missing,
                                        lexical_support=bigram_support(statement, contexts),
                                        evidence=[1], error=None if gen.ok else gen.error))
        return out, 1
