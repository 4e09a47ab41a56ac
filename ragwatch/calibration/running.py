"""`python run.py calibrate`: settings, choosing the judge, and the whole run on a labelled file.

Example:
    >>> report = run_calibration(CalibrationSettings(limit=60))  # doctest: +SKIP
    >>> print(report.to_markdown())  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragwatch.calibration.loaders import CalibrationItem, load_calibration_set, stratified_sample
from ragwatch.calibration.report import CalibrationReport, calibrate
from ragwatch.judges.config import JudgesConfig, build_judges
from ragwatch.llm.types import LLMSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATASET = "data/sample/eval/halueval_general_sample.jsonl"


class CalibrationSettings(BaseModel):
    """What `python run.py calibrate` runs. Relative dataset paths resolve against the repo root."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    dataset: str = DEFAULT_DATASET
    """The labelled file to measure the judge on; relative paths resolve against the repository root."""
    format: Literal["auto", "jsonl", "halueval"] = "auto"
    """auto, jsonl (generic, ragas, LlamaIndex columns) or halueval."""
    limit: int | None = Field(default=60, ge=1)
    """Judge at most this many items."""
    seed: int = 0
    """Seed of the sample."""
    balanced: bool = False  # sample 50/50 instead of keeping the set's label proportions
    """Sample 50/50 by label instead of the set's proportions."""
    judge: Literal["auto", "support", "faithfulness"] = "auto"
    """Which judge path: support (claim vs context), faithfulness (answer statements), or auto."""
    threshold: float = Field(default=0.5, ge=0, le=1)
    """P(yes) cut-off of the weighted mode."""
    use_logprobs: bool = True
    """Read P(yes) from the judge's token logprobs."""
    # faithfulness: the labelled answer's sentences as statements, grouped into at most this many; 1 (the
    # default) judges it as one statement, the unit its label was given for (a RAG answer statement, a claim)
    max_statements: int = Field(default=1, ge=1, le=50)
    """faithfulness: statements per labelled answer (1: the unit its label was given for)."""
    max_context_tokens: int = Field(default=1500, ge=50)
    """Context tokens shown to the judge at most."""
    llm: LLMSettings = Field(default_factory=lambda: LLMSettings(max_tokens=96))  # the judge's, as `judges.llm`
    """The judge LLM (as `judges.llm`)."""
    resamples: int = Field(default=2000, ge=100)
    """Bootstrap resamples of each interval."""
    tune_threshold: bool = True  # choose the weighted-mode threshold on one half, report it on the other
    """Choose the weighted-mode cut-off on one half and report it on the other."""


def resolve_dataset(path: str) -> Path:
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return REPO_ROOT / p


def build_calibration_judge(settings: CalibrationSettings, items: Sequence[CalibrationItem], llm: Any) -> Any:
    """`auto`: faithfulness when every item has contexts, else the support judge, built by the judge
    registry as a pipeline builds it (`build_judges`, with `settings.llm` as the judge model).

    The support judge takes its greedy verdict (`verdict: greedy`, no P(yes) cut-off) so that its item
    score is the greedy token and `calibrate` compares it with P(yes) (the weighted mode).
    """
    kind = settings.judge
    if kind == "auto":
        kind = "faithfulness" if all(it.contexts for it in items) else "support"
    if kind == "faithfulness":
        if not all(it.contexts for it in items):
            raise ValueError("the faithfulness judge checks answers against contexts, and some items have "
                             "none; use judge: support for sets without context (e.g. HaluEval general)")
        options = {"statements": "sentences", "max_statements": settings.max_statements,
                   "max_context_tokens": settings.max_context_tokens}
    else:
        options = {"verdict": "greedy", "max_context_tokens": settings.max_context_tokens}
    config = JudgesConfig.model_validate({"llm": settings.llm, "enabled": [kind], "use_logprobs": settings.use_logprobs,
                                          kind: options})
    (judge,) = build_judges(config, llm)
    return judge


def run_calibration(config: CalibrationSettings, llm: Any = None) -> CalibrationReport:
    """Load, sample, judge and compare: the whole of `python run.py calibrate`."""
    path = resolve_dataset(config.dataset)
    items = stratified_sample(load_calibration_set(path, config.format), config.limit, seed=config.seed,
                              balanced=config.balanced)
    if llm is None:
        from ragwatch.llm.client import LLMClient

        llm = LLMClient(config.llm)
    judge = build_calibration_judge(config, items, llm)
    return calibrate(judge, items, threshold=config.threshold, dataset=str(config.dataset), seed=config.seed,
                     resamples=config.resamples, tune_threshold=config.tune_threshold)


def write_threshold(config_path: str | Path, report: CalibrationReport) -> str:
    """Write the tuned weighted-mode threshold into the calibration config (its `threshold:` line).

    Only on request (`python run.py calibrate --write-threshold`); returns what changed, for printing.
    """
    choice = report.threshold_choice
    if choice is None:
        raise ValueError("no tuned threshold to write: it needs probability-weighted scores (use_logprobs) and at "
                         "least 4 labelled items of each class")
    path = Path(config_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    new_line = f"threshold: {choice.threshold}  # tuned by calibrate on {choice.tuned_on} items; " \
               f"held-out balanced accuracy {choice.balanced_accuracy.value:.3f}"
    old = next((i for i, line in enumerate(lines) if line.startswith("threshold:")), None)
    previous = lines[old].split("#")[0].split(":", 1)[1].strip() if old is not None else "unset (0.5)"
    if old is None:
        lines.append(new_line)
    else:
        lines[old] = new_line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"wrote threshold {choice.threshold} (was {previous}) to {path}"
