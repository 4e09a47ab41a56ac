"""The wheel carries the bundled configs/ and data/sample/ as `ragwatch/_bundled/`, in the checkout's
layout, so the configs' relative paths (`../data/sample/...`) hold and `ragwatch` runs the embedded
default outside a checkout. Everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

BUNDLED = ("configs", "data/sample")  # the embedded default: its configs and the data they name


class BuildWithBundled(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install runs from the checkout, which has them
        for folder in BUNDLED:
            target = Path(self.build_lib) / "ragwatch" / "_bundled" / folder
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(Path(__file__).parent / folder, target)


setup(cmdclass={"build_py": BuildWithBundled})
