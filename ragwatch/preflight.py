"""Check a whole configuration and every input path before any pipeline starts.

`run.py` calls this before it imports ZenML, so a typo or a missing file is answered in about a
second instead of after a minute of pipeline start-up, and every problem is listed at once, each
naming the resolved path.

Example:
    >>> config = preflight("ingest", "my_project/ragwatch.yaml")  # doctest: +SKIP
"""

from __future__ import annotations

import glob
from pathlib import Path

from ragwatch.config import FullConfig
from ragwatch.config_loader import ConfigError, read_yaml, validate_config
from ragwatch.evalset.imported import DatasetImportError, ImportSettings, import_dataset

PIPELINE_STAGES = {
    "ingest": ("ingest",),
    "testset": ("testset",),
    "evaluate": ("evaluate",),
    "full": ("ingest", "testset", "evaluate"),
}
PATH_RULE = "relative paths resolve against the config file's directory"


def preflight(pipeline: str, config_path: str | Path) -> FullConfig:
    """Load and validate `config_path`, then check the inputs `pipeline` reads and the metrics its own
    file gates; raise `ConfigError` listing every problem."""
    if pipeline not in PIPELINE_STAGES:
        raise ConfigError(f"unknown pipeline {pipeline!r}; choose one of {', '.join(PIPELINE_STAGES)}")
    sources: dict[str, str] = {}  # dotted key -> the file that set it (an included file, or this one)
    path = Path(config_path).expanduser().resolve()
    config = validate_config(read_yaml(path, path_keys=FullConfig.PATH_KEYS, sources=sources), FullConfig,
                             source=str(config_path))
    problems = check_inputs(config, pipeline)
    if "evaluate" in PIPELINE_STAGES[pipeline]:
        problems += gate_problems(config, own=sources.get(GATED_KEY) == str(path))
    if problems:
        raise ConfigError(f"{Path(config_path).resolve()}: cannot run {pipeline} ({PATH_RULE})\n  "
                          + "\n  ".join(problems))
    return config


def check_inputs(config: FullConfig, pipeline: str) -> list[str]:
    """Every problem with the files `pipeline` would read, one line each."""
    stages = PIPELINE_STAGES[pipeline]
    problems: list[str] = []
    if "ingest" in stages:
        problems += _corpus_problems(config.ingest.corpus.paths)
    if "testset" in stages and config.logs is not None:
        problems += _log_problems(config)
    elif "testset" in stages:
        problems += _evalset_problems(config)
    if "evaluate" in stages and config.evaluate.e2e.enabled and config.evaluate.e2e.tables:
        problems += _tables_problems(config.evaluate.e2e.tables)
    if config.reports_dir and Path(config.reports_dir).exists() and not Path(config.reports_dir).is_dir():
        problems.append(f"reports_dir: {config.reports_dir} exists and is not a directory")
    return problems


GATED_KEY = "evaluate.gate.gated_metrics"


def gate_problems(config: FullConfig, *, own: bool) -> list[str]:
    """A metric the config file's own `evaluate.gate.gated_metrics` lists (`own`: not inherited from an
    included file or the defaults) that this config never measures, or that no metric has (a typo): the
    gate could never check it. Inherited names are the gate's warning at run time, not an error here
    (`ragwatch.measured`)."""
    from ragwatch.measured import not_measured, unknown

    if not own:
        return []
    problems = []
    for pattern in config.evaluate.gate.gated_metrics or []:
        if (why := not_measured(pattern, config.evaluate, retrieval_only=config.retrieval_only)) is not None:
            problems.append(f"{GATED_KEY}: {pattern!r} is never measured by this config: {why}; or remove "
                            f"{pattern!r} from {GATED_KEY}")
        elif (hint := unknown(pattern, config.evaluate)) is not None:
            problems.append(f"{GATED_KEY}: {pattern!r} names no metric ragwatch makes ({hint})")
    return problems


def _corpus_problems(paths: list[str]) -> list[str]:
    if not paths:
        return ["ingest.corpus.paths is empty: list your documents (files, folders or globs)"]
    problems = []
    for raw in paths:
        path = Path(raw)
        if path.exists():
            continue
        if any(ch in raw for ch in "*?["):
            if not any(Path(m).is_file() for m in glob.glob(raw, recursive=True)):
                problems.append(f"ingest.corpus.paths: the glob {raw} matches no file")
        else:
            problems.append(f"ingest.corpus.paths: {raw} does not exist")
    return problems


def _evalset_problems(config: FullConfig) -> list[str]:
    testset = config.testset
    problems = []
    for key in ("handwritten_retrieval_cases", "zenml_qa"):
        value = getattr(testset, key)
        if value and not Path(value).is_file():
            problems.append(f"testset.{key}: {value} is not a file")
    for i, settings in enumerate(testset.imports):
        problems += _import_problems(i, settings)
    if not (testset.synthetic or testset.imports or testset.handwritten_retrieval_cases or testset.zenml_qa):
        reason = " (retrieval_only turns synthetic pairs off)" if config.retrieval_only else ""
        problems.append("the evaluation set would be empty: list a labelled set under `testset.imports` "
                        f"or set `testset.synthetic: true`{reason}")
    return problems


def _log_problems(config: FullConfig) -> list[str]:
    """A log as the evaluation set: the file is there and holds at least one answer."""
    from ragwatch.logsources.read import read_log

    assert config.logs is not None
    try:
        log = read_log(config.logs)
    except (FileNotFoundError, ValueError, UnicodeDecodeError) as exc:
        return [f"logs: {exc}"]
    return [] if log.records else [f"logs: no answer to evaluate in {log.describe()}"]


def _import_problems(i: int, settings: ImportSettings) -> list[str]:
    where = f"testset.imports[{i}] ({settings.format})"
    path = Path(settings.path)
    if settings.format == "hf_disk":
        if not path.is_dir():
            return [f"{where}: {path} is not a directory (a Hugging Face dataset saved with save_to_disk)"]
        return []
    if not path.is_file():
        return [f"{where}: {path} is not a file"]
    if settings.format in ("jsonl", "csv", "llamaindex"):
        try:  # reading the rows is cheap next to a pipeline start, and names the bad column at once
            import_dataset(settings)
        except (DatasetImportError, UnicodeDecodeError) as exc:
            return [f"{where}: {exc}"]
    return []


def _tables_problems(tables: str) -> list[str]:
    from ragwatch.checks.e2e import load_e2e_tables

    try:
        load_e2e_tables(tables)
    except (FileNotFoundError, ValueError) as exc:
        return [f"evaluate.e2e.tables: {exc}"]
    return []
