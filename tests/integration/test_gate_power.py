"""The gate against a real regression: cutting the system's context from 3 chunks to 1 is blocked,
and after a promotion `compare` compares with the production version it replaced, not with itself.

The corpus is built so that the cut matters: for half of the questions an FAQ page that repeats the
question (without its answer) ranks first and the answer page second. The generator is litellm's
`mock_response` (the point here is the gate, and retrieval is real); judges: embedding similarity.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from zenml.client import Client
from zenml.enums import ModelStages

from ragwatch_zenml import cli
from tests.integration.conftest import write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODEL = "ragwatch-topk-rag"
TOPICS = ["zorblax fruit", "quenmire engine", "plovex harbour", "trandle festival", "vexhorn glacier",
          "murdle bridge", "snorvik lantern", "gleebop railway", "frandor library", "kestrune mine",
          "ulvarik canal", "brozzle tower", "wimbrel forest", "caldrix market", "toltern observatory",
          "yarvel monastery", "drexil foundry", "pomfrey dam", "nistral opera", "halbrek lighthouse"]
COLOURS = ["purple", "amber", "teal", "crimson", "ivory", "ochre", "cobalt", "scarlet", "olive", "silver"]


def question(topic: str) -> str:
    return f"When was the {topic} first built and by whom?"


@pytest.fixture(scope="module")
def decoy_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("decoy_corpus")
    (corpus / "answers").mkdir()
    (corpus / "faq").mkdir()
    for i, topic in enumerate(TOPICS):
        slug = topic.replace(" ", "-")
        (corpus / "answers" / f"{slug}.md").write_text(
            f"# The {topic}\n\nThe {topic} dates from the year {1700 + 7 * i}. Builders painted it "
            f"{COLOURS[i % len(COLOURS)]} and the guild of {topic.split()[0]} masons kept its records.\n")
        if i % 2 == 0:  # an FAQ page that repeats the question, so it outranks the answer page
            (corpus / "faq" / f"{slug}.md").write_text(
                f"# Questions about the {topic}\n\n{question(topic)} {question(topic)} "
                f"Visitors often ask when the {topic} was first built and by whom; see the archive.\n")
    return corpus


def config(directory: Path, corpus: Path, top_k: int, max_context_chars: int = 1200,
           own_reports: bool = True) -> Path:
    """The config; without `own_reports` it sets no `reports_dir` (reports go where run.py puts them by default)."""
    path = write_config(
        directory, corpus, synthetic=False,
        system={"model_name": MODEL,
                "generator": {"model": "openai/mock-generator", "max_tokens": 64,
                              "extra": {"mock_response": "It was built long ago by the local guild."}},
                "rag": {"retrieval_mode": "bm25", "top_k": top_k, "max_context_chars": max_context_chars}},
        judges={"enabled": ["similarity"]},
        e2e={"enabled": False},
        gate={"default_allowed_drop": 0.0, "per_metric": {"system/*": 0.0},
              "gated_metrics": ["system/hit_rate", "system/context_recall"], "inconclusive": "promote"},
    )
    rows = [{"id": f"q{i:02d}", "question": question(t), "relevant": [f"answers/{t.replace(' ', '-')}.md"],
             "reference_answer": f"The {t} dates from the year {1700 + 7 * i}, built by the {t.split()[0]} masons."}
            for i, t in enumerate(TOPICS)]
    (directory / "labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if not own_reports:
        settings = yaml.safe_load(path.read_text())
        del settings["reports_dir"]
        path.write_text(yaml.safe_dump(settings))
    return path


def _listing(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} if directory.is_dir() else {}


def test_top_k_cut_is_blocked_and_compare_after_promotion_uses_the_replaced_production(
        tmp_path: Path, decoy_corpus: Path, capsys: pytest.CaptureFixture[str], session_reports: Path) -> None:
    checkout_reports = Path(cli.__file__).resolve().parent / "reports"
    before = _listing(checkout_reports)  # the user's own reports: the tests leave them alone
    assert cli.main(["full", "--config", str(config(tmp_path / "k3", decoy_corpus, top_k=3))]) == 0
    first = Client().get_model_version(MODEL, ModelStages.PRODUCTION)
    capsys.readouterr()

    # the regression: the system now answers from one chunk instead of three
    earlier = _listing(session_reports)
    assert cli.main(["full", "--config", str(config(tmp_path / "k1", decoy_corpus, top_k=1, own_reports=False))]) == 1
    out = capsys.readouterr().out
    written = {name for name, at in _listing(session_reports).items() if earlier.get(name) != at}
    assert "latest.html" in written and len(written) == 2, written  # no reports_dir: the session's directory
    assert "NOT PROMOTED" in out and "system/hit_rate regressed" in out
    verdict = next(line for line in out.splitlines() if line.startswith("Worse than"))
    assert out.index(verdict) < out.index("metric ")  # the verdict line comes first, then the headline
    assert "Worse than production: " in verdict and "system/hit_rate" in verdict
    assert Client().get_model_version(MODEL, ModelStages.PRODUCTION).id == first.id

    # a harmless change is promoted; compare then shows it against the version it replaced
    harmless = config(tmp_path / "k3b", decoy_corpus, top_k=3, max_context_chars=1100)
    assert cli.main(["full", "--config", str(harmless)]) == 0
    second = Client().get_model_version(MODEL, ModelStages.PRODUCTION)
    assert second.id != first.id
    capsys.readouterr()
    assert cli.main(["compare", "--config", str(harmless)]) == 0
    out = capsys.readouterr().out
    assert f"previous production {first.name}" in out, out[:2000]
    page_path = tmp_path / "k3b" / "reports" / "comparison.html"  # the config's reports_dir
    assert f"HTML: {page_path}" in out
    page = page_path.read_text(encoding="utf-8")
    assert (tmp_path / "k3" / "reports" / "latest.html").is_file()
    assert _listing(checkout_reports) == before
    assert page.index('id="verdict"') < page.index("<table")
