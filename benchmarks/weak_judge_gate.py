"""Is the weak judge's own paired difference safe to gate on? A model-free proxy on the default's answers.

The shipped faithfulness verifier decides a statement from P(supported) = support model(judge P(yes),
lexical support) under two rules (no claim; a number, identifier or CamelCase name no retrieved
context holds), and the fitted model weighs lexical support 2.17 against 0.14 for the judge's logit
(`ragwatch.judges.faithfulness.calibrations`). This script re-decides the default's labelled answers
(`data/judge_dev/rag_statements/statements.jsonl`, their own retrieved contexts) after each planted
edit of `benchmarks/gate_power.py` with the verifier's own `decide`, holding each statement's judge
P(yes) at its measured value (a features file from `benchmarks/statement_features.py`; 0.5 where it
has none): so it measures what lexical support and the rules see, without the model. The judge's own
reaction to an edit is not in it (the real-model run is `python benchmarks/gate_power.py --generator
local --questions zenml --changes "a name,no-op"`). Each edit is gated against the unedited answers
with the default's gate (`configs/evaluate.yaml`) under both `weak_judge` rules.

Usage:
    python -m benchmarks weak_judge_gate [--features data/judge_dev/rag_statements/features.jsonl]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import gate_power  # noqa: E402

from ragwatch.config import FullConfig  # noqa: E402
from ragwatch.config_loader import load_config  # noqa: E402
from ragwatch.decision.compare import compare_runs  # noqa: E402
from ragwatch.decision.gate import gate_decision  # noqa: E402
from ragwatch.decision.labels_plan import labels_plans  # noqa: E402
from ragwatch.judges.faithfulness import PROMPT_VERSION as FAITHFULNESS_PROMPT  # noqa: E402
from ragwatch.judges.faithfulness.calibrations import faithfulness_calibration  # noqa: E402
from ragwatch.judges.faithfulness.features import statement_features  # noqa: E402
from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier  # noqa: E402
from ragwatch.report.verdicts import reason_lines  # noqa: E402
from ragwatch.results import ItemScore, MetricInfo, MetricResult  # noqa: E402
from ragwatch.types import RagAnswer, RetrievedContext  # noqa: E402

STATEMENTS = ROOT / "data" / "judge_dev" / "rag_statements" / "statements.jsonl"


def load(path: Path, features: Path | None) -> tuple[list[RagAnswer], list[list[str]], dict[str, float]]:
    """The answers (with contexts), their statements in order, and the judge's P(yes) per statement text."""
    by_item: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        item = by_item.setdefault(row["item_id"], {"row": row, "statements": {}})
        item["statements"][row["statement_index"]] = row["statement"]
    p_judge: dict[str, float] = {}
    if features is not None and features.is_file():
        for line in features.read_text().splitlines():
            row = json.loads(line)
            if row.get("p_judge") is not None:
                p_judge[row["statement"]] = float(row["p_judge"])
    answers, statements = [], []
    for item_id, item in by_item.items():
        row = item["row"]
        answers.append(RagAnswer(question=row["question"], answer=row["answer"],
                                 contexts=[RetrievedContext(text=t) for t in row["contexts"]]))
        answers[-1].__dict__["item_id"] = item_id
        statements.append([item["statements"][k] for k in sorted(item["statements"])])
    return answers, statements, p_judge


def edit_statements(statements: list[str], answer: RagAnswer, edit) -> list[str]:
    """The edit applied to the answer's statements (one statement a pseudo-answer with the same contexts)."""
    pseudo = [answer.model_copy(update={"answer": s}) for s in statements]
    edited = edit(pseudo)
    # a planted edit changes the answer's first term only: keep the first changed statement, undo the rest
    out, done = [], False
    for old, new in zip(statements, [a.answer for a in edited], strict=True):
        out.append(new if (new != old and (not done or edit is gate_power.restyle)) else old)
        done = done or new != old
    return out


def faithfulness(answers: list[RagAnswer], statements: list[list[str]], p_judge: dict[str, float],
                 info: MetricInfo, verifier: EvidenceVerifier, base: list[list[str]] | None = None) -> MetricResult:
    items = []
    for k, (answer, stmts) in enumerate(zip(answers, statements, strict=True)):
        contexts = [c.text for c in answer.contexts]
        verdicts = []
        for j, s in enumerate(stmts):
            judge = p_judge.get(base[k][j] if base else s, p_judge.get(s, 0.5))  # the judge held at its value
            verdicts.append(verifier.decide(s, statement_features(s, contexts, p_judge=judge, cited=[]), []))
        share = sum(bool(v.verdict) for v in verdicts) / len(verdicts)
        items.append(ItemScore(item_id=answer.__dict__["item_id"], score=share,
                               details={"verdicts": [v.model_dump() for v in verdicts],
                                        "judged_key": "|".join(stmts)}))
    return MetricResult.from_items("faithfulness", items, info=info)


