# The two commands of the README. Each sets up the environment it needs first.
.PHONY: run test lint env

env:
	@bash scripts/setup_env.sh

run: env
	.venv/bin/python run.py

test: env
	.venv/bin/python -m pytest

lint: env
	.venv/bin/ruff check .
