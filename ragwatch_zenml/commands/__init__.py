"""ZenML-side orchestration behind run.py: running, scheduling, watching, comparing."""
