"""Refit the faithfulness calibration (`python -m ragwatch.judges.faithfulness.fit`), then measure its level.

The fit writes the labelled statements and their calibration into
`ragwatch/judges/faithfulness/calibration_data/`; then `benchmarks/faithfulness_level.py` is run on that data
(options this script does not know go to it, e.g. `--repeats 3 --resamples 150`).

    python scripts/refit_faithfulness_calibration.py \
        --features data/judge_dev/rag_statements/features.jsonl data/judge_dev/rag_statements/features_new.jsonl
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ragwatch.judges.faithfulness import fit

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-benchmark", action="store_true", help="only fit and write the calibration")
    parser.add_argument("--features", type=Path, nargs="+", required=True, help="feature rows (JSONL)")
    parser.add_argument("--labels", type=Path, nargs="*", default=[], help="label rows by statement_id (JSONL)")
    args, benchmark_args = parser.parse_known_args(argv)
    fit_args = ["--features", *map(str, args.features)] + (["--labels", *map(str, args.labels)] if args.labels else [])
    code = fit.main(fit_args)
    if code or args.no_benchmark:
        return code
    judge = fit.judge_of([r for p in args.features for r in fit.read_jsonl(p)])
    data = fit.data_folder() / fit.data_name(*judge)
    return subprocess.call([sys.executable, str(ROOT / "benchmarks" / "faithfulness_level.py"), "--data", str(data),
                            *benchmark_args])


if __name__ == "__main__":
    raise SystemExit(main())
