"""Write data/sample/eval/zenml_qa_sample.jsonl: the ZenML question set's rows whose page is in the sample corpus.

The bundled corpus is a 50-page slice of the ZenML 0.60.0 docs; most of the 166 labelled questions
ask about pages outside it and could only fail retrieval. The rows kept are unchanged (same fields,
same order); the page match is ragwatch's own (the URL rewrites of configs/evaluate.yaml).

Usage:
    .venv/bin/python scripts/make_sample_evalset.py          # rewrites the file, prints the count
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.config import FullConfig  # noqa: E402
from ragwatch.config_loader import load_config  # noqa: E402
from ragwatch.corpus.documents import load_documents  # noqa: E402
from ragwatch.evalset.imported import ZENML_QA_PATH, load_zenml_qa  # noqa: E402
from ragwatch.retrieval import unmatched_labels  # noqa: E402

OUT = ROOT / "data" / "sample" / "eval" / "zenml_qa_sample.jsonl"


def main() -> int:
    config = load_config(ROOT / "configs" / "evaluate.yaml", FullConfig)
    sources = [d.source for d in load_documents(config.ingest.corpus.paths).documents]
    samples = load_zenml_qa()
    broken = unmatched_labels(samples, sources, config.evaluate.retrieval.match)
    keep = {s.id for s in samples if s.id not in broken}
    lines = [line for line in ZENML_QA_PATH.read_text(encoding="utf-8").splitlines()
             if line.strip() and f"zenml-qa-{json.loads(line)['id']}" in keep]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} of {len(samples)} questions have their page in the sample corpus -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
