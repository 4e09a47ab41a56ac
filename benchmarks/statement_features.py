"""The shipped faithfulness verifier's features and verdict for every statement of a statements file.

Reads statements (JSONL, one row per statement: item_id, question, contexts, statement_index,
statement; optional system, statement_id, label) and judges each answer's statements together, in
order, with the faithfulness judge exactly as the evaluation config builds it (judge model, its
settings, `statements`/`verify` options, the shipped calibration of that model and prompt version).
Writes one row per statement: the judge's P(yes), lexical support, the rule flags, the rule that
decided, the verdict and P(supported) under the shipped calibration, and the seconds the answer's
judge call took (`answer_seconds`; `seconds` is that shared evenly over its statements). Answers are
gathered `--batch` at a time (default: the judge client's concurrency, as the judge step gathers its
items), so `answer_seconds` is a batch's wall time shared by its answers. Answers already in `--out`
are skipped, so an interrupted run resumes. The LLM cache is off: seconds are real.

    python benchmarks/statement_features.py data/judge_dev/rag_statements/statements.jsonl \
        --out data/judge_dev/rag_statements/features.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from rag_statements import judge_batch  # noqa: E402

from ragwatch.config import FullConfig  # noqa: E402
from ragwatch.config_loader import load_config  # noqa: E402
from ragwatch.judges.config import build_judges  # noqa: E402
from ragwatch.judges.faithfulness import FaithfulnessJudge  # noqa: E402
from ragwatch.judges.faithfulness.features import features_of, statement_features  # noqa: E402
from ragwatch.judges.faithfulness.verify_evidence import EvidenceVerifier, rule_of  # noqa: E402
from ragwatch.judges.faithfulness.versions import FEATURES_VERSION  # noqa: E402
from ragwatch.llm.client import LLMClient  # noqa: E402
from ragwatch.statements import StatementVerdict  # noqa: E402

LABELS = ("supported", "unsupported")
NOT_JUDGED = "not judged (--no-judge): model-free features only"


def statement_id(row: dict[str, Any]) -> str:
    """The row's own id, else `<system>/<item_id>#<statement_index>` (system left out when absent)."""
    if row.get("statement_id"):
        return str(row["statement_id"])
    prefix = f"{row['system']}/" if row.get("system") else ""
    return f"{prefix}{row['item_id']}#{row['statement_index']}"


def load_answers(path: Path, system: str | None = None) -> list[dict[str, Any]]:
    """Answers with all their statements in `statement_index` order (labelled or not); `system` names
    the system of rows that carry none."""
    answers: dict[tuple[str, str], dict[str, Any]] = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if system and not row.get("system"):
            row["system"] = system
        missing = [k for k in ("item_id", "contexts", "statement_index", "statement") if k not in row]
        if missing:
            raise SystemExit(f"{path}:{n}: a statement row needs {missing}; see the module docstring")
        key = (str(row.get("system") or ""), str(row["item_id"]))
        answer = answers.setdefault(key, {"id": "/".join(k for k in key if k),
                                          "question": row.get("question"), "contexts": row["contexts"],
                                          "rows": []})
        answer["rows"].append(row)
    for answer in answers.values():
        answer["rows"].sort(key=lambda r: int(r["statement_index"]))
        answer["statements"] = [r["statement"] for r in answer["rows"]]
    return list(answers.values())


def shipped_judge(config_path: Path, *, cache: bool = False) -> tuple[FaithfulnessJudge, Any]:
    """The faithfulness judge as `run.py evaluate` builds it from `config_path`, and its client (the LLM cache
    off unless `cache`: a rerun is then free, and its seconds are not timings)."""
    judges = load_config(config_path, FullConfig).evaluate.judges
    settings = judges.llm.model_copy(update={"cache": cache, "timeout_s": 1800})
    llm = LLMClient(settings)
    config = judges.model_copy(update={"enabled": ["faithfulness"], "llm": settings})
    (judge,) = build_judges(config, llm)
    judge.verifier.cascade = False  # fitting data: every statement's reply, also where it cannot change a verdict
    if judge.calibration is None:
        print(f"note: no shipped calibration for {settings.model} / {judge.metrics['faithfulness'].prompt_version}; "
              "P(supported) is the judge's own P(yes)", file=sys.stderr)
    return judge, llm


def model_free_verdicts(answer: dict[str, Any]) -> list[StatementVerdict]:
    """What the verifier knows of each statement before it asks the model: lexical support and its rules."""
    out = []
    for statement in answer["statements"]:
        features = statement_features(statement, answer["contexts"])
        out.append(StatementVerdict(statement=statement, verdict=None, rule=rule_of(features), features=features,
                                    lexical_support=features.lexical, error=NOT_JUDGED))
    return out


