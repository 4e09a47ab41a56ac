"""Refit the faithfulness calibration (`python -m ragwatch.judges.faithfulness.fit`), then measure its level.

The fit writes the labelled statements and their calibration into
`ragwatch/judges/faithfulness/calibration_data/`: the support model fitted on `--features` (S0-S2), the level
calibrated on `--level-features` (every labelled system under test, one reading of each statement text), the
printed agreement measured on `UNSEEN`, and `systems` the fingerprints of the systems under test whose configs
are in the repository (`SYSTEMS`, computed here from the configs as a run computes them). Then
`benchmarks/faithfulness_level.py` is run on the level's data (options this script does not know go to it, e.g.
`--repeats 3 --resamples 150`). The shipped files:

    python scripts/refit_faithfulness_calibration.py --no-benchmark \
        --features data/judge_dev/rag_statements/features.jsonl data/judge_dev/rag_statements/features_new.jsonl \
        --level-features data/judge_dev/rag_statements/features.jsonl \
            data/judge_dev/rag_statements/features_new.jsonl data/judge_dev/rag_statements/features_S3.jsonl \
            data/judge_dev/rag_statements/features_S4.jsonl data/judge_dev/rag_statements/features_S5.jsonl \
        --level-labels data/judge_dev/rag_statements/more_statements.jsonl
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from ragwatch.judges.faithfulness import fit

ROOT = Path(__file__).resolve().parents[1]
# the labelled systems under test and their configs (data/judge_dev/rag_statements/README.md)
SYSTEMS = {"S0": "configs/evaluate.yaml", "S1": "benchmarks/systems/top1.yaml",
           "S2": "benchmarks/systems/detailed.yaml", "S3": "benchmarks/systems/smollm.yaml",
           "S4": "benchmarks/systems/python_default.yaml", "S5": "benchmarks/systems/python_top1.yaml"}
UNSEEN = "S3,S4,S5"  # the systems under test outside the fit; the planted sets are measured apart (planted_errors.md)
UNSEEN_ABOUT = ("statements of RAG answers of three systems under test the verdict model was never fitted on, over "
                "two corpora (S3: a 135M generator on the ZenML docs sample; S4, S5: the Python 3.11 docs at top_k 3 "
                "and 1)")
LEVEL_ABOUT = ("answers of six systems over two corpora (the ZenML docs sample: S0-S3; the Python 3.11 docs: S4, S5) "
               "by Qwen2.5 0.5B (S0-S2, S4, S5) and SmolLM2 135M (S3) generators")


def config_fingerprint(path: Path) -> str:
    """`RagSystem.fingerprint()` of the built-in system a config describes, as a run over its freshly ingested
    corpus gets it: the index's fingerprint is its chunk ids' (the corpus chunked as ingest chunks it), so no
    index is built, no model is loaded and no store is read."""
    from ragwatch.config import FullConfig
    from ragwatch.config_loader import load_config
    from ragwatch.corpus.chunking import chunk_documents
    from ragwatch.corpus.documents import load_documents
    from ragwatch.evaluation import build_system
    from ragwatch.indexing.bm25 import BM25Settings
    from ragwatch.indexing.embeddings import get_embedder
    from ragwatch.indexing.index import fingerprint

    config = load_config(path, FullConfig)
    embedder = get_embedder(config.ingest.embedding)
    chunks = chunk_documents(load_documents(config.ingest.corpus.paths).documents, config.ingest.chunking,
                             embedder.count_tokens, max_window=embedder.max_input_tokens)
    index = SimpleNamespace(fingerprint=fingerprint([c.id for c in chunks], embedder.identity,
                                                    config.ingest.bm25 or BM25Settings()))
    rag, _ = build_system(config.evaluate.system, index, embedder)  # describe() reads only the index's fingerprint
    return rag.fingerprint()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-benchmark", action="store_true", help="only fit and write the calibration")
    parser.add_argument("--features", type=Path, nargs="+", required=True, help="feature rows (JSONL)")
    parser.add_argument("--labels", type=Path, nargs="*", default=[], help="label rows by statement_id (JSONL)")
    parser.add_argument("--level-features", type=Path, nargs="+", help="feature rows the level is calibrated on")
    parser.add_argument("--level-labels", type=Path, nargs="*", default=[], help="their label rows (JSONL)")
    parser.add_argument("--level-description", default=LEVEL_ABOUT, help="what the level's systems are")
    parser.add_argument("--unseen-description", default=UNSEEN_ABOUT,
                        help="what the level's systems outside --features are (the printed agreement is measured "
                             "there)")
    args, benchmark_args = parser.parse_known_args(argv)
    systems = [f"--system={code}={config_fingerprint(ROOT / path)}" for code, path in SYSTEMS.items()]
    fit_args = (["--features", *map(str, args.features)] + (["--labels", *map(str, args.labels)] if args.labels else [])
                + (["--level-features", *map(str, args.level_features)] if args.level_features else [])
                + (["--level-labels", *map(str, args.level_labels)] if args.level_labels else [])
                + ([f"--level-description={args.level_description}", f"--unseen-systems={UNSEEN}",
                    f"--unseen-description={args.unseen_description}"] if args.level_features else []) + systems)
    code = fit.main(fit_args)
    if code or args.no_benchmark:
        return code
    judge = fit.judge_of([r for p in args.features for r in fit.read_jsonl(p)])
    name = fit.data_name(*judge)
    data = fit.data_folder() / (fit.level_name(name) if args.level_features else name)
    return subprocess.call([sys.executable, str(ROOT / "benchmarks" / "faithfulness_level.py"), "--data", str(data),
                            *benchmark_args])


if __name__ == "__main__":
    raise SystemExit(main())