def write_features(statements: Path, result: MetricResult, out: Path) -> None:
    """One row per statement: item_id, P(supported), verdict and the reference label."""
    labels = {}
    for line in statements.read_text().splitlines():
        row = json.loads(line)
        labels[(row["item_id"], row["statement"])] = row.get("label")
    with out.open("w") as handle:
        for item in result.items:
            for v in item.details["verdicts"]:
                handle.write(json.dumps({"item_id": item.item_id, "p_supported": v["p_supported"],
                                         "verdict": v["verdict"], "label": labels.get((item.item_id, v["statement"]))})
                             + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=Path, default=STATEMENTS)
    parser.add_argument("--features", type=Path, default=STATEMENTS.with_name("features.jsonl"))
    parser.add_argument("--write-features", type=Path,
                        help="also write the unedited statements' P(supported), verdict and label here (the "
                             "input of benchmarks/active_labels.py when no model-made features file exists)")
    args = parser.parse_args(argv)
    config = load_config(ROOT / "configs" / "full.yaml", FullConfig)
    gate = config.evaluate.gate.model_copy(update={"gated_metrics": ["faithfulness"]})
    calibration = faithfulness_calibration(config.evaluate.judges.llm.model, FAITHFULNESS_PROMPT)
    if calibration is None:
        raise SystemExit("no shipped calibration for the default judge: nothing to hold the verifier to")
    verifier = EvidenceVerifier(support_model=calibration.support_model)
    info = MetricInfo(family="judge", judge_model=config.evaluate.judges.llm.model, prompt_version=FAITHFULNESS_PROMPT,
                      scale=(0.0, 1.0), agreement=calibration.agreement)
    answers, statements, p_judge = load(args.statements, args.features)
    base = faithfulness(answers, statements, p_judge, info, verifier)
    if args.write_features:
        write_features(args.statements, base, args.write_features)
    n_statements = sum(len(s) for s in statements)
    print(f"{len(answers)} answers, {n_statements} statements of {args.statements}; judge P(yes) measured for "
          f"{sum(s in p_judge for st in statements for s in st)} statements (0.5 elsewhere); gate: allowed drop "
          f"{gate.allowed_drop('faithfulness')}, min_judge_kappa {gate.min_judge_kappa}, agreement kappa "
          f"{calibration.agreement.kappa}; baseline faithfulness {base.score:.3f} (n={base.n_scored})\n")
    edits = [("a name or number no context holds", True, lambda a: gate_power.plant(a, "fabricate")),
             ("a name or number of its contexts in the wrong place", True, lambda a: gate_power.plant(a, "swap")),
             ("no-op: identical replay", False, list),
             ("no-op: answers reworded (style only)", False, gate_power.restyle)]
    print("| change | answers changed | statements flipped to unsupported | faithfulness diff [95% CI] | "
          "gate (weak_judge: paired) | gate (weak_judge: labels) |")
    print("|---|---|---|---|---|---|")
    for name, _regression, edit in edits:
        edited = [edit_statements(st, a, edit) for st, a in zip(statements, answers, strict=True)]
        new = faithfulness(answers, edited, p_judge, info, verifier, base=statements)
        flipped = sum(bool(o["verdict"]) and not n["verdict"] for it_o, it_n in zip(base.items, new.items, strict=True)
                      for o, n in zip(it_o.details["verdicts"], it_n.details["verdicts"], strict=True))
        changed = sum(e != s for e, s in zip(edited, statements, strict=True))
        comparison = compare_runs({"faithfulness": new}, {"faithfulness": base}, thresholds=gate)
        row = comparison.row("faithfulness")
        plans = labels_plans(comparison, {"faithfulness": new}, {"faithfulness": base}, run="<run>", thresholds=gate)
        paired = gate_decision(comparison, gate, plans=plans)
        strict = gate_decision(comparison, gate.model_copy(update={"weak_judge": "labels"}), plans=plans)
        print(f"| {name} | {changed} | {flipped} | {row.diff:+.3f} [{row.diff_low:+.3f}, {row.diff_high:+.3f}] "
              f"{row.verdict} | {paired.status} | {strict.status} |")
        for reason in reason_lines(paired)[:1]:
            print(f"|  |  |  | {reason[:300]} |  |  |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
