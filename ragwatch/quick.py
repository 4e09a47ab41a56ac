"""`--quick`: a first look at about a dozen items in minutes, which decides nothing.

The config is cut down, not replaced: the same documents, system, models and judges, on about
`QUICK_ITEMS` questions (a seeded sample of the labelled sets when the config has any, else one
generated question from each of `QUICK_ITEMS` sampled chunks, then questions without a reference answer
are measured by retrieval alone; the sample's own ZenML question set and the keyword tests are left
out). So few items give intervals too wide to tell a change from noise,
so a quick run never decides: its gate is not applied (`evaluate.quick`; the gate reads "NOT APPLIED
(--quick: 12 items cannot decide)"), it is not promoted (`promote: false`), its versions are those of
`<model_name>-quick` (never the real system's production baseline), its runs are tagged `quick` (no
later run takes one as its "previous run"), and run.py exits 0.

Example:
    >>> from ragwatch.config import FullConfig
    >>> quick = quick_config(FullConfig())
    >>> quick.testset.testset.n_chunks, quick.evaluate.promote, quick.evaluate.judges.faithfulness.cascade
    (12, False, True)
"""

from __future__ import annotations

from ragwatch.config import FullConfig

QUICK_ITEMS = 12
QUICK_TAG = "quick"


def quick_config(config: FullConfig) -> FullConfig:
    """`config` cut to about `QUICK_ITEMS` answered and judged items, marked as a run that decides nothing."""
    quick = config.model_copy(deep=True)
    testset = quick.testset
    if testset.imports:  # the user's own questions first: a seeded sample shared among the sets
        share = max(1, QUICK_ITEMS // len(testset.imports))
        testset.imports = [i.model_copy(update={"sample": min(share, i.sample or share), "limit": None})
                           for i in testset.imports]
        testset.synthetic = False
    elif not quick.retrieval_only:
        testset.synthetic = True
        testset.testset = testset.testset.model_copy(
            update={"n_chunks": QUICK_ITEMS, "questions_per_chunk": 1, "llm_answerability_check": False})
        # the synthetic pairs are the look's items: questions without a reference (the sample's handwritten
        # question -> page cases) are measured by retrieval, not answered beyond QUICK_ITEMS
        quick.evaluate.without_reference = "retrieval_only"
    testset.zenml_qa = None  # the sample's 33 labelled questions: each would need a written reference
    evaluate = quick.evaluate
    # the judge asked only where its reply can change a verdict: 0.27x its time; what the cascade costs (the
    # gate's sight of names put in the wrong place) does not matter to a run that decides nothing
    judges = evaluate.judges
    judges.__pydantic_extra__["faithfulness"] = judges.options("faithfulness").model_copy(update={"cascade": True})
    evaluate.e2e.enabled = False
    evaluate.judge_panel = []
    evaluate.promote = False
    evaluate.quick = True
    evaluate.system.model_name = f"{evaluate.system.model_name}-{QUICK_TAG}"
    return quick


def quick_gate_reason(n_items: int) -> str:
    """Why a quick run's gate is not applied: "--quick: 12 items cannot decide"."""
    return f"--quick: {n_items} items cannot decide"


def quick_banner(n_items: int | None = None) -> str:
    """What the printout says first and last about a quick run."""
    items = f"{n_items} items" if n_items else f"about {QUICK_ITEMS} items"
    return (f"QUICK LOOK ({items}): so few items cannot decide anything. Every interval below is wide, "
            "a difference between runs is noise until shown otherwise, and the gate's verdict is not applied "
            f"(no promotion, exit code 0; the run is tagged '{QUICK_TAG}' and is never a baseline). "
            "For a decision, run the full evaluation: python run.py full (about 64 items on the sample).")
