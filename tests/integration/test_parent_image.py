"""The parent image (deploy/image/) built for real, then the ingest pipeline with every step in its own
container (ZenML's local Docker orchestrator on a temporary local store).

Opt-in: the build takes minutes, so it runs only with RAGWATCH_IMAGE_TESTS=1, and where a Docker daemon
answers `docker info`, debootstrap is installed, the user is root and scripts/setup_env.sh has built the
portable llama-cpp-python wheel; otherwise it is skipped with the reason. The offline checks of the
image's requirements are tests/unit/test_image_requirements.py.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name

from tests.integration.conftest import ROOT, write_config
from tests.unit.test_image_requirements import LOCKS, TOOLING

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OPT_IN = "RAGWATCH_IMAGE_TESTS"
BUILD_SCRIPT = ROOT / "deploy" / "image" / "build_parent_image.sh"
RUN_CONFIG = ROOT / "deploy" / "local_docker" / "zenml_run_config.yaml"
WHEEL_CACHE = Path(os.environ.get("RAGWATCH_WHEEL_CACHE")
                   or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragwatch" / "wheels")


def _why_not() -> str | None:
    """Why the image cannot be built here, or None."""
    if os.environ.get(OPT_IN) != "1":
        return f"builds the parent image (minutes of CPU): set {OPT_IN}=1 to include it"
    if not shutil.which("docker"):
        return "no docker client (apt-get install -y docker.io)"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 60 s"
    if info.returncode != 0:
        return f"no Docker daemon answers `docker info` (start dockerd): {info.stderr.strip()[-300:]}"
    if not shutil.which("debootstrap"):
        return "debootstrap is not installed (apt-get install -y debootstrap)"
    if os.geteuid() != 0:
        return "debootstrap needs root"
    if not glob.glob(str(WHEEL_CACHE / "llama_cpp_python-*.whl")):
        return f"no portable llama-cpp-python wheel in {WHEEL_CACHE}: run make env first"
    return None


@pytest.fixture(scope="module")
def parent_image() -> str:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    built = subprocess.run([str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=5400)
    assert built.returncode == 0, built.stderr[-4000:]
    return built.stdout.strip().splitlines()[-1]


# The product's code reaches a step through ZenML; here the checkout is mounted read-only instead.
# Installed versions are read before the imports: setuptools puts its vendored copies on sys.path.
INSIDE = """
import importlib.metadata as md, json, sys
installed = {}
for dist in md.distributions():
    installed.setdefault(dist.metadata["Name"], dist.version)
import llama_cpp, ragwatch.indexing.embeddings, ragwatch.llm.local, zenml
import ragwatch_zenml.pipelines.full, ragwatch_zenml.pipelines.monitor  # every step module, on the image's packages
print(json.dumps({"python": "%d.%d.%d" % sys.version_info[:3], "installed": installed}))
"""


@pytest.mark.timeout(5400)
def test_the_image_holds_the_runtime_lock_on_its_python(parent_image: str) -> None:
    # the source root, as a step container's entrypoint sets it: importing a pipeline asks ZenML for it
    ran = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{ROOT}:/src:ro", "-w", "/src",
                          "-e", "ZENML_CUSTOM_SOURCE_ROOT=/src", parent_image, "python", "-c", INSIDE],
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-4000:]
    found = json.loads(ran.stdout.strip().splitlines()[-1])
    assert found["python"] == LOCKS.IMAGE_PYTHON
    installed = {canonicalize_name(name): version for name, version in found["installed"].items()}
    wrong = {name: (version, installed.get(name))
             for name, (_, version) in LOCKS.read_pins(LOCKS.RUNTIME_LOCK).items() if installed.get(name) != version}
    assert not wrong, f"pin: (locked, in the image): {wrong}"
    assert not [name for name in installed if TOOLING.match(name)]


READ_BACK = """
import json
from zenml.client import Client
client = Client()
run = client.list_pipeline_runs(sort_by="desc:created", size=1).items[0]
components = client.active_stack_model.components.items()
print(json.dumps({"status": str(run.status), "steps": sorted(run.steps),
                  "orchestrator": [c.flavor_name for kind, found in components if str(kind) == "orchestrator"
                                   for c in found],
                  "images": sorted(image.image for image in run.build.images.values()) if run.build else []}))
"""


@pytest.mark.timeout(5400)
def test_ingest_runs_with_every_step_in_a_container(parent_image: str, tiny_corpus: Path, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ZENML_", "PYTEST_"))}
    env.update({"ZENML_CONFIG_PATH": str(tmp_path / "zenml"), "RAGWATCH_STATE_DIR": str(tmp_path / "state"),
                "RAGWATCH_CACHE_DIR": str(tmp_path / "cache")})
    zenml = [str(Path(sys.executable).parent / "zenml")]
    for command in (["orchestrator", "register", "in-docker", "--flavor", "local_docker"],
                    ["image-builder", "register", "docker-here", "--flavor", "local"],
                    ["stack", "register", "in-docker", "-o", "in-docker", "-a", "default", "-i", "docker-here",
                     "--set"]):
        done = subprocess.run(zenml + command, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert done.returncode == 0, done.stdout + done.stderr

    run_config = yaml.safe_load(RUN_CONFIG.read_text(encoding="utf-8"))
    run_config["settings"]["docker"]["parent_image"] = parent_image
    # The corpus is a host path: the steps see it at the same path, read-only.
    run_config["settings"]["orchestrator"]["run_args"]["volumes"] = {
        str(tiny_corpus): {"bind": str(tiny_corpus), "mode": "ro"}}
    (tmp_path / "zenml_run_config.yaml").write_text(yaml.safe_dump(run_config), encoding="utf-8")
    config = write_config(tmp_path / "cfg", tiny_corpus, synthetic=False)

    ingest = subprocess.run([sys.executable, "run.py", "ingest", "--config", str(config), "--zenml-config",
                             str(tmp_path / "zenml_run_config.yaml")],
                            env=env, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    assert ingest.returncode == 0, (ingest.stdout + ingest.stderr)[-4000:]
    read = subprocess.run([sys.executable, "-c", READ_BACK], env=env, capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    assert read.returncode == 0, read.stderr[-4000:]
    found = json.loads(read.stdout.strip().splitlines()[-1])
    assert found["orchestrator"] == ["local_docker"] and found["status"] == "completed", found
    assert found["steps"] == ["build_index", "chunk_corpus", "claim_index", "load_corpus"]
    assert found["images"], "the run has no image build: its steps did not run in containers"
