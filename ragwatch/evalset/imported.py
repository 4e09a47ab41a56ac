"""Evaluation-set import: JSONL, CSV, LlamaIndex `rag_dataset.json`, Hugging Face
datasets on disk, the ZenML question set and the handwritten retrieval cases.

Relevance can be chunk ids, document ids/paths, URLs or reference texts (`RelevantItem.kind`).
Malformed rows are skipped and reported with their line number (JSONL/CSV) or 1-based row/example
number (JSON, Hugging Face); a file with no usable row raises `DatasetImportError` naming the
expected and the found columns.

Example:
    >>> report = import_dataset(ImportSettings(format="csv", path="qa.csv",
    ...                         columns=ColumnMap(question="q", relevant="url"), relevance_kind="url"))
    >>> report.samples[0].relevant, report.skipped   # [(line, reason), ...]

Writing a set back out is `ragwatch.evalset.export`.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragwatch.rows import read_rows
from ragwatch.types import EvalSample, RelevanceKind, RelevantItem

SAMPLE_EVAL_DIR = Path(__file__).resolve().parents[2] / "data" / "sample" / "eval"
ZENML_QA_PATH = SAMPLE_EVAL_DIR / "zenml_qa_test.jsonl"
HANDWRITTEN_CASES_PATH = SAMPLE_EVAL_DIR / "handwritten_eval_cases.json"

ImportFormat = Literal["jsonl", "csv", "llamaindex", "hf_disk", "zenml_qa", "handwritten"]
_RELEVANCE_KINDS = ("chunk_id", "document", "url", "text")


class DatasetImportError(ValueError):
    """A dataset file that yields no usable sample (or cannot be read at all)."""


class ColumnMap(BaseModel):
    """Which column (JSONL key / CSV header / dataset feature) holds each field. `None` = absent.

    The defaults match what `export_jsonl` writes, so an exported file imports back unchanged.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    question: str = "question"
    """Column of the question."""
    reference_answer: str | None = "reference_answer"
    """Column of the reference answer (null: none)."""
    relevant: str | None = "relevant"
    """Column of the relevant items (documents, URLs, chunk ids or passages)."""
    relevant_kind: str | None = None  # a column naming each row's relevance kind
    """Column naming each row's relevance kind (overrides `relevance_kind`)."""
    contexts: str | None = "reference_contexts"
    """Column of the reference passages."""
    id: str | None = "id"
    """Column of the question id."""
    kind: str | None = "kind"
    """Column of the question kind."""
    metadata: str | None = "metadata"
    """Column of a metadata mapping."""


class ImportSettings(BaseModel):
    """What to import and how to read it.

    `relevance_kind` applies to plain-string relevant values when no `relevant_kind` column says
    otherwise: `document` for file names/paths of the corpus (or document ids that are file names),
    `url` for web addresses of its pages, `chunk_id` for ids of indexed chunks, `text` for passages.
    A row without relevant values but with contexts gets its contexts as `text` relevance when
    `relevance_kind="text"`. CSV cells holding lists are JSON arrays or `list_separator`-joined.
    `limit` keeps the first n usable rows; `sample` then keeps a seeded random n (in file order).
    A relative `path` in a config file resolves against the config file's directory.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    format: ImportFormat
    """How the file is laid out."""
    path: str
    """The file or directory to import; relative to this config file."""
    columns: ColumnMap = Field(default_factory=ColumnMap)
    """Which column holds each field."""
    relevance_kind: RelevanceKind = "text"
    """What a plain relevant value names: a document, a URL, a chunk id or a passage (text)."""
    list_separator: str = "|"
    """Separator of list cells in CSV (JSON arrays also work)."""
    split: str | None = None  # for a Hugging Face DatasetDict on disk
    """Split of a Hugging Face DatasetDict on disk."""
    keep_extra_columns: bool = True  # unmapped columns go into sample metadata
    """Keep unmapped columns in each sample's metadata."""
    require_relevance: bool = False  # skip rows without a relevant value (retrieval sets)
    """Skip rows without a relevant value (sets made to measure retrieval)."""
    limit: int | None = Field(default=None, ge=1)
    """Keep the first n usable rows."""
    sample: int | None = Field(default=None, ge=1)
    """Then keep a seeded random n of them (in file order)."""
    seed: int = 0
    """Seed of `sample`."""


