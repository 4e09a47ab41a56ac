"""Handcrafted end-to-end keyword tests of the system under test (the ZenML RAG guide's e2e checks).

Three tables, written in YAML (`configs/e2e_tests.yaml` ships the guide's examples):
- `bad_answers`: the answer must not contain the bad words (fails when any appears; `mode: all`
  fails only when all appear);
- `bad_immediate_responses`: the answer must not *start* with a bad word (after leading whitespace,
  punctuation, quotes and Markdown marks are stripped);
- `good_responses`: the answer must contain the good words (passes when all appear; `mode: any`
  passes when at least one appears).

Matching options, set per table and overridable per case: `case_sensitive` (default False),
`whole_word` (default True: "local" does not match "locally"), `regex` (words are regular
expressions; `whole_word` still wraps them), `mode` (`any`/`all`).

Example:
    >>> tables = load_e2e_tables("configs/e2e_tests.yaml")  # doctest: +SKIP
    >>> report = run_e2e_tests(tables, lambda qs: rag.answer_many(qs))  # doctest: +SKIP
    >>> report.metrics["e2e_failure_rate"].score  # doctest: +SKIP
    0.2
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.types import RagAnswer

TableName = Literal["bad_answers", "bad_immediate_responses", "good_responses"]
TABLES: tuple[TableName, ...] = ("bad_answers", "bad_immediate_responses", "good_responses")
DEFAULT_TABLES_PATH = Path(__file__).resolve().parents[2] / "configs" / "e2e_tests.yaml"
METRIC_PREFIX = "e2e_failure_rate"

# Leading characters that do not count as the answer's first word: quotes, punctuation, Markdown.
_LEADING_NOISE = re.compile(r"""^[\s"'`“”‘’«»*_#>\-.,:;!?()\[\]{}]+""")


class MatchOptions(BaseModel):
    """How words are matched; `None` on a case means "as the table says"."""

    model_config = ConfigDict(extra="forbid")

    case_sensitive: bool | None = None
    whole_word: bool | None = None
    regex: bool | None = None
    mode: Literal["any", "all"] | None = None


class KeywordCase(MatchOptions):
    """One test: a question and its words (`bad_words` or `good_words`, as the table requires)."""

    id: str | None = None
    question: str = Field(min_length=1)
    bad_words: list[str] | None = None
    good_words: list[str] | None = None

    @field_validator("bad_words", "good_words", mode="before")
    @classmethod
    def _no_yaml_booleans(cls, value: Any) -> Any:
        if isinstance(value, list) and any(isinstance(w, bool) for w in value):
            raise ValueError("YAML read an unquoted yes/no/on/off/true/false as a boolean; quote the word, "
                             'e.g. bad_words: ["Yes"]')
        return value

    @property
    def words(self) -> list[str]:
        return self.good_words if self.good_words is not None else (self.bad_words or [])


class KeywordTable(MatchOptions):
    """A table of cases with its default matching options."""

    cases: list[KeywordCase] = Field(default_factory=list)


class E2ETables(BaseModel):
    """The three keyword tables; validates word lists and regular expressions on load."""

    model_config = ConfigDict(extra="forbid")

    bad_answers: KeywordTable = Field(default_factory=KeywordTable)
    bad_immediate_responses: KeywordTable = Field(default_factory=KeywordTable)
    good_responses: KeywordTable = Field(default_factory=KeywordTable)

    @model_validator(mode="after")
    def _check_cases(self) -> E2ETables:
        for name in TABLES:
            table: KeywordTable = getattr(self, name)
            key = "good_words" if name == "good_responses" else "bad_words"
            other = "bad_words" if key == "good_words" else "good_words"
            for i, case in enumerate(table.cases):
                where = f"{name}.cases[{i}] ({case.question[:60]!r})"
                if getattr(case, other) is not None:
                    raise ValueError(f"{where}: the {name} table takes `{key}`, not `{other}`")
                words = getattr(case, key)
                if not words or any(not w.strip() for w in words):
                    raise ValueError(f"{where}: give a non-empty `{key}` list of non-empty words")
                opts = resolve_options(name, table, case)
                if name == "bad_immediate_responses" and opts.mode == "all":
                    raise ValueError(f"{where}: an answer starts with one word; use mode: any (the default)")
                for word in words:
                    try:
                        compile_word(word, opts)
                    except re.error as exc:
                        raise ValueError(f"{where}: invalid regular expression {word!r}: {exc}") from exc
        return self

    @field_validator("bad_answers", "bad_immediate_responses", "good_responses", mode="before")
    @classmethod
    def _list_is_cases(cls, value: Any) -> Any:
        # allow the guide's shape: a table given directly as a list of cases
        return {"cases": value} if isinstance(value, list) else value

    @property
    def n_cases(self) -> int:
        return sum(len(getattr(self, name).cases) for name in TABLES)


