#!/usr/bin/env bash
# A team's ZenML stack on 127.0.0.1: MariaDB, a ZenML server backed by it, an S3 API (moto).
#   scripts/team_stack.sh install | up | env [--ci] [--docker] | status | down [--purge]
# The work is done by scripts/team_stack.py (its docstring says more).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${RAGWATCH_VENV:-$ROOT/.venv}/bin/python"
[[ -x "$PYTHON" ]] || { echo "team_stack: $PYTHON is missing; run scripts/setup_env.sh (make env) first" >&2; exit 2; }
exec "$PYTHON" "$ROOT/scripts/team_stack.py" "$@"
