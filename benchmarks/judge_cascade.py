"""Spend the judge where it changes verdicts: a cascade against today's verifier, from measured features.

Today every statement that makes a claim goes to the LLM (one call per answer), and the verdict is
the support model on the judge's P(yes) and lexical support, under the rules. With the judge's
weight this small, lexical support and the rules decide most verdicts whatever the judge says: a
statement needs the LLM only when its verdict at the lowest judge logit differs from its verdict at
the highest. The cascade calls the LLM for those statements only; the others are decided by the rules
(no claim, a term no retrieved context holds: "no" whatever the judge says) and by lexical support.

Two bounds on the judge's logit: `exact` is the whole clipped range (P(yes) in [1e-4, 1 - 1e-4]): the
cascade's verdicts are today's by construction; `observed` is the range of P(yes) the judge gave in
the data (the `--quantile` and 1 - `--quantile` quantiles): fewer calls, verdicts equal except where
the judge leaves that range. Per range: statements and answers that still need the LLM, the verdicts'
agreement with today's and with the reference labels, and the judge's seconds per answer: today's
measured (`answer_seconds` of `benchmarks/statement_features.py`, LLM cache off), the cascade's
estimated from it (an answer with no statement left costs 0; one with k of n statements left costs
between k/n of its time and all of it).

    python benchmarks/judge_cascade.py --data /work/helpers/data/features_default_dev.jsonl
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faithfulness_level import load_records  # noqa: E402

from ragwatch.judges.faithfulness.calibrations import CALIBRATIONS  # noqa: E402
from ragwatch.judges.faithfulness.level import vetoed  # noqa: E402
from ragwatch.judges.faithfulness.support_model import LOGIT_CLIP, SupportModel  # noqa: E402
from ragwatch.statistics.agreement import balanced_accuracy, cohen_kappa  # noqa: E402


def needs_judge(raw: dict[str, Any], model: SupportModel, low: float, high: float) -> bool:
    """Whether the judge's P(yes) anywhere in [low, high] can change this statement's verdict."""
    if vetoed(raw):
        return False
    at = [model.predict({**raw, "p_judge": p}) >= model.cutoff for p in (low, high)]
    return at[0] != at[1]


def cascade_verdict(raw: dict[str, Any], model: SupportModel, low: float, high: float) -> bool:
    """The cascade's verdict: the judge's where it can change it, else the verdict any judge would give."""
    if vetoed(raw):
        return False
    if needs_judge(raw, model, low, high):
        return model.predict(raw) >= model.cutoff
    return model.predict({**raw, "p_judge": low}) >= model.cutoff


def row(name: str, records: Sequence[dict[str, Any]], model: SupportModel, low: float, high: float) -> str:
    today = [model.predict(r) >= model.cutoff and not vetoed(r) for r in records]
    verdicts = [cascade_verdict(r, model, low, high) for r in records]
    called = [needs_judge(r, model, low, high) for r in records]
    by_answer: dict[str, list[int]] = {}
    for r, c in zip(records, called, strict=True):
        by_answer.setdefault(r["answer_id"], []).append(int(c))
    seconds = {r["answer_id"]: float(r.get("answer_seconds") or 0.0) for r in records}
    today_calls = sum(not r.get("no_claim") for r in records)
    t_today = np.mean(list(seconds.values()))
    t_low = np.mean([seconds[a] * sum(c) / len(c) for a, c in by_answer.items()])
    t_high = np.mean([seconds[a] * (sum(c) > 0) for a, c in by_answer.items()])
    labels = [bool(r["label"]) for r in records]
    same = sum(a == b for a, b in zip(today, verdicts, strict=True))
    agreement = f"{balanced_accuracy(labels, verdicts):.3f} / {cohen_kappa(labels, verdicts):.3f}"
    return (f"| {name} | [{low:.4f}, {high:.4f}] | {sum(called)} of {today_calls} | "
            f"{sum(any(c) for c in by_answer.values())} of {len(by_answer)} | {same}/{len(records)} "
            f"({same / len(records):.0%}) | {agreement} | "
            f"{t_today:.1f} | {t_low:.1f} - {t_high:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="statement features with labels")
    parser.add_argument("--quantile", type=float, default=0.01, help="observed range: these quantiles of P(yes)")
    args = parser.parse_args(argv)
    records = [r for r in load_records(args.data) if r.get("p_judge") is not None or r.get("no_claim")]
    model = CALIBRATIONS[0].support_model
    judged = np.array([r["p_judge"] for r in records if r.get("p_judge") is not None])
    labels = [bool(r["label"]) for r in records]
    today = [model.predict(r) >= model.cutoff and not vetoed(r) for r in records]
    print(f"{len(records)} labelled statements of {len({r['answer_id'] for r in records})} answers; support model "
          f"{model.weights} + {model.intercept:.3f}, cut-off {model.cutoff}; P(yes) observed "
          f"{judged.min():.4f} - {judged.max():.4f}\n")
    print("| verifier | judge P(yes) range | statements to the LLM | answers with a call | verdicts as today | "
          "bal. acc. / kappa vs labels | judge s/answer today | cascade (est.) |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| today | - | {sum(not r.get('no_claim') for r in records)} | - | - | "
          f"{balanced_accuracy(labels, today):.3f} / {cohen_kappa(labels, today):.3f} | - | - |")
    print(row("cascade, exact", records, model, LOGIT_CLIP, 1 - LOGIT_CLIP))
    low, high = np.quantile(judged, [args.quantile, 1 - args.quantile])
    print(row(f"cascade, observed ({args.quantile:g} quantiles)", records, model, float(low), float(high)))
    print(row("cascade, observed (min-max)", records, model, float(judged.min()), float(judged.max())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
