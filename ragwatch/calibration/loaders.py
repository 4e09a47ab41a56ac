"""Human-labelled calibration sets: one `CalibrationItem` per labelled answer, from any common format.

Formats (JSONL, or CSV with the same column names), recognised by their columns:
- generic: `context` (str, list or null) + `claim`, or `question` + `answer`, and `label`;
- ragas: `user_input`, `response`, `retrieved_contexts`, `reference` (and the older `question`,
  `answer`, `contexts`, `ground_truth`);
- LlamaIndex: `query`, `response`, `contexts`, `reference_answer`, with `passing` as the label;
- HaluEval general: `ID`, `user_query`, `chatgpt_response`, `hallucination` (yes = hallucinated).
A label answers "is the answer faithful/correct?": faithful, supported, correct, true, yes, pass, 1
mean yes; hallucinated, unsupported, incorrect, false, no, fail, 0 mean no. Label columns tried in
order: `label`, `human_label`, `passing`, `is_faithful`, `faithful`, `supported`.

Example:
    >>> items = load_calibration_set("../shared/data/judge_dev/qags_xsum.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragwatch.rows import read_rows
from ragwatch.types import EvalSample, RagAnswer, RetrievedContext

FAITHFUL, HALLUCINATED = "faithful", "hallucinated"
_TRUE = {"faithful", "supported", "correct", "true", "yes", "1", "pass"}
_FALSE = {"hallucinated", "unsupported", "incorrect", "false", "no", "0", "fail"}


class CalibrationItem(BaseModel):
    """One human-labelled item: `faithful` is the human verdict."""

    id: str
    question: str = ""
    answer: str
    contexts: list[str] = Field(default_factory=list)
    reference_answer: str | None = None  # for judges that grade against a reference (correctness)
    faithful: bool
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        return FAITHFUL if self.faithful else HALLUCINATED


def parse_label(value: Any) -> bool:
    """True for a faithful label, False for a hallucinated one (see the module doc for the words)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"unknown label {value!r}: use faithful/hallucinated (or true/false, 1/0, yes/no "
                     "meaning 'the answer is faithful')")