class ImportReport(BaseModel):
    """The samples read, and the rows skipped as (line or row number, reason)."""

    samples: list[EvalSample]
    skipped: list[tuple[int, str]] = Field(default_factory=list)
    source: str = ""
    format: str = ""
    usable: int | None = None  # usable rows before `limit`/`sample` (None: all were kept)
    unit: str = "line"  # what a skipped number counts: line (JSONL, CSV), example, row, pair

    def skipped_by_reason(self) -> dict[str, int]:
        """How many rows were skipped for each kind of reason, most frequent first."""
        counts = Counter(reason_kind(reason) for _, reason in self.skipped)
        return dict(counts.most_common())

    @property
    def without_reference(self) -> int:
        """Samples kept without a reference answer: retrieval is measured for them, answers are not judged."""
        return sum(1 for s in self.samples if not s.reference_answer)


def reason_kind(reason: str) -> str:
    """A skip reason without what is particular to its row, so that reasons can be counted: a duplicate
    id's value and line, a JSON error's position."""
    if reason.startswith("duplicate id"):
        return "duplicate id"
    return re.sub(r"\b(line|column|char) \d+", r"\1 N", reason)


# ------------------------------------------------------------------------------------ row parsing
class _RowError(ValueError):
    pass


def _as_list(value: Any, separator: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _RowError(f"cell looks like a JSON list but does not parse: {exc.msg}") from exc
            if not isinstance(parsed, list):
                raise _RowError("cell is JSON but not a list")
            return parsed
        return [part.strip() for part in text.split(separator) if part.strip()] if separator else [text]
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def _relevant_items(value: Any, kind: str, separator: str) -> list[RelevantItem]:
    items = []
    for entry in _as_list(value, separator):
        if isinstance(entry, dict):
            try:
                items.append(RelevantItem.model_validate(entry))
            except ValidationError as exc:
                raise _RowError(f"bad relevant item {entry!r}: {exc.errors()[0]['msg']}") from exc
        elif isinstance(entry, str | int | float) and str(entry).strip():
            items.append(RelevantItem(kind=kind, value=str(entry).strip()))  # type: ignore[arg-type]
        else:
            raise _RowError(f"bad relevant value {entry!r}: expected a string or {{kind, value, grade}}")
    return items


def _str_or_none(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):  # NaN from pandas-written CSVs
        return None
    text = str(value).strip()
    return text or None


def auto_id(question: str, relevant: Sequence[RelevantItem]) -> str:
    """A stable id for rows that bring none: a hash of the question and its relevance."""
    key = question + "\n" + "\n".join(f"{r.kind}:{r.value}" for r in relevant)
    return "imp-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def row_to_sample(row: dict[str, Any], settings: ImportSettings) -> EvalSample:
    """One mapped row -> `EvalSample`; raises `_RowError` with the reason when the row is unusable."""
    cols = settings.columns
    question = _str_or_none(row.get(cols.question))
    if question is None:
        raise _RowError(f"no question (column {cols.question!r} missing or empty)")
    kind = settings.relevance_kind
    if cols.relevant_kind and _str_or_none(row.get(cols.relevant_kind)):
        kind = str(row[cols.relevant_kind]).strip()
        if kind not in _RELEVANCE_KINDS:
            raise _RowError(f"relevance kind {kind!r} in column {cols.relevant_kind!r} "
                            f"is not one of {_RELEVANCE_KINDS}")
    raw_relevant = row.get(cols.relevant) if cols.relevant else None
    relevant = _relevant_items(raw_relevant, kind, settings.list_separator)
    raw_contexts = row.get(cols.contexts) if cols.contexts else None
    contexts = [str(c) for c in _as_list(raw_contexts, "") if str(c).strip()]
    if not relevant and kind == "text" and contexts:
        relevant = [RelevantItem(kind="text", value=c) for c in contexts]
    if settings.require_relevance and not relevant:
        raise _RowError(f"no relevant value (column {cols.relevant!r} missing or empty)")
    metadata: dict[str, Any] = {}
    raw_meta = row.get(cols.metadata) if cols.metadata else None
    if isinstance(raw_meta, str) and raw_meta.strip():
        try:
            raw_meta = json.loads(raw_meta)
        except json.JSONDecodeError as exc:
            raise _RowError(f"metadata column {cols.metadata!r} is not JSON: {exc.msg}") from exc
    if isinstance(raw_meta, dict):
        metadata.update(raw_meta)
    if settings.keep_extra_columns:
        mapped = {v for v in cols.model_dump().values() if v}
        metadata.update({k: v for k, v in row.items() if k not in mapped and v not in (None, "")})
    sample_id = _str_or_none(row.get(cols.id)) if cols.id else None
    fields: dict[str, Any] = {
        "id": sample_id or auto_id(question, relevant),
        "question": question,
        "reference_answer": _str_or_none(row.get(cols.reference_answer)) if cols.reference_answer else None,
        "reference_contexts": contexts,
        "relevant": relevant,
        "metadata": metadata,
    }
    if cols.kind and _str_or_none(row.get(cols.kind)):
        fields["kind"] = str(row[cols.kind]).strip()
    return EvalSample(**fields)


def _collect(rows: Iterable[tuple[int, dict[str, Any] | str]], settings: ImportSettings,
             unit: str = "line") -> ImportReport:
    """Parse numbered rows (a str row is a reading error), skipping and reporting bad ones."""
    samples: list[EvalSample] = []
    skipped: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    found: set[str] = set()
    for number, row in rows:
        if isinstance(row, str):
            skipped.append((number, row))
            continue
        found.update(row)
        try:
            sample = row_to_sample(row, settings)
        except (_RowError, ValidationError) as exc:
            skipped.append((number, str(exc).splitlines()[0]))
            continue
        if sample.id in seen:
            skipped.append((number, f"duplicate id {sample.id!r} (first at {unit} {seen[sample.id]})"))
            continue
        seen[sample.id] = number
        samples.append(sample)
    if not samples:
        expected = {k: v for k, v in settings.columns.model_dump().items() if v}
        problems = "; ".join(f"{unit} {n}: {r}" for n, r in skipped[:3]) or "the file has no rows"
        raise DatasetImportError(
            f"no usable row in {settings.path} ({settings.format}). Expected columns (field: column) "
            f"{expected}; found columns {sorted(found)}. First problems: {problems}. "
            "Map your column names with `columns:` in the import config."
        )
    return ImportReport(samples=samples, skipped=skipped, source=str(settings.path), format=settings.format,
                        unit=unit)


# ------------------------------------------------------------------------------------- readers
def _existing(path: str | Path) -> Path:
    p = Path(path).expanduser().absolute()
    if not p.exists():
        raise DatasetImportError(f"dataset file not found: {p}; check `path` in the import config "
                                 "(relative paths resolve against the config file's directory)")
    return p


def import_dataset(settings: ImportSettings) -> ImportReport:
    """Read an evaluation set in any supported format, then apply `limit` and `sample`."""
    return subset(_read_dataset(settings), settings.limit, settings.sample, settings.seed)


def _read_dataset(settings: ImportSettings) -> ImportReport:
    path = _existing(settings.path)
    if settings.format == "jsonl":
        return _collect(read_rows(path, csv_format=False), settings)
    if settings.format == "csv":
        return _collect(read_rows(path, csv_format=True), settings)
    if settings.format == "llamaindex":
        return _import_llamaindex(path, settings)
    if settings.format == "hf_disk":
        return _import_hf_disk(path, settings)
    if settings.format == "zenml_qa":
        return import_zenml_qa(path)
    if settings.format == "handwritten":
        return import_handwritten_retrieval_cases(path)
    raise AssertionError(f"unhandled format {settings.format}")  # Literal keeps this unreachable


def subset(report: ImportReport, limit: int | None = None, sample: int | None = None, seed: int = 0) -> ImportReport:
    """The first `limit` samples, then a seeded random `sample` of them kept in file order.

    >>> subset(report, sample=50, seed=1).samples  # the same 50 on every run  # doctest: +SKIP
    """
    samples = report.samples[:limit] if limit else report.samples
    if sample and sample < len(samples):
        keep = sorted(random.Random(seed).sample(range(len(samples)), sample))
        samples = [samples[i] for i in keep]
    if len(samples) == len(report.samples):
        return report
    return report.model_copy(update={"samples": samples, "usable": len(report.samples)})


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetImportError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})") from exc


