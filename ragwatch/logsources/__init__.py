"""Log sources: a log of answers read into records, whatever wrote it (JSONL / CSV with named columns,
OpenInference spans, Langfuse traces, a Phoenix server), and the window of it that is evaluated.

- `settings`: `LogSettings` (where the log is, its format and columns), `PhoenixSource`, `parse_duration`;
- `records`: `LogRecord`, `BadRow`, `LogReadResult` (outcomes and counts);
- `tabular`, `openinference`, `langfuse`, `phoenix`: the readers (`traces`, `feedback_parse`: their shared
  parts); `read`: `read_log(settings)`, the one entry;
- `window`: `WindowSettings` (the one window model: length, at, budget, seed), `LogWindow`, `last_window`.

A source knows nothing of what is done with its records: the evaluation set a log makes is
`ragwatch.evalset.logged`, the monitor that compares its windows `ragwatch.monitoring`.
"""