class ResolvedOptions(BaseModel):
    case_sensitive: bool
    whole_word: bool
    regex: bool
    mode: Literal["any", "all"]


def resolve_options(table_name: TableName, table: KeywordTable, case: KeywordCase) -> ResolvedOptions:
    """Case option, else table option, else the default (good words: all; bad words: any)."""

    def pick(field: str, default: Any) -> Any:
        for source in (case, table):
            value = getattr(source, field)
            if value is not None:
                return value
        return default

    return ResolvedOptions(
        case_sensitive=pick("case_sensitive", False),
        whole_word=pick("whole_word", True),
        regex=pick("regex", False),
        mode=pick("mode", "all" if table_name == "good_responses" else "any"),
    )


def compile_word(word: str, opts: ResolvedOptions, *, at_start: bool = False) -> re.Pattern[str]:
    """The pattern for one word; whole words are delimited by non-word characters, not spaces."""
    body = word if opts.regex else re.escape(word)
    pattern = f"(?:{body})"
    if opts.whole_word:
        pattern = rf"(?<!\w){pattern}(?!\w)"
    if at_start:
        pattern = "^" + pattern
    return re.compile(pattern, 0 if opts.case_sensitive else re.IGNORECASE)


def load_e2e_tables(path: str | Path = DEFAULT_TABLES_PATH) -> E2ETables:
    """Read and validate a YAML file of keyword tables; errors name the file and the bad key."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"e2e test tables not found at {path}; pass the path of a YAML file")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    try:
        return E2ETables.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"invalid e2e test tables in {path}:\n{exc}") from exc


class E2ETestResult(BaseModel):
    """The outcome of one keyword test."""

    table: TableName
    case_id: str
    question: str
    answer: str
    passed: bool
    failing_keywords: list[str] = Field(default_factory=list)  # bad words found / good words missing
    error: str | None = None  # the system under test failed to answer


def e2e_results_frame(results: list[E2ETestResult]) -> Any:
    """One row per test as a pandas DataFrame, with every column even when there are no tests (an
    empty frame without columns cannot be described, so ZenML could not visualize the artifact)."""
    import pandas as pd  # lazily: the e2e tests themselves need no pandas

    return pd.DataFrame([r.model_dump() for r in results], columns=list(E2ETestResult.model_fields))


class E2EReport(BaseModel):
    """Every test's outcome and the failure rates: `e2e_failure_rate/<table>` and `e2e_failure_rate`."""

    results: list[E2ETestResult]
    metrics: dict[str, MetricResult]

    @property
    def failure_rate(self) -> float | None:
        return self.metrics[METRIC_PREFIX].score

    def to_markdown(self) -> str:
        lines = ["| table | tests | failed | errors | failure rate |", "|---|---|---|---|---|"]
        for name, metric in self.metrics.items():
            d = metric.details
            rate = "n/a" if metric.score is None else f"{metric.score:.2f}"
            lines.append(f"| {name} | {d['tests']} | {d['keyword_failures']} | {d['errors']} | {rate} |")
        failed = [r for r in self.results if not r.passed]
        if failed:
            lines += ["", "| table | question | failing | answer / error |", "|---|---|---|---|"]
            for r in failed:
                shown = r.error or r.answer.replace("\n", " ")[:120]
                cells = [r.table, r.question, ", ".join(r.failing_keywords), shown]
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(lines)


