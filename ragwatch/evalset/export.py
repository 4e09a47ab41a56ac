"""An evaluation set written out and described: its fingerprint, its figures, JSONL, a Hugging Face
dataset, and a layout for human review. `ragwatch.evalset.imported` reads the first two back.

Example:
    >>> export_jsonl(samples, "eval.jsonl"); export_review_jsonl(samples, "review.jsonl")  # doctest: +SKIP
    >>> describe_samples(samples)["fingerprint"]                                            # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragwatch.types import EvalSample


def samples_fingerprint(samples: Sequence[EvalSample]) -> str:
    """A content hash of a set: two sets with the same fingerprint hold the same samples, in order."""
    payload = json.dumps([s.model_dump(mode="json") for s in samples], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def describe_samples(samples: Sequence[EvalSample]) -> dict[str, Any]:
    """Flat figures of an evaluation set for artifact metadata: size, kinds, relevance, fingerprint."""
    return {
        "size": len(samples),
        "kinds": dict(sorted(Counter(s.kind for s in samples).items())),
        "relevance_kinds": dict(sorted(Counter(r.kind for s in samples for r in s.relevant).items())),
        "without_relevance": sum(1 for s in samples if not s.relevant),
        "with_reference_answer": sum(1 for s in samples if s.reference_answer),
        "fingerprint": samples_fingerprint(samples),
    }


def _sample_row(sample: EvalSample) -> dict[str, Any]:
    return sample.model_dump(mode="json")


def export_jsonl(samples: Sequence[EvalSample], path: str | Path) -> Path:
    """One `EvalSample` per line; `import_dataset(ImportSettings(format="jsonl", path=...))` reads it back."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for sample in samples:
            f.write(json.dumps(_sample_row(sample), ensure_ascii=False) + "\n")
    return out


def to_hf_dataset(samples: Sequence[EvalSample]) -> Any:
    """A Hugging Face `datasets.Dataset` with fixed features; metadata is a JSON string column
    (its keys vary between rows, which Arrow cannot hold as a struct)."""
    import datasets

    features = datasets.Features({
        "id": datasets.Value("string"),
        "question": datasets.Value("string"),
        "reference_answer": datasets.Value("string"),
        "reference_contexts": datasets.List(datasets.Value("string")),
        "relevant": datasets.List({"kind": datasets.Value("string"), "value": datasets.Value("string"),
                                   "grade": datasets.Value("float64")}),
        "kind": datasets.Value("string"),
        "metadata": datasets.Value("string"),
    })
    rows = []
    for sample in samples:
        row = _sample_row(sample)
        row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False, sort_keys=True)
        rows.append(row)
    return datasets.Dataset.from_list(rows, features=features)


def export_hf_dataset(samples: Sequence[EvalSample], path: str | Path) -> Path:
    """Save as a Hugging Face dataset directory; `format="hf_disk"` reads it back."""
    out = Path(path)
    to_hf_dataset(samples).save_to_disk(str(out))
    return out


def export_review_jsonl(samples: Sequence[EvalSample], path: str | Path) -> Path:
    """A layout for human review in an annotation tool: one row per question with empty
    `verdict` (null) and `comment` fields for the reviewer."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for s in samples:
            row = {
                "id": s.id, "question": s.question, "answer": s.reference_answer,
                "contexts": s.reference_contexts, "kind": s.kind,
                "relevant": [f"{r.kind}:{r.value}" for r in s.relevant if r.kind != "text"],
                "verdict": None, "comment": "",
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out
