"""`pip install .` (not editable) gives a `ragwatch` command that runs outside the checkout, with its ZenML
store in the project directory, never in site-packages.

The wheel is built from the checkout and installed into a fresh venv that reuses the dev venv's
dependencies (a `.pth` line, `pip install --no-deps`), so the test needs no network. Its `--quick` run
uses the tiny local model (run it under the model lock, as every local-model test).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.integration.conftest import write_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the ragwatch wheel installed (not editable); its bin/ directory."""
    work = tmp_path_factory.mktemp("installed")
    wheels = work / "wheels"
    # the build writes to the checkout's build/ (setuptools); a copy keeps the checkout untouched
    source = work / "source"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes((ROOT / name).read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHONPATH"))}
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
          str(source)], work, env)
    wheel = next(wheels.glob("ragwatch-*.whl"))
    target = work / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    site = Path(subprocess.run([str(target / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # the dev venv's packages
    _run([sys.executable, "-m", "pip", "--python", str(target / "bin" / "python"), "install", "--no-deps",
          "--no-build-isolation", "-q", str(wheel)], work, env)
    return target / "bin"


def _project_env(home: Path) -> dict[str, str]:
    """The environment of a user in `home`: none of the test session's store or state settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZENML_", "RAGWATCH_STATE_DIR", "RAGWATCH_HOME", "PYTEST_", "PYTHONPATH"))}
    return {**env, "HOME": os.environ.get("HOME", str(home))}


def test_the_wheel_holds_the_package_and_nothing_top_level(installed: Path, tmp_path: Path) -> None:
    code = "import ragwatch, pathlib; print(pathlib.Path(ragwatch.__file__).parents[1])"
    site = Path(_run([str(installed / "python"), "-c", code], tmp_path, _project_env(tmp_path)).stdout.strip())
    assert site.name == "site-packages" and (site / "ragwatch_zenml" / "cli.py").is_file()
    assert (site / "ragwatch" / "_bundled" / "configs" / "full.yaml").is_file()
    assert (site / "ragwatch" / "_bundled" / "data" / "sample" / "zenml_docs").is_dir()
    for old in ("run.py", "readback.py", "zenml_env.py", "steps", "pipelines", "orchestration"):
        assert not (site / old).exists(), f"{old} installed as a top-level name"


def test_ragwatch_help_and_the_bundled_default(installed: Path, tmp_path: Path) -> None:
    env = _project_env(tmp_path)
    done = _run([str(installed / "ragwatch"), "--help"], tmp_path, env, timeout=300)
    assert done.stdout.startswith("usage: ragwatch")
    # the bundled default's estimate: its configs and sample data come with the package, no LLM call
    done = _run([str(installed / "ragwatch"), "full", "--quick", "--estimate"], tmp_path, env, timeout=600)
    assert "calls" in done.stdout.lower()


def test_a_quick_run_keeps_its_store_in_the_project(installed: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    config = write_config(project, tiny_corpus, synthetic=False)
    env = _project_env(project)
    done = _run([str(installed / "ragwatch"), "full", "--quick", "--config", str(config)], project, env)
    assert "NOT APPLIED" in done.stdout, done.stdout[-2000:]
    assert (project / ".zenml_home" / "local_stores" / "default_zen_store" / "zenml.db").is_file()
    site = installed.parent / "lib"
    assert not list(site.rglob(".zenml_home")), "a ZenML store inside the venv"
    # a second command from a subdirectory finds the same store (the nearest .zenml_home above)
    sub = project / "sub"
    sub.mkdir()
    code = ("from ragwatch_zenml.env import configure_environment; configure_environment()\n"
            "import os; from ragwatch_zenml.readback import evaluation_runs\n"
            "print(os.environ['ZENML_CONFIG_PATH']); print(len(list(evaluation_runs())))")
    lines = _run([str(installed / "python"), "-c", code], sub, env, timeout=600).stdout.strip().splitlines()
    assert lines[-2] == str(project / ".zenml_home") and int(lines[-1]) >= 1
