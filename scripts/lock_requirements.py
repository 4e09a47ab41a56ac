"""Write requirements/runtime-lock.txt and requirements/dev-lock.txt from the installed distributions.

The runtime lock is the resolved closure of requirements/base.txt: what ragwatch needs to run, and all
that the parent image (deploy/image/) installs. The dev lock is the rest of requirements/dev.txt's
closure (tests, lint, the docs site). The closure follows each installed distribution's Requires-Dist,
markers evaluated for this interpreter (Linux, Python 3.11) with the extras asked for, and pins every
package at its installed version. An installed version outside a requirement's specifier is an error:
the environment is stale, so the lock would be too.

Usage, after changing base.txt or dev.txt:
    .venv/bin/python -m pip install -r requirements/base.txt -r requirements/dev.txt
    .venv/bin/python scripts/lock_requirements.py            # rewrites both locks
    .venv/bin/python scripts/lock_requirements.py --check    # exit 1 when either lock is stale

Either way it exits 1 when a runtime pin's Requires-Python excludes the image's Python.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
RUNTIME_LOCK = REQUIREMENTS / "runtime-lock.txt"
DEV_LOCK = REQUIREMENTS / "dev-lock.txt"
# The interpreter of the parent image: Debian bookworm's python3 (deploy/image/Dockerfile).
IMAGE_PYTHON = "3.11.2"

REGENERATE = ("#   .venv/bin/python -m pip install -r requirements/base.txt -r requirements/dev.txt\n"
              "#   .venv/bin/python scripts/lock_requirements.py\n")
RUNTIME_HEADER = ("# The resolved closure of requirements/base.txt: what ragwatch needs at run time and all that the\n"
                  f"# parent image (deploy/image/, Python {IMAGE_PYTHON}) installs. Generated, not edited; after "
                  "changing base.txt:\n" + REGENERATE)
DEV_HEADER = ("# requirements/dev.txt's closure less the runtime lock: tests, lint and the docs site, installed by\n"
              "# scripts/setup_env.sh on top of runtime-lock.txt, never in the image. Generated, not edited; after\n"
              "# changing dev.txt:\n" + REGENERATE)


class LockError(RuntimeError):
    """The environment cannot produce a lock (a package missing, or installed at another version)."""


def read_requirements(path: Path) -> list[Requirement]:
    """The requirements of a pip requirements file (comments and blank lines skipped)."""
    requirements = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if text.startswith("-"):
            raise LockError(f"{path.name}:{number}: pip options ({text}) are not supported in a lock's input")
        requirements.append(Requirement(text))
    return requirements


def read_pins(path: Path) -> dict[str, tuple[str, str]]:
    """A lock file as {canonical name: (name as written, version)}; every line must be `name==version`."""
    pins = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        name, sep, version = text.partition("==")
        if not sep or not version:
            raise LockError(f"{path.name}:{number}: {text!r} is not an exact pin (name==version)")
        pins[canonicalize_name(name)] = (name.strip(), version.strip())
    return pins


def closure(requirements: list[Requirement]) -> dict[str, metadata.Distribution]:
    """Every installed distribution the requirements reach, by canonical name."""
    reached: dict[str, metadata.Distribution] = {}
    extras_seen: dict[str, set[str]] = {}
    pending = [(requirement, "requirements file") for requirement in requirements]
    while pending:
        requirement, wanted_by = pending.pop()
        name = canonicalize_name(requirement.name)
        try:
            distribution = reached.get(name) or metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            raise LockError(f"{requirement.name} (wanted by {wanted_by}) is not installed: install "
                            "requirements/base.txt and dev.txt into this environment first") from None
        version = distribution.version
        if not requirement.specifier.contains(version, prereleases=True):
            raise LockError(f"{requirement.name} {version} is installed but {wanted_by} asks for "
                            f"{requirement}: install requirements/base.txt and dev.txt again first")
        extras = set(requirement.extras)
        if name in reached and extras <= extras_seen[name]:
            continue
        reached[name] = distribution
        extras_seen[name] = extras_seen.get(name, set()) | extras
        for line in distribution.requires or []:
            dependency = Requirement(line)
            marker = dependency.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in extras_seen[name] | {""}):
                pending.append((dependency, f"{distribution.metadata['Name']} {version}"))
    return reached


def pin_lines(distributions: dict[str, metadata.Distribution]) -> list[str]:
    """`Name==version` lines sorted as pip freeze sorts them."""
    pins = [f"{dist.metadata['Name']}=={dist.version}" for dist in distributions.values()]
    return sorted(pins, key=str.lower)


def python_problems(pins: dict[str, tuple[str, str]], python: str = IMAGE_PYTHON) -> list[str]:
    """What stops `pip install` of these pins on `python`, read from the installed distributions'
    Requires-Python: one line per pin that is not installed at its version or whose specifier excludes it."""
    problems = []
    for name, version in pins.values():
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name}=={version}: not installed here, so its Requires-Python is unknown (make env)")
            continue
        if distribution.version != version:
            problems.append(f"{name}=={version}: {distribution.version} is installed here (make env)")
            continue
        requires = distribution.metadata.get("Requires-Python")
        if requires and not SpecifierSet(requires).contains(python, prereleases=True):
            problems.append(f"{name}=={version}: Requires-Python {requires} excludes Python {python}")
    return problems


def render_locks() -> tuple[str, str]:
    """The runtime and the dev lock's text for this environment."""
    runtime = closure(read_requirements(REQUIREMENTS / "base.txt"))
    dev = closure(read_requirements(REQUIREMENTS / "dev.txt"))
    dev_only = {name: dist for name, dist in dev.items() if name not in runtime}
    return (RUNTIME_HEADER + "\n".join(pin_lines(runtime)) + "\n",
            DEV_HEADER + "\n".join(pin_lines(dev_only)) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed lock differs")
    args = parser.parse_args(argv)
    try:
        texts = render_locks()
    except LockError as error:
        print(f"lock_requirements: {error}", file=sys.stderr)
        return 2
    stale = []
    for path, text in zip((RUNTIME_LOCK, DEV_LOCK), texts, strict=True):
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.relative_to(ROOT).as_posix())
        else:
            path.write_text(text, encoding="utf-8")
    # A pin the image's Python cannot install is a lock the image cannot build from: say so either way.
    problems = python_problems(read_pins(RUNTIME_LOCK))
    for problem in problems:
        print(f"lock_requirements: {problem} (the parent image cannot install it)", file=sys.stderr)
    if stale:
        print(f"lock_requirements: {', '.join(stale)} differ from this environment's closure of base.txt and "
              "dev.txt: run .venv/bin/python scripts/lock_requirements.py (after installing both)", file=sys.stderr)
    return 1 if stale or problems else 0

if __name__ == "__main__":
    sys.exit(main())
