"""Monitoring: windows of a log evaluated as they were answered and compared for drift.

- `settings`: `MonitorConfig` and its blocks (`MonitorWindow`, `DriftSettings`, `AnchorSettings`,
  `FeedbackSettings`); `windows`: `select_windows` (current, previous, reference), `by_version`;
- `evaluate`: `evaluate_logged` (the system-as-run metrics and the judges, no generator call);
- `drift` (`compare_windows`, unpaired; `window_verdict`, the one reading of a comparison), `drift_size`;
- `anchor`, `judge_drift`: judge drift told from system drift on a labelled anchor;
- `feedback`: user feedback as labels of the metric it means, or reported beside;
- `monitor`: one run (`evaluate_window`, `monitor_report`); `report`: its text and page;
  `phoenix_annotate`: its verdicts written back to Phoenix; `estimate`: its cost before it runs.

Reads its logs through `ragwatch.logsources` and turns records into samples with `ragwatch.evalset.logged`.
"""