def check_answer(table_name: TableName, table: KeywordTable, case: KeywordCase, answer: str) -> list[str]:
    """The failing keywords of one answer (empty list = the test passes)."""
    opts = resolve_options(table_name, table, case)
    if table_name == "bad_immediate_responses":
        head = _LEADING_NOISE.sub("", answer)
        return [w for w in case.words if compile_word(w, opts, at_start=True).search(head)][:1]
    found = [w for w in case.words if compile_word(w, opts).search(answer)]
    if table_name == "good_responses":
        missing = [w for w in case.words if w not in found]
        ok = not missing if opts.mode == "all" else bool(found)
        return [] if ok else missing
    failed = bool(found) if opts.mode == "any" else len(found) == len(case.words)
    return found if failed else []


def run_e2e_tests(tables: E2ETables, answer_fn: Callable[[list[str]], list[RagAnswer]]) -> E2EReport:
    """Ask every question once through `answer_fn` and check each answer against its table.

    A question shared by several tests is asked once. An answer with `error` (or an `answer_fn`
    that raises) makes its tests explicit failures carrying the reason; they count as unscored
    items (`n_failed`) in the metrics, and as `errors` in `details`.
    """
    cases = [(name, i, case) for name in TABLES for i, case in enumerate(getattr(tables, name).cases)]
    if not cases:
        raise ValueError("no e2e tests: add cases to bad_answers, bad_immediate_responses or good_responses")
    questions = list(dict.fromkeys(case.question for _, _, case in cases))
    try:
        answers = answer_fn(questions)
    except Exception as exc:  # the system under test is down: every test fails with the reason
        answers = [RagAnswer(question=q, error=f"{type(exc).__name__}: {exc}") for q in questions]
    if len(answers) != len(questions):
        raise ValueError(f"answer_fn returned {len(answers)} answers for {len(questions)} questions; "
                         "it must return one RagAnswer per question, in order")
    by_question = dict(zip(questions, answers, strict=True))

    results: list[E2ETestResult] = []
    for name, i, case in cases:
        ans = by_question[case.question]
        case_id = case.id or f"{name}/{i}"
        if ans.error is not None:
            results.append(E2ETestResult(table=name, case_id=case_id, question=case.question, answer="",
                                         passed=False, error=f"the system under test failed: {ans.error}"))
            continue
        failing = check_answer(name, getattr(tables, name), case, ans.answer)
        results.append(E2ETestResult(table=name, case_id=case_id, question=case.question, answer=ans.answer,
                                     passed=not failing, failing_keywords=failing))

    metrics = {f"{METRIC_PREFIX}/{name}": _failure_rate(f"{METRIC_PREFIX}/{name}",
                                                        [r for r in results if r.table == name])
               for name in TABLES if any(r.table == name for r in results)}
    metrics[METRIC_PREFIX] = _failure_rate(METRIC_PREFIX, results)
    return E2EReport(results=results, metrics=metrics)


def _failure_rate(name: str, results: list[E2ETestResult]) -> MetricResult:
    items = [
        ItemScore(item_id=r.case_id, error=r.error, passed=False, details={"question": r.question})
        if r.error is not None
        else ItemScore(
            item_id=r.case_id,
            score=0.0 if r.passed else 1.0,  # 1 = failed, so the mean is the failure rate
            passed=r.passed,
            details={"table": r.table, "question": r.question, "answer": r.answer,
                     "failing_keywords": r.failing_keywords},
        )
        for r in results
    ]
    errors = sum(r.error is not None for r in results)
    failures = sum(not r.passed and r.error is None for r in results)
    details = {"tests": len(results), "passed": sum(r.passed for r in results), "keyword_failures": failures,
               "errors": errors, "failure_rate_counting_errors": (failures + errors) / len(results)}
    return MetricResult.from_items(name, items, details=details, info=_FAILURE_RATE_INFO)


_FAILURE_RATE_INFO = MetricInfo(direction="lower", binary=True, family="e2e", measure="failure_rate",
                                description="share of keyword tests that failed (1 = failed)")
