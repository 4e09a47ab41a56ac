#!/usr/bin/env bash
# Builds ragwatch's parent image without Docker Hub: a Debian bookworm root file system from
# debootstrap (imported once as ragwatch-rootfs:bookworm), then deploy/image/Dockerfile adds Python
# 3.11.2, the runtime lock (requirements/runtime-lock.txt; the dev lock's test and docs tooling stays
# out), the portable llama.cpp wheel and the packaged models.
#
#   deploy/image/build_parent_image.sh              # -> ragwatch-parent:<hash> and ragwatch-parent:latest
#   deploy/image/build_parent_image.sh --push REG   # also tag and push REG/ragwatch-parent:<hash> (a cluster)
#
# Needs: root, docker (a running daemon), debootstrap, and the wheel that scripts/setup_env.sh builds.
# Prints the image name on its last line. The tag is a hash of everything that goes into the image,
# so an unchanged recipe is not rebuilt.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/deploy/image"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ROOTFS_IMAGE="ragwatch-rootfs:bookworm"
NAME="${RAGWATCH_IMAGE_NAME:-ragwatch-parent}"
WHEEL_CACHE="${RAGWATCH_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ragwatch/wheels}"
WORK="$ROOT/.ragwatch/image"
push=""
if [[ "${1:-}" == "--push" ]]; then
  push="${2:?--push needs a registry, e.g. registry.example.com/ragwatch}"
fi

for tool in docker debootstrap; do
  command -v "$tool" >/dev/null || { echo "build_parent_image: $tool is missing (apt-get install -y docker.io debootstrap)" >&2; exit 2; }
done
docker info >/dev/null 2>&1 || { echo "build_parent_image: no Docker daemon answers (start dockerd)" >&2; exit 2; }
wheel="$(ls "$WHEEL_CACHE"/llama_cpp_python-*.whl 2>/dev/null | head -n1 || true)"
[[ -n "$wheel" ]] || { echo "build_parent_image: no portable llama-cpp-python wheel in $WHEEL_CACHE; run scripts/setup_env.sh (make env) first" >&2; exit 2; }

started=$SECONDS
if ! docker image inspect "$ROOTFS_IMAGE" >/dev/null 2>&1; then
  echo "build_parent_image: debootstrap bookworm from $MIRROR (about a minute)" >&2
  rm -rf "$WORK/rootfs" && mkdir -p "$WORK"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  tar -C "$WORK/rootfs" -c . | docker import - "$ROOTFS_IMAGE" >/dev/null
  rm -rf "$WORK/rootfs"
  echo "build_parent_image: $ROOTFS_IMAGE imported after $((SECONDS - started)) s" >&2
fi

# The build context: only what the image needs (the recipe, the pins, the CA bundle, the wheel,
# and ragwatch/ for joining the models).
context="$WORK/context"
rm -rf "$context" && mkdir -p "$context/requirements" "$context/wheels"
cp "$HERE/Dockerfile" "$HERE/join_models.py" "$context/"
cp "$ROOT/requirements/runtime-lock.txt" "$ROOT/requirements/models.txt" "$context/requirements/"
cp /etc/ssl/certs/ca-certificates.crt "$context/"
cp "$wheel" "$context/wheels/"
cp -r "$ROOT/ragwatch" "$context/ragwatch"
find "$context/ragwatch" -name __pycache__ -prune -exec rm -rf {} +

# The models' registry, their cache's place and their names decide what the join writes into the image.
tag="$(cat "$HERE/Dockerfile" "$HERE/join_models.py" "$ROOT/requirements/runtime-lock.txt" "$ROOT/requirements/models.txt" \
        "$ROOT/ragwatch/llm/local/registry.py" "$ROOT/ragwatch/llm/cache.py" "$ROOT/ragwatch/llm/models.py" \
        <(basename "$wheel") | sha256sum | cut -c1-12)"
image="$NAME:$tag"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "build_parent_image: $image is up to date" >&2
else
  echo "build_parent_image: building $image (pip installs the runtime lock: several minutes)" >&2
  # --network host: the build reaches the package registries the way the host does.
  docker build --network host -t "$image" "$context" >"$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log" >&2; exit 1; }
  echo "build_parent_image: built $image after $((SECONDS - started)) s" >&2
fi
docker tag "$image" "$NAME:latest"
if [[ -n "$push" ]]; then
  docker tag "$image" "$push/$image"
  docker push "$push/$image" >&2
  image="$push/$image"
fi
echo "$image"
