"""`run.py init`: a config for your documents, your labelled questions and your system, that runs as written.

It asks (or takes `--docs`, `--labels`, `--system`, `--out`; it never asks when a flag is given or
stdin is not a terminal), writes a commented YAML file whose paths are relative to it, checks it with
`ragwatch.preflight` before it is written (a path that does not exist or a labelled set that cannot
be read is answered at once, and nothing is written), and prints the commands to estimate and run it.
It also writes what the docs say a user must set: the labelled set's `relevance_kind`, read off the
values its `relevant` column holds (file names of the documents, URLs, chunk ids or passages), and a
`model_name` of the project's own (the config's directory, slugified), so that two projects on one
ZenML store never share a history. Everything it leaves out is the shipped default
(docs/reference/config.md).

Example:
    >>> answers = InitAnswers(docs=["docs/"], system="http:http://127.0.0.1:8000/rag")
    >>> write_config(answers, Path("ragwatch.yaml"))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragwatch.config_loader import ConfigError
from ragwatch.preflight import preflight
from ragwatch.retrieval.matching import DOCUMENT_EXTENSIONS, CorpusLabels, MatchSettings

# the column names labelled sets commonly use, per field this project reads (ragas, LlamaIndex, HF sets)
COLUMN_ALIASES = {
    "question": ("question", "query", "user_input", "query_str", "prompt", "input"),
    "reference_answer": ("reference_answer", "answer", "ground_truth", "reference", "expected_answer",
                         "response", "output"),
    "contexts": ("reference_contexts", "contexts", "context", "retrieved_contexts", "passages", "reference_context"),
    "relevant": ("relevant", "relevant_docs", "source", "source_document", "document", "url"),
}
# a config kept in a folder of configs belongs to the folder above it
GENERIC_DIRS = {"config", "configs", "conf", ".ragwatch"}
# ids of chunks: ragwatch's (sha256 prefixes), UUIDs (LlamaIndex node ids) and other long hex digests
CHUNK_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,64}", re.I)
KIND_WORDS = {"document": "files of your documents", "url": "web addresses", "chunk_id": "chunk ids",
              "text": "passages of text"}


@dataclass
class InitAnswers:
    """What `init` needs: documents, an optional labelled set, the system (builtin, callable:..., http:...)."""

    docs: list[str] = field(default_factory=list)
    labels: str | None = None
    system: str = "builtin"
    model_name: str | None = None  # None: the project's, from the config's directory (`project_model_name`)


def parse_system(system: str) -> dict[str, object]:
    """`builtin`, `callable:module:function` or `http:URL` as the config's `rag:` block."""
    if system == "builtin":
        return {"kind": "builtin"}
    kind, _, target = system.partition(":")
    if kind == "callable" and target.count(":") == 1 and all(target.split(":")):
        return {"kind": "callable", "callable": target}
    if kind == "http" and target.startswith(("http://", "https://")):
        return {"kind": "http", "http": {"url": target}}
    raise ConfigError(f"--system {system!r}: use builtin, callable:package.module:function or http:http://host/path")


def labels_import(path: Path) -> dict[str, object]:
    """The `testset.imports` entry for a labelled set: its format from the file, its columns from its first row."""
    if path.is_dir():
        return {"format": "hf_disk"}
    suffix = path.suffix.lower()
    if suffix == ".json":
        return {"format": "llamaindex"}  # LlamaIndex rag_dataset.json (examples: query, reference_answer, ...)
    if suffix not in (".jsonl", ".csv"):
        raise ConfigError(f"--labels {path}: a .jsonl, .csv, LlamaIndex rag_dataset.json or a Hugging Face "
                          "dataset directory (save_to_disk)")
    from ragwatch.rows import read_rows

    first = next((row for _, row in read_rows(path) if isinstance(row, dict)), None)
    if first is None:
        raise ConfigError(f"--labels {path}: no readable row")
    columns: dict[str, str | None] = {}
    for name, aliases in COLUMN_ALIASES.items():
        found = next((key for alias in aliases for key in first if key.lower() == alias), None)
        if name == "question" and found is None:
            raise ConfigError(f"--labels {path}: no question column among {sorted(first)}; name it one of "
                              f"{list(aliases)}")
        columns[name] = found
    return {"format": suffix[1:], "columns": columns}


