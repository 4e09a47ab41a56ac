"""Materializers: the index as files in the artifact store, and the run comparisons with a page.

The index is written to a local temporary directory with `Index.save` and copied file by file
through `fileio`, so it works on any artifact store (local, S3, GCS, ...).

The `comparisons` artifact (JSON, as every pydantic artifact) also carries its comparison page as a
visualization: in the dashboard, the run graph's `comparisons` node opens on the verdict line and
the tables vs the previous run and vs production.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Any, ClassVar

from zenml.enums import ArtifactType, VisualizationType
from zenml.io import fileio
from zenml.materializers.base_materializer import BaseMaterializer
from zenml.materializers.pydantic_materializer import PydanticMaterializer

from ragwatch.artifacts import RunComparisons
from ragwatch.indexing.index import Index
from ragwatch.report.comparison import build_comparison_page


class IndexMaterializer(BaseMaterializer):
    ASSOCIATED_TYPES: ClassVar[tuple[type[Any], ...]] = (Index,)
    ASSOCIATED_ARTIFACT_TYPE: ClassVar[ArtifactType] = ArtifactType.DATA

    def save(self, data: Index) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            data.save(tmp)
            for name in sorted(os.listdir(tmp)):
                fileio.copy(os.path.join(tmp, name), os.path.join(self.uri, name), overwrite=True)

    def load(self, data_type: type[Any]) -> Index:
        with tempfile.TemporaryDirectory() as tmp:
            for name in fileio.listdir(self.uri):
                name = str(name)
                fileio.copy(os.path.join(self.uri, name), os.path.join(tmp, name), overwrite=True)
            return Index.load(tmp)

    def compute_content_hash(self, data: Index) -> str | None:
        """The index's fingerprint (embedding model, BM25 settings, every chunk id: source, offset and
        text): ZenML keys step caches on it, so the index that `evaluate` loads is the same input as
        the one `full` built, and the first `evaluate` after `full` is served from the cache."""
        return hashlib.md5(f"{type(self).__name__}\n{data.fingerprint}".encode(), usedforsecurity=False).hexdigest()

    def extract_metadata(self, data: Index) -> dict[str, Any]:
        return {
            "chunks": len(data),
            "documents": len(data.documents()),
            "embedding_model": data.embedding_identity,
            "bm25_variant": data.bm25_variant,
            "dim": data.dim,
            "index_fingerprint": data.fingerprint,
        }


class RunComparisonsMaterializer(PydanticMaterializer):
    ASSOCIATED_TYPES: ClassVar[tuple[type[Any], ...]] = (RunComparisons,)

    def save_visualizations(self, data: RunComparisons) -> dict[str, VisualizationType]:
        runs = {"previous run": data.previous_run, "production": data.production_run}
        named = {f"{label} {runs[label]}" if runs.get(label) else label: cmp for label, cmp in data.named().items()}
        page = build_comparison_page(named, title="ragwatch: this run compared", gate=data.gate)
        path = os.path.join(self.uri, "comparison.html")
        with fileio.open(path, "w") as f:
            f.write(page)
        return {path: VisualizationType.HTML}
