"""Where the faithfulness verifier fails, by kind: the reader's rules on labelled statements, and planted errors.

1. On labelled statements of RAG answers (features files of `benchmarks/statement_features.py` and
   the statements files with their contexts): per kind of term no retrieved context holds
   (`ragwatch.judges.faithfulness.terms`), how many statements it flags and how many of those the
   readers labelled unsupported (its precision as a veto, with a 95% Wilson interval), and how many
   verdicts of the support model it turns (flagged statements the model alone calls supported).
2. Errors planted into the statements the readers labelled supported, deterministically (`--seed`),
   one per statement, of several kinds: a name or number that no context holds, a name, identifier
   or number of the same contexts put in the wrong place, a negation, a changed relation (an
   antonym), a number off by a little. Per kind: the share of planted statements called unsupported
   by the rules alone (no model), and, on `--sample` of them per kind, by the shipped verifier with
   the judge (the planted statement judged within its answer, the answer's other statements as they
   were: one call per answer, through the LLM cache, so a rerun is free). The untouched statements
   are the false-alarm side: how often the rules, and the shipped verifier on the judge's recorded
   replies (`--features`), call them unsupported, beside how often the readers do.

    python benchmarks/planted_errors.py --statements data/judge_dev/rag_statements/statements.jsonl \
        data/judge_dev/rag_statements/new_statements.jsonl --features data/judge_dev/rag_statements/features.jsonl \
        data/judge_dev/rag_statements/features_new.jsonl --sample 12 --out benchmarks/results/planted_errors.md

`--no-judge` prints the rules' columns only (no model).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from statement_features import load_answers, shipped_judge, statement_id  # noqa: E402

from ragwatch.judges.faithfulness.evidence import key_terms  # noqa: E402
from ragwatch.judges.faithfulness.features import FIELD_OF, VETO_KINDS, statement_features  # noqa: E402
from ragwatch.judges.faithfulness.terms import KINDS, ContextWords, names  # noqa: E402

# names a ZenML docs answer could plausibly carry, none of them in the bundled sample's contexts
FOREIGN_NAMES = ("Airflow", "Dagster", "Snowflake", "Databricks", "Terraform", "Jenkins", "Prefect", "Metaflow")
ANTONYMS = (("before", "after"), ("first", "last"), ("increase", "decrease"), ("enable", "disable"),
            ("enables", "disables"), ("allows", "prevents"), ("allow", "prevent"), ("local", "remote"),
            ("input", "output"), ("inputs", "outputs"), ("start", "stop"), ("add", "remove"), ("read", "write"),
            ("upload", "download"), ("push", "pull"), ("more", "less"), ("client", "server"), ("public", "private"),
            ("required", "optional"), ("automatically", "manually"), ("same", "different"), ("all", "none of the"),
            ("retrieval", "generation"), ("register", "delete"), ("create", "delete"), ("install", "uninstall"))
NEGATIONS = ((" is ", " is not "), (" are ", " are not "), (" can ", " cannot "), (" will ", " will not "),
             (" should ", " should not "), (" must ", " must not "), (" does ", " does not "), (" has ", " has no "))
NUMBER = re.compile(r"(?<![\w.\-\[])(\d+)(?![\w.]\d|\w|\])")  # not a citation marker [2]
PLANTS = ("name_absent", "number_absent", "name_swapped", "number_swapped", "negation", "relation", "number_off")
ABOUT = {
    "name_absent": "a name of the statement replaced by one no context holds",
    "number_absent": "a number replaced by one no context holds",
    "name_swapped": "a name or identifier replaced by another of the same contexts",
    "number_swapped": "a number replaced by another of the same contexts",
    "negation": "the first auxiliary negated",
    "relation": "a relation word replaced by its antonym",
    "number_off": "a number off by one (or by 10% when larger)",
}


def _sub_word(statement: str, old: str, new: str) -> str | None:
    """`statement` with its first whole-word `old` replaced by `new` (None when it has none)."""
    out, n = re.subn(rf"(?<![\w\-./]){re.escape(old)}(?![\w\-])", new, statement, count=1)
    return out if n else None


def _names_held(statement: str, index: ContextWords) -> list[str]:
    """Single-word names and CamelCase identifiers of the statement that the contexts hold."""
    camel = [t for t in re.findall(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z]*\b|\b[A-Z][A-Z0-9]{1,}[a-z]*\b", statement)]
    return [n for n in dict.fromkeys([*names(statement), *camel]) if " " not in n and index.holds(n)]


def _context_names(contexts: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(n for c in contexts for n in names(c) if " " not in n))


def plant(kind: str, statement: str, contexts: Sequence[str], rng: random.Random) -> str | None:
    """The statement with one error of `kind`, or None when it offers no place for one."""
    index = ContextWords(contexts)
    numbers = NUMBER.findall(statement)
    if kind == "name_absent":
        targets = _names_held(statement, index)
        foreign = [n for n in FOREIGN_NAMES if not index.holds(n)]
        return _sub_word(statement, rng.choice(targets), rng.choice(foreign)) if targets and foreign else None
    if kind == "name_swapped":
        targets = _names_held(statement, index)
        pool = [n for n in _context_names(contexts) if n.lower() not in statement.lower()]
        pool += sorted(t for t in {t for c in contexts for t in key_terms(c)} - key_terms(statement)
                       if not any(ch.isdigit() for ch in t) and "_" in t)
        if not targets or not pool:
            return None
        return _sub_word(statement, rng.choice(targets), rng.choice(pool))
    if kind in ("number_absent", "number_swapped", "number_off"):
        if not numbers:
            return None
        old = rng.choice(numbers)
        value = int(old)
        if kind == "number_absent":
            new = next(str(value * 10 + k) for k in range(3, 100) if not index.holds(str(value * 10 + k)))
        elif kind == "number_off":
            new = str(value + 1 if value < 10 else value + max(1, round(value * 0.1)))
        else:
            pool = sorted({n for c in contexts for n in NUMBER.findall(c)} - {old})
            if not pool:
                return None
            new = rng.choice(pool)
        return _sub_word(statement, old, new)
    if kind == "negation":
        for old, new in NEGATIONS:
            if old in statement:
                return statement.replace(old, new, 1)
        return None
    if kind == "relation":
        pairs = [(a, b) for x, y in ANTONYMS for a, b in ((x, y), (y, x))]
        found = [(a, b) for a, b in pairs if re.search(rf"\b{a}\b", statement)]
        if not found:
            return None
        a, b = rng.choice(found)
        return _sub_word(statement, a, b)
    raise ValueError(f"unknown kind {kind!r}; one of {PLANTS}")


def wilson(k: int, n: int) -> tuple[float, float]:
    """95% Wilson interval of a share k/n."""
    if n == 0:
        return 0.0, 1.0
    z, p = 1.96, k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half / (1 + z * z / n)), min(1.0, centre + half / (1 + z * z / n))


def share(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:.2f} [{lo:.2f}, {hi:.2f}]" if n else "-"


def load(statements: Sequence[Path], features: Sequence[Path]) -> list[dict[str, Any]]:
    """Labelled statements with their answer (contexts, question, all statements) and recorded features."""
    recorded = {}
    for path in features:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                recorded[row["statement_id"]] = row
    out = []
    for path in statements:
        system = "S0" if Path(path).name == "statements.jsonl" else None
        for answer in load_answers(path, system):
            for k, row in enumerate(answer["rows"]):
                rec = recorded.get(statement_id(row))
                if rec is None or rec.get("label") not in ("supported", "unsupported"):
                    continue
                out.append({**rec, "answer": answer, "index": k, "contexts": answer["contexts"]})
    return out


def precision_table(records: list[dict[str, Any]], model_verdict: Callable[[dict[str, Any]], bool]) -> list[str]:
    lines = ["| kind | flagged | labelled unsupported (precision [95%]) | verdicts it turns (model alone: "
             "supported) | veto |", "|---|---|---|---|---|"]
    feats = [statement_features(r["statement"], r["contexts"]) for r in records]
    for kind in KINDS:
        hit = [(r, f) for r, f in zip(records, feats, strict=True) if getattr(f, FIELD_OF[kind])]
        bad = sum(r["label"] == "unsupported" for r, _ in hit)
        turned = [r for r, _ in hit if model_verdict(r)]
        turned_right = sum(r["label"] == "unsupported" for r in turned)
        lines.append(f"| {kind} | {len(hit)} | {share(bad, len(hit))} | {len(turned)} ({turned_right} rightly) | "
                     f"{'yes' if kind in VETO_KINDS else 'no'} |")
    vetoed = [r for r, f in zip(records, feats, strict=True) if f.absent_terms]
    lines.append(f"| any vetoing kind | {len(vetoed)} | "
                 f"{share(sum(r['label'] == 'unsupported' for r in vetoed), len(vetoed))} | | |")
    return lines


def judged_planted(judge: Any, llm: Any, cases: list[dict[str, Any]], batch: int) -> list[bool | None]:
    """The shipped verifier's verdict of each planted statement, judged within its answer (None: the call
    failed; the first failure is printed)."""
    from rag_statements import judge_batch

    out: list[bool | None] = []
    failed = False
    for start in range(0, len(cases), batch):
        chunk = cases[start:start + batch]
        answers = [{**c["answer"], "statements": [c["planted"] if k == c["index"] else s
                                                  for k, s in enumerate(c["answer"]["statements"])]}
                   for c in chunk]
        results, seconds = judge_batch(llm, judge.verifier, answers)
        for c, (verdicts, _) in zip(chunk, results, strict=True):
            v = verdicts[c["index"]] if c["index"] < len(verdicts) else None
            if (v is None or v.verdict is None) and not failed:
                failed = True
                print(f"a judge call failed: {v.error if v is not None else 'no verdict'}", file=sys.stderr)
            out.append(v.verdict if v is not None else None)
        print(f"[{start + len(chunk)}/{len(cases)}] {seconds:.0f} s", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=Path, nargs="+", required=True, help="statements JSONL with contexts")
    parser.add_argument("--features", type=Path, nargs="+", required=True, help="their features (with labels)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--sample", type=int, default=12, help="planted statements per kind judged with the model")
    parser.add_argument("--no-judge", action="store_true", help="the rules' columns only, no model")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    records = load(args.statements, args.features)
    judge, llm = shipped_judge(args.config, cache=True)  # a rerun is free
    from ragwatch.judges.faithfulness.level import verdict_of

    model = judge.verifier.support_model

    def model_alone(r: dict[str, Any]) -> bool:  # the support model on the recorded reply, no veto
        f = statement_features(r["statement"], r["contexts"]).model_copy(
            update={**{k: r[k] for k in ("p_judge", "uncited", "missing_terms")}, "absent_terms": False})
        return model is not None and f.p_judge is not None and model.predict(f.model_dump()) >= model.cutoff

    def shipped(r: dict[str, Any]) -> bool:  # the shipped verdict on the recorded reply and today's features
        f = statement_features(r["statement"], r["contexts"]).model_copy(
            update={k: r[k] for k in ("p_judge", "uncited", "missing_terms")})
        return model is not None and verdict_of(f.model_dump(), model, None)

    supported = [r for r in records if r["label"] == "supported"]
    n_unsup = sum(r["label"] == "unsupported" for r in records)
    lines = [f"{len(records)} labelled statements ({len(supported)} supported), shipped support model "
             f"{judge.model} / {judge.metrics['faithfulness'].prompt_version}", "",
             "### 1. Terms no retrieved context holds, by kind, on the labelled statements", "",
             *precision_table(records, model_alone), "",
             "### 2. Planted errors, one per supported statement", "",
             "| kind | planted | called unsupported: rules alone | sampled | called unsupported: shipped verifier "
             "with the judge |", "|---|---|---|---|---|"]
    untouched_rules = sum(statement_features(r["statement"], r["contexts"]).vetoed for r in supported)
    for kind in PLANTS:
        cases = []
        for r in supported:
            rng = random.Random(f"{args.seed}/{kind}/{r['statement_id']}")
            planted = plant(kind, r["statement"], r["contexts"], rng)
            if planted and planted != r["statement"]:
                cases.append({**r, "planted": planted})
        vetoed = sum(statement_features(c["planted"], c["contexts"]).vetoed for c in cases)
        judged = "-"
        sampled = random.Random(f"{args.seed}/{kind}").sample(cases, min(args.sample, len(cases)))
        if not args.no_judge and sampled:
            verdicts = judged_planted(judge, llm, sampled, llm.settings.concurrency)
            decided = [v for v in verdicts if v is not None]
            judged = (share(sum(not v for v in decided), len(decided)) if decided else
                      f"not measured: every call failed ({len(verdicts)} tried; stderr says why)")
        lines.append(f"| {kind}: {ABOUT[kind]} | {len(cases)} | {share(vetoed, len(cases))} | {len(sampled)} | "
                     f"{judged} |")
        for c in sampled[:2]:
            print(f"  {kind}: {c['planted'][:140]!r}", file=sys.stderr)
    shipped_unsup = sum(not shipped(r) for r in supported)
    all_unsup = sum(not shipped(r) for r in records)
    lines += [f"| untouched supported statements (false alarms) | {len(supported)} | "
              f"{share(untouched_rules, len(supported))} | {len(supported)} (recorded replies) | "
              f"{share(shipped_unsup, len(supported))} |",
              f"| all labelled statements, untouched: readers find {share(n_unsup, len(records))} unsupported | "
              f"{len(records)} | | {len(records)} (recorded replies) | {share(all_unsup, len(records))} |"]
    command = "python benchmarks/planted_errors.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = "\n".join([f"    {command}", "", *lines]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
