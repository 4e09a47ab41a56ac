"""Logged answers as an evaluation input: read a log (JSONL / CSV with named columns, OpenInference
spans, Langfuse traces), window and sample it, evaluate it as it was answered (no call to any system),
and compare windows for drift.

- `records`: `LogRecord`, `BadRow`, `LogReadResult` (outcomes and counts);
- `tabular`, `openinference`, `langfuse`: the readers; `read`: `read_log(settings)`;
- `settings`: `MonitorConfig` and its blocks; `window`: `select_windows`, `LogWindow`;
- `evaluate`: `log_samples`, `evaluate_logged` (through `ragwatch.rag.logged.LoggedRAG`);
- `drift`: `compare_windows` (unpaired; drift / no drift / undecided);
- `feedback`: user feedback as labels of the metric it means, or reported beside.
"""
