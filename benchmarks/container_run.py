"""Steps in containers on the team stack: build the parent image, then run ingest and evaluate with
ZenML's local Docker orchestrator, and print how long each took.

    scripts/team_stack.sh up                  # the server, MariaDB and S3 on 127.0.0.1
    python run.py full                        # once, against the team stack: evaluate needs an eval set
    python -m benchmarks container_run [--pipelines ingest evaluate] [--no-cache] [--quick]
    python -m benchmarks container_run --pipelines ingest testset evaluate   # a fresh stack, no run.py full

Each step runs in its own container (host network: the server and the S3 API are on the host's
127.0.0.1); the code reaches the container as an archive in the S3 artifact store. The corpus is a
path on the host, so data/ and configs/ are mounted read-only at the same paths (on a cluster it must be in the image or
reachable from the pod). Needs root, a running Docker daemon, debootstrap, and the team stack up.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = ROOT / "deploy" / "image" / "build_parent_image.sh"
RUN_CONFIG = ROOT / "deploy" / "local_docker" / "zenml_run_config.yaml"


def build_image() -> tuple[str, float]:
    """Build (or reuse) the parent image; its name and the seconds it took."""
    started = time.perf_counter()
    result = subprocess.run([str(BUILD_SCRIPT)], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"container_run: the parent image did not build:\n{result.stderr[-3000:]}")
    return result.stdout.strip().splitlines()[-1], time.perf_counter() - started


def run_config(image: str, directory: Path) -> Path:
    """The checked-in run configuration with the exact image and the corpus mounted read-only."""
    config = yaml.safe_load(RUN_CONFIG.read_text())
    config["settings"]["docker"]["parent_image"] = image
    # Corpus paths are resolved against the config file's folder (configs/../data/...): both must exist.
    config["settings"]["orchestrator"]["run_args"]["volumes"] = {
        str(ROOT / name): {"bind": str(ROOT / name), "mode": "ro"} for name in ("data", "configs")
    }
    path = directory / "zenml_run_config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def docker_client_env() -> dict[str, str]:
    """This process's environment pointed at the team stack's Docker stack."""
    result = subprocess.run([str(ROOT / "scripts" / "team_stack.sh"), "env", "--docker"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"container_run: {result.stderr.strip()}")
    exported = dict(line.removeprefix("export ").split("=", 1) for line in result.stdout.splitlines())
    return {**os.environ, **exported}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", nargs="+", default=["ingest", "evaluate"],
                        choices=["ingest", "testset", "evaluate", "full"])
    parser.add_argument("--no-cache", action="store_true",
                        help="re-run every step (otherwise cached steps do not start a container)")
    parser.add_argument("--quick", action="store_true",
                        help="evaluate and full take a quick look (about a dozen items; docs/quick-look.md)")
    args = parser.parse_args(argv)
    image, build_s = build_image()
    print(f"parent image {image}: {build_s:.0f} s (0 s means it was already built)", flush=True)
    env = docker_client_env()
    figures = []
    with tempfile.TemporaryDirectory(prefix="ragwatch-container-") as directory:
        config = run_config(image, Path(directory))
        for pipeline in args.pipelines:
            started = time.perf_counter()
            command = [sys.executable, "run.py", pipeline, "--zenml-config", str(config)]
            command += ["--no-cache"] if args.no_cache else []
            command += ["--quick"] if args.quick and pipeline in ("evaluate", "full") else []
            result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - started
            print(result.stdout[-2500:], flush=True)
            if result.returncode not in (0, 1):
                print(result.stderr[-4000:], file=sys.stderr)
                sys.exit(f"container_run: {pipeline} failed (exit {result.returncode}) after {seconds:.0f} s")
            figures.append((pipeline, seconds))
    print(f"\n{'what':<28} {'seconds':>8}")
    print(f"{'parent image build':<28} {build_s:>8.0f}")
    for pipeline, seconds in figures:
        print(f"{pipeline + ' (steps in containers)':<28} {seconds:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
