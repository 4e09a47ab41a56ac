"""From two runs to a decision: the metrics side by side with intervals and a verdict each (`compare`),
the thresholds a team sets (`thresholds`), and promote or not (`gate`: typed findings, `reasons`).
Saying them is `report` (`report.verdicts` words the gate's findings)."""
