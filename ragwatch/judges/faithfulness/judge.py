"""Faithfulness, statement by statement: is every claim of the answer supported by the retrieved contexts?

Stage 1 (`split.py`) splits each answer into at most `max_statements` statements: `statements: llm` asks the judge
for standalone claims (one call per answer, as ragas does); `statements: sentences` takes the answer's
sentences (no call; what a small local judge splits well, and the verifier is told the question so
that "it" and "this" can be resolved). Stage 2 verifies the statements against the contexts with the
evidence-first verifier (`verify: evidence`, the default, `ragwatch.judges.faithfulness.verify_evidence`: each
statement against its best-matching context sentences, the judge cites sentence ids before its
verdict, a careful reader's rules overrule it, and a support model fitted on labelled RAG answer
statements combines its P(yes) with lexical evidence), or with the window verifier (`batched` /
`per_statement`, `ragwatch.judges.faithfulness.verify`: all contexts, create-and-refine over windows).
The verdict is P(supported) >= the cut-off: `support_threshold` when set, else the calibrated one of
the judge model and prompt version (`ragwatch.judges.faithfulness.calibrations`), else the model registry's, else
0.5; without logprobs it is the greedy verdict. Item score = supported / total statements (the verdict
share); `weighted_score` = mean P(supported). The metric's score is the verdict share only for a judge
without calibration data: with it, the score and interval are the level careful readers would find
(`ragwatch.judges.faithfulness.level`: calibrated P(supported) per statement, mean over items, an
interval that refits the calibration) and `details["verdict_share"]` keeps the share of verdicts.
Every statement's verdict is one typed record, `StatementVerdict` (evidence, P(supported), cut-off,
reason), in the item details under `verdicts`: read them with `statement_verdicts(details)`. The
judge's measured agreement on labelled RAG answer statements, when its calibration has one, is on the
metric's `MetricInfo.agreement`.

Rules for items that cannot be scored (explicit failures, never a score of 0 by default):
empty answer -> "empty answer: no statements to verify"; no retrieved contexts -> "no retrieved
contexts to verify against"; zero statements extracted -> "the judge found no statements in the
answer"; a statement whose every verification call failed -> failure naming the statement.

Example:
    >>> judge = FaithfulnessJudge(llm, FaithfulnessOptions(max_statements=8))  # doctest: +SKIP
    >>> result = judge.evaluate(samples, answers)  # doctest: +SKIP
    >>> [v.verdict for v in statement_verdicts(result.items[0].details)]  # doctest: +SKIP
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from ragwatch.judges.base import FewShotExample, answer_error, generation_error, to_json
from ragwatch.judges.engine import Call, LLMJudge, Plan, Score, mean
from ragwatch.judges.faithfulness.calibrations import judge_cutoff, measured_as_judge
from ragwatch.judges.faithfulness.level import CASCADE_LEVEL_FEATURES, LEVEL_FEATURES, with_level
from ragwatch.judges.faithfulness.split import SPLIT_SYSTEM, answer_statements, split_prompt, statements_schema
from ragwatch.judges.faithfulness.verify import VerdictReply, Verifier
from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier
from ragwatch.judges.faithfulness.versions import FEATURES_VERSION, PROMPT_VERSION, window_prompt_version
from ragwatch.judges.registry import JudgeDeps, JudgeOptions, register_judge
from ragwatch.results import MetricInfo, MetricResult
from ragwatch.statements import StatementVerdict
from ragwatch.types import EvalSample, RagAnswer

StatementSource = Literal["llm", "sentences"]
VerifyChoice = Literal["evidence", "batched", "per_statement"]


class FaithfulnessOptions(JudgeOptions):
    # the calibrated judge's shape: the answer's sentences (a small judge splits claims badly), at most 4
    statements: StatementSource = "sentences"
    """sentences: the answer's sentences are the statements (no call); llm: the judge extracts claims."""
    max_statements: int = Field(default=4, ge=1, le=50)
    """Statements per answer at most (more are grouped)."""
    max_context_tokens: int = Field(default=1500, ge=50)
    """Context tokens the batched/per_statement verifiers read at most."""
    verify: VerifyChoice = "evidence"
    """evidence: each statement against its best context sentences (calibrated); batched, per_statement: all
    contexts (the verifiers until v4)."""
    sentences_per_statement: int = Field(default=4, ge=1, le=20)  # evidence: context sentences shown per statement
    """evidence: context sentences shown per statement."""
    # P(supported) cut-off with logprobs; None: the judge model's calibrated cut-off, else 0.5
    support_threshold: float | None = Field(default=None, ge=0, le=1)
    """P(supported) cut-off; null: the judge model's calibrated cut-off, else 0.5."""
    few_shot: list[FewShotExample] = Field(default_factory=list)
    """Worked examples shown before each item."""
    cascade: bool = False
    """evidence: ask the judge only where its reply can change a verdict (0.27x the judge's time, the same
    verdicts; the level then reads no P(yes), so the gate cannot see names of the contexts put in the wrong
    place). On in `--quick`."""


