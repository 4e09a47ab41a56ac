"""One pipeline per file; each reads as its DAG and holds no logic."""
