"""Simulated worlds with a known truth, where the product's intervals and plans are measured.

Each module draws populations whose true mean is known and runs the product's own code on them, so a
benchmark (`python -m benchmarks <name>`) and the unit tests measure coverage and width the same way:
`intervals` (every kind of score the intervals meet), `active_labels` (active against uniform
labelling), `label_plan` (the budget planner's promise) and `feedback` (the monitor's level from user
feedback). Nothing here is imported by a run.
"""
