"""Ship labelled statements with their judge features as the faithfulness level's calibration data, then measure.

Reads feature rows (`benchmarks/statement_features.py` output: statement_id, item_id, system, label,
p_judge, lexical, no_claim, uncited, missing_terms, absent_terms, judge_model, prompt_version, ...) and,
optionally, label files that fill or override their labels by `statement_id`. Rows without a reference
label (the readers disagreed) or whose verification failed are left out and counted. Every row must come
from one judge model and prompt version; the rows are written to
`ragwatch/judges/faithfulness/calibration_data/<judge_model>__<prompt_version>.jsonl` (the file
`ragwatch/judges/faithfulness/calibrations.py` names as that calibration's `level_data`), its provenance to
`calibration_data/README.md`, and `benchmarks/faithfulness_level.py` is run on it.

    python scripts/refit_faithfulness_calibration.py \
        --features data/judge_dev/rag_statements/features.jsonl data/judge_dev/rag_statements/features_new.jsonl

Any number of feature files and systems (the rows' `system`); options it does not know go to the
benchmark (`--repeats 3 --resamples 150` for a quick run).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ragwatch.statements import StatementFeatures  # noqa: E402

DATA_DIR = ROOT / "ragwatch" / "judges" / "faithfulness" / "calibration_data"
# the record's identity and label, then every field of the statement-features record (one definition)
KEEP = ("statement_id", "answer_id", "system", "statement_index", "label", *StatementFeatures.model_fields)
LABELS = {"supported": True, "unsupported": False, True: True, False: False}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        sys.exit(f"{path}: not found")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def statement_key(row: dict[str, Any]) -> str:
    """`statement_id` when given, else `<system>/<item_id>#<statement_index>` (as statement_features.py)."""
    if row.get("statement_id"):
        return str(row["statement_id"])
    prefix = f"{row['system']}/" if row.get("system") else ""
    return f"{prefix}{row['item_id']}#{row['statement_index']}"


def merge(features: list[dict[str, Any]], labels: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Counter]:
    """Feature rows with their labels (a label file's label wins), as the shipped records; what was dropped."""
    given = {statement_key(r): r.get("label") for r in labels}
    dropped: Counter = Counter()
    out = []
    for row in features:
        key = statement_key(row)
        label = given.get(key, row.get("label"))
        if label not in LABELS:
            dropped["no reference label (readers disagreed or unlabelled)"] += 1
            continue
        if row.get("error") or row.get("verdict") is None:
            dropped["verification failed"] += 1
            continue
        system = row.get("system") or "default"
        out.append({k: v for k, v in {**row, "statement_id": key, "system": system, "label": LABELS[label],
                                       "answer_id": f"{system}/{row['item_id']}"}.items() if k in KEEP})
    return out, dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", type=Path, nargs="+", required=True, help="feature rows (JSONL)")
    parser.add_argument("--labels", type=Path, nargs="*", default=[], help="label rows by statement_id (JSONL)")
    parser.add_argument("--no-benchmark", action="store_true", help="only write the data")
    # any other option goes to benchmarks/faithfulness_level.py (e.g. --repeats 3 --resamples 150 on a busy machine)
    args, benchmark_args = parser.parse_known_args(argv)
    features = [r for p in args.features for r in read_jsonl(p)]
    labels = [r for p in args.labels for r in read_jsonl(p)]
    judges = Counter((str(r.get("judge_model")), str(r.get("prompt_version")),
                      str(r.get("features_version") or "features-v1")) for r in features)
    if len(judges) != 1:
        sys.exit(f"the feature rows come from {len(judges)} judge model / prompt / features versions {dict(judges)}: "
                 "one calibration is one of each; pass the rows of one (benchmarks/statement_features.py --refresh "
                 "brings older rows to this version's features)")
    ((model, prompt, features_version),) = judges
    records, dropped = merge(features, labels)
    # features-v1 data kept its old name, so a calibration stored with it still loads
    name = f"{model}__{prompt}.jsonl" if features_version == "features-v1" else \
        f"{model}__{prompt}__{features_version}.jsonl"
    (DATA_DIR / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    per_system = Counter(r["system"] for r in records)
    supported = Counter(r["system"] for r in records if r["label"])
    answers = {s: len({r["answer_id"] for r in records if r["system"] == s}) for s in per_system}
    provenance = (
        f"## {name}\n\nWritten {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by "
        "`python scripts/refit_faithfulness_calibration.py "
        f"--features {' '.join(p.name for p in args.features)}"
        + (f" --labels {' '.join(p.name for p in args.labels)}" if args.labels else "") + "`.\n"
        f"{len(records)} statements with reference labels (two careful readings, LABELLING.md), judged by "
        f"{model} with prompt {prompt}, statement features {features_version}:\n\n"
        + "".join(f"- {s}: {n} statements of {answers[s]} answers, {supported[s] / n:.0%} supported\n"
                  for s, n in sorted(per_system.items()))
        + "".join(f"- left out: {n} ({why})\n" for why, n in dropped.items()) + "\n")
    readme = DATA_DIR / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    head, _, rest = text.partition(f"## {name}\n")
    rest = rest[rest.find("\n## ") + 1:] if "\n## " in rest else ""
    readme.write_text(head.rstrip() + "\n\n" + provenance + rest, encoding="utf-8")
    print(f"wrote {len(records)} statements to {DATA_DIR / name} ({dict(per_system)}); left out {dict(dropped)}")

    from ragwatch.judges.faithfulness.calibrations import faithfulness_calibration

    calibration = faithfulness_calibration(model, prompt, features_version)
    if calibration is None or calibration.level_data != name:
        print(f"note: ragwatch/judges/faithfulness/calibrations.py does not name {name} "
              f"as the level_data of {model} / {prompt} / {features_version}")
    if not args.no_benchmark:
        from faithfulness_level import main as benchmark

        return benchmark(["--data", str(DATA_DIR / name), *benchmark_args])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