ANSWER_KEYS = ("answer", "claim", "response", "summary")
QUESTION_KEYS = ("question", "user_input", "query")
CONTEXT_KEYS = ("context", "contexts", "retrieved_contexts", "reference_contexts", "article", "document")
REFERENCE_KEYS = ("reference_answer", "reference", "ground_truth")
LABEL_KEYS = ("label", "human_label", "passing", "is_faithful", "faithful", "supported")
ID_KEYS = ("id", "item_id", "ID")


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every row of a JSONL or CSV calibration set; a bad line refuses the file, naming the line
    (a calibration set with a hole would measure the judge on other items than labelled)."""
    if not path.is_file():
        raise FileNotFoundError(f"calibration set not found at {path}; pass the path of a JSONL or CSV file")
    rows = []
    for n, row in read_rows(path, csv_format=path.suffix.lower() == ".csv"):
        if isinstance(row, str):
            raise ValueError(f"{path}:{n}: {row}; one JSON object per line (or one CSV row per item)")
        rows.append((n, row))
    if not rows:
        raise ValueError(f"{path} holds no items")
    return rows


def _first(row: dict[str, Any], keys: Sequence[str]) -> tuple[str | None, Any]:
    for key in keys:
        if key in row and row[key] not in (None, ""):
            return key, row[key]
    return None, None


def _contexts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):  # a list written into a CSV cell as JSON (ragas exports do this)
            try:
                parsed = json.loads(text)
                if isinstance(parsed, list):
                    return [str(c) for c in parsed]
            except json.JSONDecodeError:
                pass
        return [value]
    return [str(c) for c in value]


def load_jsonl(path: str | Path) -> list[CalibrationItem]:
    """The generic, ragas and LlamaIndex column names (see the module doc), JSONL or CSV.

    An optional reference answer serves judges that grade against one; other keys go to `metadata`.
    """
    path = Path(path)
    items = []
    for n, row in _read_jsonl(path):
        where = f"{path}:{n}"
        answer_key, answer = _first(row, ANSWER_KEYS)
        if answer_key is None:  # an empty answer is still an item (the judge fails it explicitly)
            answer_key = next((k for k in ANSWER_KEYS if row.get(k) == ""), None)
            answer = "" if answer_key else None
        if not isinstance(answer, str):
            raise ValueError(f"{where}: an item needs a string answer: one of the columns {', '.join(ANSWER_KEYS)}")
        label_key, label = _first(row, LABEL_KEYS)
        if label_key is None:
            raise ValueError(f"{where}: an item needs a label (faithful or hallucinated) in one of the columns "
                             + ", ".join(LABEL_KEYS))
        try:
            faithful = parse_label(label)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        question_key, question = _first(row, QUESTION_KEYS)
        context_key, context = _first(row, CONTEXT_KEYS)
        reference_key, reference = _first(row, REFERENCE_KEYS)
        id_key, item_id = _first(row, ID_KEYS)
        used = {answer_key, label_key, question_key, context_key, reference_key, id_key}
        items.append(CalibrationItem(
            id=str(item_id if item_id is not None else n), question=str(question or ""), answer=answer,
            contexts=_contexts(context), faithful=faithful,
            reference_answer=None if reference is None else str(reference),
            metadata={k: v for k, v in row.items() if k not in used},
        ))
    return items


def load_halueval_general(path: str | Path) -> list[CalibrationItem]:
    """HaluEval's general set: ChatGPT responses to Alpaca queries, human-labelled (no context)."""
    path = Path(path)
    items = []
    for n, row in _read_jsonl(path):
        try:
            flag = str(row["hallucination"]).strip().lower()
            if flag not in ("yes", "no"):
                raise ValueError(f"hallucination must be yes or no, got {row['hallucination']!r}")
            items.append(CalibrationItem(
                id=str(row.get("ID", n)), question=row["user_query"], answer=row["chatgpt_response"],
                faithful=flag == "no", metadata={"hallucination_spans": row.get("hallucination_spans", [])},
            ))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{path}:{n}: not a HaluEval general item ({exc}); expected fields ID, "
                             "user_query, chatgpt_response, hallucination") from exc
    return items


def load_calibration_set(path: str | Path, format: Literal["auto", "jsonl", "halueval"] = "auto"
                         ) -> list[CalibrationItem]:
    """Load any of the formats; `auto` recognises HaluEval by its `user_query` + `hallucination` fields."""
    path = Path(path)
    if format == "auto":
        _, first = _read_jsonl(path)[0]
        format = "halueval" if "user_query" in first and "hallucination" in first else "jsonl"
    return load_halueval_general(path) if format == "halueval" else load_jsonl(path)


def stratified_sample(items: Sequence[CalibrationItem], n: int | None, *, seed: int = 0,
                      balanced: bool = False) -> list[CalibrationItem]:
    """A seeded sample of `n` items keeping the label proportions (or 50/50 with `balanced`)."""
    if n is None or n >= len(items):
        return list(items)
    rng = random.Random(seed)
    n_hallucinated = sum(not it.faithful for it in items)
    n_false = n // 2 if balanced else round(n * n_hallucinated / len(items))
    n_false = min(n_false, n_hallucinated)
    n_true = min(n - n_false, len(items) - n_hallucinated)
    positions: dict[bool, list[int]] = {True: [], False: []}
    for i, it in enumerate(items):
        positions[it.faithful].append(i)
    chosen = rng.sample(positions[False], n_false) + rng.sample(positions[True], n_true)
    return [items[i] for i in sorted(chosen)]  # file order, so a slice reads like its source


def to_eval_pairs(items: Sequence[CalibrationItem]) -> tuple[list[EvalSample], list[RagAnswer]]:
    """Items as the (sample, answer) pairs every judge takes."""
    samples = [EvalSample(id=it.id, question=it.question, reference_answer=it.reference_answer)
               for it in items]
    answers = [RagAnswer(question=it.question, answer=it.answer,
                         contexts=[RetrievedContext(text=c) for c in it.contexts]) for it in items]
    return samples, answers

