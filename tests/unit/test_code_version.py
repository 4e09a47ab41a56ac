"""The judge step's cache key holds `code_version()`: it must move with code and data, not with caches."""

from __future__ import annotations

import shutil
from pathlib import Path

from ragwatch.code_version import code_version

PACKAGE = Path(__file__).resolve().parents[2] / "ragwatch" / "judges" / "faithfulness"


def test_the_digest_moves_with_code_and_calibration_data_not_with_bytecode(tmp_path):
    tree = tmp_path / "faithfulness"
    shutil.copytree(PACKAGE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_version(tree)
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "judge.cpython-311.pyc").write_bytes(b"\x00compiled")
    assert code_version.__wrapped__(tree) == before
    data = next((tree / "calibration_data").glob("*.jsonl"))
    data.write_text(data.read_text() + "\n")
    assert code_version.__wrapped__(tree) != before
    data.write_text(data.read_text()[:-1])
    (tree / "judge.py").write_text((tree / "judge.py").read_text() + "# changed\n")
    assert code_version.__wrapped__(tree) not in (before, code_version.__wrapped__(PACKAGE))


def test_the_installed_package_has_one_stable_digest():
    assert code_version() == code_version.__wrapped__() and len(code_version()) == 16
