"""Materializers of the monitor's artifacts: a window keyed on its content (so a window evaluated by
yesterday's run as "current" is served from the step cache today as "previous"), and the monitor
report with its page as the dashboard's HTML visualization."""

from __future__ import annotations

import hashlib
import os
from typing import Any, ClassVar

from zenml.enums import VisualizationType
from zenml.io import fileio
from zenml.materializers.pydantic_materializer import PydanticMaterializer

from ragwatch.logsources.window import LogWindow
from ragwatch.monitoring.monitor import MonitorReport
from ragwatch.monitoring.report import report_html


class LogWindowMaterializer(PydanticMaterializer):
    ASSOCIATED_TYPES: ClassVar[tuple[type[Any], ...]] = (LogWindow,)

    def compute_content_hash(self, data: LogWindow) -> str | None:
        # the label ("current", "previous") is where the window stands today, not what it holds
        content = data.model_dump_json(exclude={"label"})
        return hashlib.md5(f"{type(self).__name__}\n{content}".encode(), usedforsecurity=False).hexdigest()

    def extract_metadata(self, data: LogWindow) -> dict[str, Any]:
        return {"window": data.name, "answers_sampled": len(data.records), "answers_logged": data.n_population}


class MonitorReportMaterializer(PydanticMaterializer):
    ASSOCIATED_TYPES: ClassVar[tuple[type[Any], ...]] = (MonitorReport,)

    def save_visualizations(self, data: MonitorReport) -> dict[str, VisualizationType]:
        path = os.path.join(self.uri, "monitor.html")
        with fileio.open(path, "w") as f:
            f.write(report_html(data))
        return {path: VisualizationType.HTML}