def _import_llamaindex(path: Path, settings: ImportSettings) -> ImportReport:
    """LlamaIndex `LabelledRagDataset` JSON: `{"examples": [{"query", "reference_contexts",
    "reference_answer", "query_by", "reference_answer_by"}]}`; contexts become `text` relevance."""
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("examples"), list):
        raise DatasetImportError(
            f"{path} is not a LlamaIndex rag_dataset.json: expected an object with an 'examples' list, "
            f"found {sorted(data) if isinstance(data, dict) else type(data).__name__}"
        )
    li = settings.model_copy(update={
        "columns": ColumnMap(question="query", reference_answer="reference_answer", relevant=None,
                             contexts="reference_contexts", id=None, kind=None, metadata=None),
        "relevance_kind": "text",
    })

    def rows() -> Iterator[tuple[int, dict[str, Any] | str]]:
        for number, ex in enumerate(data["examples"], start=1):
            if not isinstance(ex, dict):
                yield number, f"example is a {type(ex).__name__}, not an object"
                continue
            by = ex.get("query_by") or {}
            row = {k: v for k, v in ex.items() if k not in ("query_by", "reference_answer_by")}
            if isinstance(by, dict) and by:
                row["query_by"] = f"{by.get('type') or ''}:{by.get('model_name') or ''}".strip(":")
            yield number, row

    return _collect(rows(), li, unit="example")