def project_model_name(out: Path) -> str:
    """The ZenML model of a project's system: the name of the directory the config is written to (the one
    above it when that is a folder of configs), slugified: `~/acme support/ragwatch.yaml` -> `acme-support`."""
    folder = out.expanduser().resolve().parent
    if folder.name.lower() in GENERIC_DIRS and folder.parent != folder:
        folder = folder.parent
    return re.sub(r"[^a-z0-9]+", "-", folder.name.lower()).strip("-") or "my-rag"


def value_kind(value: str, corpus: CorpusLabels) -> str | None:
    """The relevance kind one `relevant` value looks like: a URL, a file of the corpus (`corpus`, the
    labels its files match), a chunk id, a passage, a file name of no corpus file; None: none of them."""
    text = value.strip()
    if "://" in text:
        return "url"
    if corpus.looks_like(text) == "document":
        return "document"
    if CHUNK_ID.fullmatch(text):
        return "chunk_id"
    if len(text.split()) >= 5:
        return "text"
    if " " not in text and ("/" in text or text.lower().endswith(DOCUMENT_EXTENSIONS)):
        return "document"  # a file name, of no file given: the import's check names it
    return None


def infer_relevance_kind(entry: dict[str, object], docs: Sequence[str]) -> tuple[str, str] | None:
    """`(relevance_kind, why)` for a labelled set (a `testset.imports` entry, its path absolute) from the
    values of its `relevant` column, each read as `value_kind` against the files of `docs`; the kind most
    values have wins. None when the set has no such column (or no value in it)."""
    from ragwatch.corpus.files import expand_paths
    from ragwatch.evalset.imported import ColumnMap, DatasetImportError, ImportSettings, import_dataset

    columns = entry.get("columns")
    if entry.get("format") not in ("jsonl", "csv") or not isinstance(columns, dict) or not columns.get("relevant"):
        return None
    # the reference passages are not read: they would count as `text` values of rows that name none
    settings = ImportSettings(format=entry["format"], path=str(entry["path"]), relevance_kind="text",
                              columns=ColumnMap(**{**columns, "contexts": None}))
    try:
        samples = import_dataset(settings).samples
    except (DatasetImportError, ValueError):
        return None  # preflight reads the set again and says what is wrong with it
    values = [item.value for sample in samples for item in sample.relevant]
    if not values:
        return None
    corpus = CorpusLabels(MatchSettings(), [source for _, source in expand_paths(docs, None, [])])
    kinds = Counter(value_kind(v, corpus) for v in values)
    known = Counter({k: n for k, n in kinds.items() if k is not None})
    if not known:
        return None
    kind, n = known.most_common(1)[0]
    column = columns["relevant"]
    why = f"of the {len(values)} value(s) in column {column!r}, {n} read as {KIND_WORDS[kind]}"
    if len(known) > 1:
        others = ", ".join(f"{m} {k}" for k, m in known.most_common()[1:])
        why += f" ({others}: name those rows' kind in a `relevant_kind` column)"
    return kind, why


def _relative(path: str, base: Path) -> str:
    resolved = Path(path).expanduser().resolve()
    try:
        return os.path.relpath(resolved, base)
    except ValueError:  # another drive: keep it absolute
        return str(resolved)


