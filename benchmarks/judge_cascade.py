"""Spend the judge where it changes verdicts: the cascade against today's verifier, from measured features.

Today every statement that makes a claim goes to the LLM (one call per answer, all its statements),
and the verdict is the support model on the judge's reply (P(yes), whether it cited a sentence, the
key terms its cited sentences lack) and lexical support, under the rules. The cascade
(`ragwatch.judges.faithfulness.cascade`) asks the judge only about statements whose verdict some reply
could change; the others are decided by the rules and lexical support, with the verdict any reply
would have given. Per labelled statement: whether it still goes to the LLM, and the cascade's verdict
(equal to today's by construction: the benchmark checks it). Per answer, the judge's seconds: today's
measured (`answer_seconds` of `benchmarks/statement_features.py`, LLM cache off), the cascade's
estimated from it (an answer with no statement left costs 0; one with k of n statements left costs
between k/n of its time and all of it: the prompt shrinks less than the reply).

    python -m benchmarks judge_cascade --data data/judge_dev/rag_statements/features.jsonl \
        data/judge_dev/rag_statements/features_new.jsonl
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS  # noqa: E402
from ragwatch.judges.faithfulness.cascade import judge_can_change, unasked_probability  # noqa: E402
from ragwatch.judges.faithfulness.evidence import missing_terms  # noqa: E402
from ragwatch.judges.faithfulness.fit import read_labelled  # noqa: E402
from ragwatch.judges.faithfulness.level import vetoed  # noqa: E402
from ragwatch.judges.faithfulness.support_model import SupportModel  # noqa: E402
from ragwatch.statistics.agreement import balanced_accuracy, cohen_kappa  # noqa: E402


def needs_judge(raw: dict[str, Any], model: SupportModel) -> bool:
    """Whether the cascade asks the judge about this statement (its verdict depends on the reply)."""
    if vetoed(raw):
        return False
    return judge_can_change(model, model.cutoff, lexical=float(raw["lexical"]),
                            n_terms=len(missing_terms(str(raw["statement"]), [])))


def cascade_verdict(raw: dict[str, Any], model: SupportModel) -> bool:
    if vetoed(raw):
        return False
    if needs_judge(raw, model):
        return model.predict(raw) >= model.cutoff
    n_terms = len(missing_terms(str(raw["statement"]), []))
    return unasked_probability(model, lexical=float(raw["lexical"]), n_terms=n_terms) >= model.cutoff


def table(name: str, records: Sequence[dict[str, Any]], model: SupportModel) -> list[str]:
    today = [model.predict(r) >= model.cutoff and not vetoed(r) for r in records]
    verdicts = [cascade_verdict(r, model) for r in records]
    called = [needs_judge(r, model) for r in records]
    by_answer: dict[str, list[int]] = {}
    for r, c in zip(records, called, strict=True):
        if not r.get("no_claim"):
            by_answer.setdefault(r["answer_id"], []).append(int(c))
    seconds = {r["answer_id"]: float(r.get("answer_seconds") or 0.0) for r in records}
    today_calls = sum(not r.get("no_claim") for r in records)
    t_today = float(np.mean([seconds[a] for a in by_answer]))
    t_low = float(np.mean([seconds[a] * sum(c) / len(c) for a, c in by_answer.items()]))
    t_high = float(np.mean([seconds[a] * (sum(c) > 0) for a, c in by_answer.items()]))
    labels = [bool(r["label"]) for r in records]
    same = sum(a == b for a, b in zip(today, verdicts, strict=True))
    return [
        f"| {name}: today | {today_calls} of {len(records)} | {len(by_answer)} of {len(by_answer)} | - | "
        f"{balanced_accuracy(labels, today):.3f} / {cohen_kappa(labels, today):.3f} | {t_today:.1f} |",
        f"| {name}: cascade | {sum(called)} of {len(records)} | {sum(any(c) for c in by_answer.values())} of "
        f"{len(by_answer)} | {same}/{len(records)} | {balanced_accuracy(labels, verdicts):.3f} / "
        f"{cohen_kappa(labels, verdicts):.3f} | {t_low:.1f} - {t_high:.1f} ({t_low / t_today:.2f}x - "
        f"{t_high / t_today:.2f}x) |",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True,
                        help="statement features with labels and statement text")
    args = parser.parse_args(argv)
    records = [r for r in read_labelled(args.data) if r.get("p_judge") is not None or r.get("no_claim")]
    model = CALIBRATIONS[0].support_model
    print(f"{len(records)} labelled statements of {len({r['answer_id'] for r in records})} answers; support model "
          f"{model.weights} + {model.intercept:.3f}, cut-off {model.cutoff}\n")
    print("| verifier | statements to the LLM | answers with a call | verdicts as today | bal. acc. / kappa vs "
          "labels | judge s/answer (cascade: estimated) |")
    print("|---|---|---|---|---|---|")
    systems = sorted({str(r.get("system") or "default") for r in records})
    for system in systems if len(systems) > 1 else []:
        print("\n".join(table(system, [r for r in records if str(r.get("system") or "default") == system], model)))
    print("\n".join(table("all", records, model)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