def refreshed_rows(judge: FaithfulnessJudge, answer: dict[str, Any],
                   rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of an earlier run with the model-free features of this version and the verdict of the shipped
    calibration on them; the judge's reply as it was recorded (P(yes), cited nothing, terms its cited
    sentences lacked), so no model is run."""
    by_id = {statement_id(r): r for r in answer["rows"]}
    out = []
    for row in rows:
        source = by_id.get(row["statement_id"])
        if source is None or row.get("error"):
            out.append(row)
            continue
        features = statement_features(source["statement"], answer["contexts"])
        if row.get("p_judge") is not None:
            features = features.model_copy(update={k: row[k] for k in ("p_judge", "uncited", "missing_terms")})
        if not isinstance(judge.verifier, EvidenceVerifier):
            raise SystemExit("--refresh needs the evidence verifier (faithfulness.verify: evidence)")
        v = judge.verifier.decide(source["statement"], features, [])
        out.append({**row, **features.model_dump(), "rule": v.rule, "verdict": v.verdict,
                    "p_supported": v.p_supported, "threshold": v.threshold, "features_version": FEATURES_VERSION})
    return out


def refresh(judge: FaithfulnessJudge, answers: list[dict[str, Any]], out: Path) -> int:
    """Rewrite `out` in place with `refreshed_rows` (answers of `answers` only); how many rows changed."""
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    answer_of = {statement_id(r): a for a in answers for r in a["rows"]}
    new = []
    for row in rows:
        answer = answer_of.get(row["statement_id"])
        new += refreshed_rows(judge, answer, [row]) if answer is not None else [row]
    out.write_text("".join(json.dumps(r) + "\n" for r in new))
    return sum(a != b for a, b in zip(rows, new, strict=True))


def feature_rows(judge: FaithfulnessJudge, answer: dict[str, Any], verdicts: list[Any],
                 seconds: float) -> list[dict[str, Any]]:
    """One output row per statement of the answer."""
    model = judge.model or ""
    out = []
    for k, row in enumerate(answer["rows"]):
        v = verdicts[k] if k < len(verdicts) else None
        feats = features_of(v) if v is not None and v.features is not None else {}
        out.append({
            "statement_id": statement_id(row), "item_id": row["item_id"], "system": row.get("system"),
            "statement_index": row["statement_index"], "statement": row["statement"],
            "label": row.get("label") if row.get("label") in LABELS else None,
            **feats, "features_version": FEATURES_VERSION, "rule": v.rule if v is not None else None,
            "verdict": v.verdict if v is not None else None, "p_supported": v.p_supported if v is not None else None,
            "threshold": v.threshold if v is not None else None,
            "error": (v.error if v is not None else "no verdict returned"),
            "judge_model": model.removeprefix("local/"), "prompt_version": judge.metrics["faithfulness"].prompt_version,
            "seconds": seconds / len(answer["rows"]), "answer_seconds": seconds,
        })
    return out


def done_ids(out: Path) -> set[str]:
    """Statement ids already in the features file (a run resumes)."""
    if not out.is_file():
        return set()
    return {json.loads(line)["statement_id"] for line in out.read_text().splitlines() if line.strip()}


def write_features(judge: FaithfulnessJudge, llm: Any, answers: list[dict[str, Any]], out: Path,
                   batch: int = 1, *, no_judge: bool = False) -> float:
    """Judge the answers not yet in `out`, `batch` at a time, appending their rows (flushed per batch);
    the seconds spent. A batch's wall time is shared evenly by its answers (`answer_seconds`)."""
    done = done_ids(out)
    todo = [a for a in answers if not all(statement_id(r) in done for r in a["rows"])]
    out.parent.mkdir(parents=True, exist_ok=True)
    total = 0.0
    for start in range(0, len(todo), batch):
        chunk = todo[start:start + batch]
        results, seconds = (([(model_free_verdicts(a), 0) for a in chunk], 0.0) if no_judge
                            else judge_batch(llm, judge.verifier, chunk))
        total += seconds
        with out.open("a") as f:
            for answer, (verdicts, _) in zip(chunk, results, strict=True):
                rows = feature_rows(judge, answer, verdicts, seconds / len(chunk))
                f.writelines(json.dumps({**row, "batch": len(chunk)}) + "\n" for row in rows)
        n = start + len(chunk)
        print(f"[{n}/{len(todo)}] {len(chunk)} answers in {seconds:.1f} s (mean {total / n:.1f} s per answer)",
              file=sys.stderr, flush=True)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("statements", type=Path, help="statements JSONL (item_id, question, contexts, ...)")
    parser.add_argument("--threads", type=int, help="llama.cpp threads of a local model (default: the provider's; "
                        "on a loaded machine 1 wastes less time waiting on descheduled threads)")
    parser.add_argument("--out", type=Path, required=True, help="features JSONL; answers already there are skipped")
    parser.add_argument("--refresh", action="store_true", help="rewrite --out in place: the model-free features "
                        "of this version and the shipped calibration's verdicts, the judge's recorded reply kept "
                        "(no call)")
    parser.add_argument("--no-judge", action="store_true", help="only the model-free features (lexical support, "
                        "the rules), no model call: p_judge, verdict and P(supported) are null")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml",
                        help="the evaluation config whose judges section builds the judge (default: the shipped one)")
    parser.add_argument("--system", help="the system of rows that name none (e.g. S0 for the shipped dev set)")
    parser.add_argument("--batch", type=int, help="answers judged together (default: the judge LLM's concurrency, "
                        "as the judge step gathers its items; 1: one at a time)")
    args = parser.parse_args(argv)
    if args.threads:
        from ragwatch.llm import local

        local.N_THREADS = args.threads

    answers = load_answers(args.statements, args.system)
    judge, llm = shipped_judge(args.config)
    if args.refresh:
        changed = refresh(judge, answers, args.out)
        print(f"refreshed {args.out}: {changed} rows changed", file=sys.stderr)
        return 0
    if judge.model and judge.model.startswith("local/") and not args.no_judge:
        from ragwatch.llm import local

        local.load(judge.model.removeprefix("local/"))  # load outside the timing
    total = write_features(judge, llm, answers, args.out, batch=args.batch or llm.settings.concurrency,
                           no_judge=args.no_judge)
    print(f"{len(answers)} answers in {args.statements}; judged now in {total:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