def render(answers: InitAnswers, out: Path) -> str:
    """The commented YAML for `answers`, paths relative to `out`'s directory."""
    import yaml

    base = out.parent.resolve()
    docs = [_relative(d, base) for d in answers.docs]
    rag = parse_system(answers.system)
    model_name = answers.model_name or project_model_name(out)
    name_text = model_name if re.fullmatch(r"[a-z0-9][a-z0-9_-]*", model_name) else json.dumps(model_name)

    def block(data: object) -> str:
        return yaml.safe_dump(data, default_flow_style=True, sort_keys=False, width=200).strip()

    lines = [
        "# ragwatch config written by `run.py init`. Every key left out is the shipped default",
        "# (every key: docs/reference/config.md): the local models, offline; the calibrated faithfulness judge.",
        "# Paths are relative to this file.",
        "ingest:",
        "  corpus:",
        f"    paths: {block(docs)}   # files, folders or globs (PDF, Markdown, text, HTML, DOCX)",
        "testset:",
    ]
    if answers.labels:
        labels = Path(answers.labels).expanduser()
        entry = labels_import(labels)
        inferred = infer_relevance_kind({**entry, "path": labels}, answers.docs)
        entry["path"] = _relative(answers.labels, base)
        lines += [
            "  # questions generated from your documents too: set true (one call per sampled chunk)",
            "  synthetic: false",
        ]
        if inferred is not None:
            entry["relevance_kind"] = inferred[0]
            lines.append(f"  # relevance_kind: {inferred[0]}: {inferred[1]} (the kinds: document, url, chunk_id, "
                         "text)")
        lines += [
            "  imports:",
            f"    - {block(entry)}",
            "  # rows with a source passage but no answer get a reference answer written from it",
        ]
    else:
        lines += [
            "  synthetic: true   # questions generated from 36 sampled chunks of your documents",
            "  # your labelled set, e.g.",
            "  #   - {format: jsonl, path: qa.jsonl, columns: {question: q, reference_answer: a}}",
            "  imports: []",
        ]
    lines += [
        "evaluate:",
        "  system:",
        f"    model_name: {name_text}   # the ZenML model that keeps this system's history (its baselines)",
        f"    rag: {block(rag)}",
    ]
    if rag["kind"] == "http":
        lines.append('    # the endpoint gets POST {"question": ...} and answers {"answer": ..., "contexts": [...]}')
    elif rag["kind"] == "callable":
        lines.append('    # the function takes the question and returns {"answer": ..., "contexts": [...]}')
    else:
        lines.append("    # the built-in system: hybrid retrieval over your documents, top 3, the local generator")
    lines += [
        "  # judges: {enabled: [faithfulness, similarity, perplexity, correctness]}   # opt in to more judges",
        "  # judges: {llm: {model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}}       # a hosted judge",
        "",
    ]
    return "\n".join(lines)


def write_config(answers: InitAnswers, out: Path, *, force: bool = False) -> Path:
    """Validate the rendered config with preflight (as `full` reads it), then write it to `out`."""
    if not answers.docs:
        raise ConfigError("no documents: give --docs PATH (a file, folder or glob; repeat for more)")
    out = out.expanduser().resolve()
    if out.exists() and not force:
        raise ConfigError(f"{out} exists: choose another --out, or --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    draft = out.with_name(f".{out.name}.init-draft")
    draft.write_text(render(answers, out), encoding="utf-8")
    try:
        preflight("full", draft)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(str(draft), str(out)) + "\nnothing written") from None
    finally:
        text = draft.read_text(encoding="utf-8")
        draft.unlink()
    out.write_text(text, encoding="utf-8")
    return out


def ask(prompt: Callable[[str], str] = input) -> InitAnswers:
    """The three questions, on a terminal."""
    print("ragwatch init: three questions (Enter keeps the default in brackets)")
    docs = ""
    while not docs.strip():
        docs = prompt("1. Your documents (files, folders or globs, separated by spaces): ")
    labels = prompt("2. A labelled question set, optional (.jsonl, .csv, rag_dataset.json, HF dataset dir) []: ")
    system = prompt("3. The system under test: builtin, callable:module:function or http:URL [builtin]: ")
    return InitAnswers(docs=docs.split(), labels=labels.strip() or None, system=system.strip() or "builtin")


def init_command(docs: list[str] | None, labels: str | None, system: str | None, out: str,
                 force: bool = False, prog: str = "python run.py") -> int:
    """`run.py init`: ask when nothing was given on a terminal, write the config, print the next commands."""
    interactive = not (docs or labels or system) and sys.stdin.isatty()
    answers = ask() if interactive else InitAnswers(docs=docs or [], labels=labels, system=system or "builtin")
    path = write_config(answers, Path(out), force=force)
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    print(f"wrote {shown} (checked: every path exists, the labelled set reads)\n"
          f"  what it will cost and how long:  {prog} full --estimate --config {shown}\n"
          f"  run it:                          {prog} full --config {shown}")
    return 0