class FaithfulnessJudge(LLMJudge):
    """Supported statements / total statements, verified against the contexts actually retrieved."""

    def __init__(
        self,
        llm: Any,
        options: FaithfulnessOptions | None = None,
        *,
        model: str | None = None,
        use_logprobs: bool = False,
        name: str = "faithfulness",
        system_fingerprint: str | None = None,
        **settings: Any,
    ) -> None:
        """Built from its options block (`FaithfulnessOptions`, where every default lives); `settings` are
        option fields given one by one (`FaithfulnessJudge(llm, verify="batched")`), validated as the block."""
        if options is not None and settings:
            raise ValueError(f"give the options block or option fields, not both (got {sorted(settings)})")
        options = options if options is not None else FaithfulnessOptions.model_validate(settings)
        statements, max_statements, verify = options.statements, options.max_statements, options.verify
        max_context_tokens, few_shot, cascade = options.max_context_tokens, options.few_shot, options.cascade
        if verify == "evidence" and few_shot and any("statement" in ex.input for ex in few_shot):
            raise ValueError("verification few-shot examples ({statement, context} -> {verdict, reason}) are for "
                             "verify: batched or per_statement; the evidence verifier takes none")
        self.options = options
        self.statements = statements
        prompt_version = PROMPT_VERSION if verify == "evidence" else window_prompt_version(verify)
        self.cut = judge_cutoff(model, prompt_version, option=options.support_threshold, use_logprobs=use_logprobs,
                                features_version=FEATURES_VERSION if verify == "evidence" else None)
        self.calibration = self.cut.calibration
        self.support_threshold = self.cut.cutoff
        self.metrics = {name: MetricInfo(
            scale=(0.0, 1.0), prompt_version=prompt_version,
            description="fraction of the answer's statements the contexts support",
            agreement=self.calibration.agreement if self.calibration is not None else None)}
        self.llm = llm
        self.model = model
        self.max_statements = max_statements
        self.use_logprobs = use_logprobs
        self.schema = statements_schema(max_statements)
        self.split_examples: list[dict[str, str]] = []
        examples: list[tuple[str, list[str], VerdictReply]] = []
        for ex in few_shot:
            if "statement" in ex.input:  # a verification example: {statement, context} -> {verdict, reason}
                ctx = ex.input.get("context", ex.input.get("contexts", ""))
                window = [str(c) for c in ctx] if isinstance(ctx, list) else [str(ctx)]
                examples.append((str(ex.input["statement"]), window, VerdictReply.model_validate(ex.output)))
            elif "answer" in ex.input:  # a splitting example: {question, answer} -> {statements}
                parsed = self.schema.model_validate(ex.output)
                user = split_prompt(str(ex.input.get("question", "")), str(ex.input["answer"]))
                self.split_examples += [
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": to_json(parsed.model_dump())},
                ]
            else:
                raise ValueError(
                    "a faithfulness few-shot example needs input {question, answer} with output "
                    "{statements: [...]}, or input {statement, context} with output {verdict, reason}; "
                    f"got input keys {sorted(ex.input)}"
                )
        self.verifier: Verifier | EvidenceVerifier
        if verify == "evidence":
            self.verifier = EvidenceVerifier(sentences_per_statement=options.sentences_per_statement,
                                             use_logprobs=use_logprobs, support_model=self.cut.support_model,
                                             support_threshold=self.support_threshold, cascade=cascade)
        else:
            self.verifier = Verifier(verify=verify, max_context_tokens=max_context_tokens,
                                     use_logprobs=use_logprobs, support_threshold=self.support_threshold,
                                     examples=examples)
        self.verify = verify
        self.max_context_tokens = max_context_tokens
        # which system wrote the answers: a system of the calibration data is levelled without a transfer bias
        self.system_fingerprint = system_fingerprint

    def evaluate_all(self, samples: list[EvalSample], answers: list[RagAnswer]) -> dict[str, MetricResult]:
        """The engine's result, its score the calibrated level when the judge's calibration ships labelled
        statements (`ragwatch.judges.faithfulness.level`); the verdict share kept beside it."""
        results = super().evaluate_all(samples, answers)
        name = self.name
        calibration = self.calibration if self.verify == "evidence" else None
        system = calibration.system_code(self.system_fingerprint) if calibration is not None else None
        cascade = isinstance(self.verifier, EvidenceVerifier) and self.verifier.cascade
        results[name] = with_level(results[name], calibration, threshold=self.support_threshold, system=system,
                                   features=CASCADE_LEVEL_FEATURES if cascade else LEVEL_FEATURES)
        return results

    def details(self, metric: str) -> dict[str, Any]:
        return {
            **super().details(metric),
            "statements_from": self.statements,
            "max_statements": self.max_statements,
            "max_context_tokens": self.max_context_tokens,
            "verify": self.verify,
            "support_threshold": self.support_threshold if self.use_logprobs else None,
            "cutoff_source": self.cut.source if self.use_logprobs else None,
            "support_model": self.cut.support_model.model_dump() if self.cut.support_model is not None else None,
            "judge_measured": measured_as_judge(self.model),
        }

    def plan(self, sample: EvalSample, answer: RagAnswer) -> Plan:
        """Split (one call, or the answer's sentences), then verify over the context windows."""
        if (err := answer_error(answer)) is not None:
            return Score(error=err)
        if not answer.answer.strip():
            return Score(error="empty answer: no statements to verify")
        if not answer.contexts:
            return Score(error="no retrieved contexts to verify against")
        if self.statements == "sentences":
            statements = answer_statements(answer.answer, self.max_statements)
        else:
            messages = [*self.split_examples,
                        {"role": "user", "content": split_prompt(sample.question, answer.answer)}]
            (gen,) = yield [Call(messages, self.schema, SPLIT_SYSTEM.format(n=self.max_statements))]
            if not gen.ok or gen.parsed is None:
                return Score(error=f"splitting the answer into statements: {generation_error(gen)}")
            statements = [s.strip() for s in gen.parsed.statements if s.strip()]
        if not statements:
            return Score(error="the judge found no statements in the answer")
        verdicts, n_windows = yield from self.verifier.plan([c.text for c in answer.contexts], statements,
                                                            sample.question)
        return self.score(verdicts, n_windows)

    def score(self, verdicts: list[StatementVerdict], n_windows: int) -> Score:
        statements = [v.statement for v in verdicts]
        records = [v.model_dump(exclude_defaults=True) for v in verdicts]
        for k, v in enumerate(verdicts, start=1):
            if v.verdict is None:
                return Score(
                    error=f"statement {k} ({_short(v.statement)}) could not be verified: {v.error}",
                    details={"statements": statements, "verdicts": records},
                )
        scores = [int(bool(v.verdict)) for v in verdicts]
        details: dict[str, Any] = {
            "statements": statements,
            "verdicts": records,
            "windows": n_windows,
            "reason": f"{sum(scores)} of {len(scores)} statements supported by the retrieved contexts: "
            + "; ".join(f"[{_verdict_text(s, v.p_supported)}] {_short(v.statement, 80)}: {v.reason}"
                        for s, v in zip(scores, verdicts, strict=True)),
        }
        probs = [v.p_supported for v in verdicts]
        if all(p is not None for p in probs):
            details["weighted_score"] = mean(probs)  # type: ignore[arg-type]
        return Score(score=sum(scores) / len(scores), details=details)


@register_judge("faithfulness", options=FaithfulnessOptions, default=True)
def build(options: FaithfulnessOptions, deps: JudgeDeps) -> FaithfulnessJudge:
    return FaithfulnessJudge(deps.llm, options, model=deps.model, use_logprobs=deps.use_logprobs,
                             system_fingerprint=deps.system_fingerprint)


def _verdict_text(supported: int, p_supported: float | None) -> str:
    """"yes"/"no", with P(supported) when the verdict was read from it (the reason is the judge's text)."""
    verdict = "yes" if supported else "no"
    return verdict if p_supported is None else f"{verdict}, P(supported) {p_supported:.2f}"


def _short(text: str, limit: int = 60) -> str:
    text = re.sub(r"\s+", " ", text)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