def _import_hf_disk(path: Path, settings: ImportSettings) -> ImportReport:
    import datasets

    loaded = datasets.load_from_disk(str(path))
    if isinstance(loaded, datasets.DatasetDict):
        if settings.split is None or settings.split not in loaded:
            raise DatasetImportError(
                f"{path} holds several splits {sorted(loaded)}; "
                "set `split:` in the import config to one of them"
            )
        loaded = loaded[settings.split]
    return _collect(((i, dict(row)) for i, row in enumerate(loaded, start=1)), settings, unit="row")


def import_zenml_qa(path: str | Path = ZENML_QA_PATH) -> ImportReport:
    """The ZenML documentation question set (zenml-io/zenml-projects llm-complete-guide test split).

    `positive` is the question, `url` its documentation page (kept raw: mapping URLs to corpus pages
    is the retrieval matcher's job), `anchor` the chunk it was written from.
    """
    settings = ImportSettings(
        format="zenml_qa", path=str(path), relevance_kind="url", keep_extra_columns=False,
        require_relevance=True,
        columns=ColumnMap(question="positive", reference_answer=None, relevant="url",
                          contexts="reference_contexts", id="id", kind=None, metadata="metadata"),
    )

    def rows() -> Iterator[tuple[int, dict[str, Any] | str]]:
        for number, row in read_rows(_existing(path), csv_format=False):
            if isinstance(row, dict):
                anchor = row.get("anchor")
                row = {
                    "positive": row.get("positive"), "url": row.get("url"),
                    "id": f"zenml-qa-{row['id']}" if row.get("id") is not None else None,
                    "reference_contexts": [anchor] if isinstance(anchor, str) and anchor.strip() else [],
                    "metadata": {k: row[k] for k in ("parent_section", "model_name", "negative") if k in row},
                }
            yield number, row

    report = _collect(rows(), settings)
    for sample in report.samples:
        sample.metadata.setdefault("query_by", "ai:" + str(sample.metadata.get("model_name", "")))
    return report


def load_zenml_qa(path: str | Path = ZENML_QA_PATH) -> list[EvalSample]:
    """`import_zenml_qa(path).samples`."""
    return import_zenml_qa(path).samples


def import_handwritten_retrieval_cases(path: str | Path = HANDWRITTEN_CASES_PATH) -> ImportReport:
    """The `question_doc_pairs` of handwritten_eval_cases.json: question -> `url` relevance (url_ending)."""
    p = _existing(path)
    data = _read_json(p)
    pairs = data.get("question_doc_pairs") if isinstance(data, dict) else None
    if not isinstance(pairs, list):
        raise DatasetImportError(f"{p} has no 'question_doc_pairs' list; found keys "
                                 f"{sorted(data) if isinstance(data, dict) else type(data).__name__}")
    settings = ImportSettings(
        format="handwritten", path=str(p), relevance_kind="url", require_relevance=True,
        columns=ColumnMap(question="question", relevant="url_ending", reference_answer=None, contexts=None,
                          kind=None, metadata=None, id=None),
    )
    rows = ((i, r if isinstance(r, dict) else f"pair is a {type(r).__name__}, not an object")
            for i, r in enumerate(pairs, start=1))
    report = _collect(rows, settings, unit="pair")
    for i, sample in enumerate(report.samples, start=1):
        sample.id = f"handwritten-{i:03d}-{sample.id.removeprefix('imp-')[:8]}"
    return report


def load_handwritten_retrieval_cases(path: str | Path = HANDWRITTEN_CASES_PATH) -> list[EvalSample]:
    """`import_handwritten_retrieval_cases(path).samples`."""
    return import_handwritten_retrieval_cases(path).samples
