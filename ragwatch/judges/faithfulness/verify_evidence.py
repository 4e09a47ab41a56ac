"""Evidence-first verification: the judge cites the context sentences that state a statement, then rules.

Each statement is shown with only the context sentences that share the most words with it
(`ragwatch.judges.faithfulness.evidence.best_sentences`), numbered. The judge replies, per statement, the ids of
the sentences that state it and then its verdict; P(supported) is read at the verdict token (the
evidence comes first, so the verdict is conditioned on what was cited, not on a free-text reason).
The judge's reply (its P(yes), whether it cited any sentence, the terms its cited sentences lack) and
the model-free features (the share of the statement's word pairs found in the contexts, the terms of
each kind no context holds) are one `StatementFeatures` record
(`ragwatch.judges.faithfulness.features.statement_features`), combined by a `SupportModel` (a
logistic model fitted on labelled RAG answer statements, `ragwatch.judges.faithfulness.support_model`;
the shipped one reads only the features that held up on unseen systems) into the P(supported) the
verdict is cut at. Two rules of a careful
reader overrule it: a statement that makes no claim (markup, a lone lead-in word) is unsupported
without a call, and so is one with a number, code identifier, proper name or quoted string that no
retrieved context contains (`features.VETO_KINDS`). A cited id that was not shown cites nothing; terms
missing from the cited sentences are recorded for the reader (as vetoes they cost agreement: `decide`).
With `cascade` and a support model,
the judge is asked only about the statements whose verdict some reply could change (
`ragwatch.judges.faithfulness.cascade`): the others get the verdict every reply would have led to,
and an answer with none left makes no call.

Example:
    >>> calibration = faithfulness_calibration(model, version)  # doctest: +SKIP
    >>> verifier = EvidenceVerifier(support_model=calibration.support_model)  # doctest: +SKIP
    >>> verdicts, _ = drive(gather({"a": verifier.plan(contexts, statements, question)}), llm)[0]["a"]  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, create_model

from ragwatch.judges.base import DATA_RULE, fence, generation_error
from ragwatch.judges.engine import Call, Plan
from ragwatch.judges.faithfulness.cascade import judge_can_change, unasked_probability
from ragwatch.judges.faithfulness.evidence import Sentence, best_sentences, context_sentences, missing_terms
from ragwatch.judges.faithfulness.features import (  # noqa: F401  (features_of: read from here by the level)
    ABSENT,
    NO_CLAIM,
    absent_of,
    features_of,
    statement_features,
    vetoing_terms,
)
from ragwatch.judges.faithfulness.support_model import SupportModel
from ragwatch.llm.logprobs import yes_probabilities_at
from ragwatch.statements import StatementFeatures, StatementVerdict

MAX_CITED = 3
UNASKED = "decided without the judge: no reply of it could change the verdict"

# Everything that is the same in every call is here, ahead of the data: a batch-engine slot keeps it from its
# previous call, so only the sentences, question and statements are read per answer (v6 on the default run's
# answers: 316 tokens a call read fresh where v5, which fenced each statement and closed with these
# instructions, read 377; 0.81x v5's judge time side by side, benchmarks/results/judge_speed.md)
EVIDENCE_SYSTEM = (
    "You check statements from an answer against numbered SENTENCES taken from the documents the answer "
    "was written from. When a QUESTION is given, the statements come from an answer to it: use it only to "
    "tell what they refer to. For each numbered STATEMENT, in order: first list the ids of the SENTENCES "
    "that state what it says (at most 3; an empty list when no sentence does), then give the verdict: yes "
    "only when the cited sentences state the whole statement, said outright or as a direct paraphrase; no "
    "when any part of it (a name, number, default value, command, purpose or relation) is missing from "
    "those sentences, different, or only suggested by them, and no when the statement makes no claim of "
    "its own (a heading, a lead-in such as 'Here are the steps:', a fragment). Use only the sentences, "
    "never your own knowledge.\n"
    f"{DATA_RULE}\n"
    'Reply with the JSON object only: {"checks": [{"evidence": [<ids>], "verdict": "yes" or "no"}, ...]}, '
    "exactly one check per STATEMENT, in order."
)


@lru_cache(maxsize=256)
def checks_schema(n_statements: int) -> type[BaseModel]:
    """Exactly one check per statement, at most `MAX_CITED` evidence ids each.

    The ids are plain integers, not an enum of the ids shown: an enum makes the grammar reject the
    model's preferred number tokens, and each rejection costs a whole-vocabulary check (a 4-statement
    reply took 4.5 minutes instead of seconds). Ids that were not shown are caught by `decide`.
    """
    check = create_model(
        "EvidenceCheck",
        evidence=(list[int], Field(max_length=MAX_CITED)),
        verdict=(Literal["yes", "no"], ...),
    )
    return create_model("EvidenceChecks", checks=(list[check], Field(min_length=n_statements,
                                                                      max_length=n_statements)))


def evidence_prompt(statements: Sequence[str], shown: Sequence[Sentence], question: str | None) -> str:
    """The numbered sentences, the question (to resolve 'it'), the numbered statements, how many checks."""
    parts = [fence("SENTENCES", "\n".join(f"[{k}] {s.text}" for k, s in enumerate(shown, start=1)))]
    if question:
        parts.append(fence("QUESTION", question))
    parts.append(fence("STATEMENTS", "\n".join(f"{k}. {s}" for k, s in enumerate(statements, start=1))))
    n = len(statements)
    parts.append(f"Give exactly {n} check{'s' if n > 1 else ''}.")
    return "\n".join(parts)


def prompt_statements(prompt: str) -> list[str]:
    """The statements of an `evidence_prompt`, in order (what a stand-in judge reads; [] when there are none)."""
    block = re.search(r"<<<BEGIN STATEMENTS>>>\n(.*?)\n<<<END STATEMENTS>>>", prompt, flags=re.S)
    text, out = ("\n" + block.group(1)) if block else "", []
    while text.startswith(f"\n{len(out) + 1}. "):
        text = text.removeprefix(f"\n{len(out) + 1}. ")
        end = text.find(f"\n{len(out) + 2}. ")
        out.append(text if end < 0 else text[:end])
        text = "" if end < 0 else text[end:]
    return out


class EvidenceVerifier:
    """Statements against their best-matching context sentences: one call per answer, evidence first."""

    def __init__(
        self,
        *,
        sentences_per_statement: int = 4,
        max_sentences: int = 14,
        use_logprobs: bool = True,
        support_model: SupportModel | None,
        support_threshold: float | None = None,
        cascade: bool = False,
    ) -> None:
        if sentences_per_statement < 1:
            raise ValueError(f"sentences_per_statement must be >= 1, got {sentences_per_statement}")
        self.per_statement = sentences_per_statement
        self.max_sentences = max(max_sentences, sentences_per_statement)
        self.use_logprobs = use_logprobs
        self.support_model = support_model
        self.threshold = support_threshold
        # ask the judge only where its reply can change a verdict (needs the support model, which says where)
        self.cascade = cascade and support_model is not None

    def shown_sentences(self, sentences: Sequence[Sentence], statements: Sequence[str]) -> list[Sentence]:
        """The union of each statement's best sentences, in context order, at most `max_sentences`."""
        bests = [best_sentences(statement, sentences, self.per_statement) for statement in statements]
        chosen: dict[int, Sentence] = {}
        for rank in range(self.per_statement):  # round-robin, so every statement keeps its best ones
            for best in bests:
                if rank < len(best) and len(chosen) < self.max_sentences:
                    chosen.setdefault(best[rank].id, best[rank])
        return sorted(chosen.values(), key=lambda s: s.id)

    def plan(self, contexts: Sequence[str], statements: Sequence[str], question: str | None = None) -> Plan:
        sentences = context_sentences(contexts)
        before = [statement_features(s, contexts) for s in statements]  # what is known before the judge replies
        out: list[StatementVerdict | None] = [None] * len(statements)
        pending = []
        for k, statement in enumerate(statements):
            if before[k].no_claim:
                out[k] = self.decide(statement, before[k], [])
            elif self.cascade and not self.judge_matters(statement, before[k]):
                out[k] = self.decide_unasked(statement, before[k])
            else:
                pending.append(k)
        if pending:
            shown = self.shown_sentences(sentences, [statements[k] for k in pending])
            prompt = evidence_prompt([statements[k] for k in pending], shown, question)
            schema = checks_schema(len(pending))
            (gen,) = yield [Call([{"role": "user", "content": prompt}], schema, EVIDENCE_SYSTEM, self.use_logprobs)]
            if not gen.ok or gen.parsed is None:
                for k in pending:
                    out[k] = StatementVerdict(statement=statements[k], verdict=None,
                                              lexical_support=before[k].lexical, error=generation_error(gen))
            else:
                probs = yes_probabilities_at(gen) if self.use_logprobs else []
                if len(probs) != len(pending):
                    probs = [None] * len(pending)
                for k, check, p in zip(pending, gen.parsed.checks, probs, strict=True):
                    # ids are the numbers shown (1..len(shown)); one that was not shown cites nothing
                    cited = [shown[i - 1] for i in dict.fromkeys(check.evidence) if 1 <= i <= len(shown)]
                    judge_yes = p if p is not None else float(check.verdict == "yes")  # greedy: its token
                    features = statement_features(statements[k], contexts, p_judge=judge_yes,
                                                  cited=[s.text for s in cited])
                    out[k] = self.decide(statements[k], features, cited)
        return [v for v in out if v is not None], int(bool(pending))

    def judge_matters(self, statement: str, features: StatementFeatures) -> bool:
        """Whether some reply of the judge could change this statement's verdict (a vetoed statement is
        unsupported whatever the judge says)."""
        assert self.support_model is not None
        return not features.vetoed and judge_can_change(self.support_model, self.cutoff(), lexical=features.lexical,
                                                        n_terms=len(missing_terms(statement, [])),
                                                        base=features.model_dump())

    def cutoff(self) -> float:
        assert self.support_model is not None
        return self.support_model.cutoff if self.threshold is None else self.threshold

    def decide_unasked(self, statement: str, features: StatementFeatures) -> StatementVerdict:
        """The verdict every reply of the judge would lead to; P(supported) the mean over those replies."""
        assert self.support_model is not None
        rule = rule_of(features)
        p = unasked_probability(self.support_model, lexical=features.lexical,
                                n_terms=len(missing_terms(statement, [])), base=features.model_dump())
        supported = p >= self.cutoff() and not features.vetoed
        return StatementVerdict(statement=statement, verdict=supported, p_supported=p, p_judge=None,
                                threshold=self.cutoff(), lexical_support=features.lexical, rule=rule,
                                missing_terms=absent_of(features), features=features,
                                reason=rule or f"{UNASKED} (lexical support {features.lexical:.2f})")

    def decide(self, statement: str, features: StatementFeatures, cited: Sequence[Sentence]) -> StatementVerdict:
        """The verdict: the support model on the statement's features, under the rules.

        Two rules overrule it (measured on labelled RAG statements): a statement that makes no claim,
        and one with a term of a vetoing kind that no retrieved context contains (`features.VETO_KINDS`).
        Terms missing from the cited sentences only (often said in a neighbouring sentence) and a
        "yes" that cites nothing are features, not decisive: as vetoes they cost balanced accuracy on
        labelled RAG answer statements (docs/judges.md).
        """
        judge_yes = features.p_judge
        if self.support_model is not None and judge_yes is not None:
            p = self.support_model.predict(features.model_dump())
            threshold = self.support_model.cutoff if self.threshold is None else self.threshold
        else:
            p = judge_yes if judge_yes is not None else 0.0
            threshold = 0.5 if self.threshold is None else self.threshold
        supported = p >= threshold and not features.vetoed
        rule = rule_of(features)
        shown_missing = absent_of(features) or (sorted(missing_terms(statement, [s.text for s in cited]))
                                                if cited else [])
        return StatementVerdict(
            statement=statement, verdict=supported, p_supported=p, p_judge=judge_yes, threshold=threshold,
            evidence=[s.id for s in cited], evidence_text=[s.text for s in cited], lexical_support=features.lexical,
            rule=rule, missing_terms=shown_missing, reason=_reason(supported, cited, rule), features=features,
        )


def rule_of(features: StatementFeatures) -> str | None:
    """The reader's rule that decided the statement, in words (None: none did)."""
    if features.no_claim:
        return NO_CLAIM
    if features.absent_terms:
        return f"{ABSENT}: {', '.join(vetoing_terms(features)[:5])}"
    return None


def _reason(supported: bool, cited: Sequence[Sentence], rule: str | None) -> str:
    if rule:
        return rule
    if not cited:
        return "cites no context sentence"
    quoted = " / ".join(f"[{s.id}] {s.text[:160]}" for s in cited)
    return ("supported by " if supported else "not supported by the cited ") + quoted
