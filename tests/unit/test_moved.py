"""Old import paths of moved modules (`ragwatch._moved`): the same module, the same classes, and
stored objects that name the old path still load."""

from __future__ import annotations

import importlib
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragwatch
import ragwatch.review.labels
from ragwatch._moved import MOVED, MovedModules


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_is_the_new_module(old: str, new: str) -> None:
    stale = Path(ragwatch.__file__).parent.parent / old.replace(".", "/")
    assert old != new and not stale.with_suffix(".py").exists() and not stale.is_dir(), "the old path must be gone"
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__ is not None and module.__spec__.name == new


def test_a_class_by_its_old_path_is_the_class() -> None:
    from ragwatch.labels import HumanLabels  # the type path of `human_labels` artifacts saved before the move

    assert HumanLabels is ragwatch.review.labels.HumanLabels
    assert HumanLabels.__module__ == "ragwatch.review.labels"  # what new artifacts record


def test_pickles_round_trip_by_either_path() -> None:
    label = ragwatch.review.labels.HumanLabel(item_id="q1", metric="faithfulness", value=1.0)
    assert pickle.loads(pickle.dumps(label)) == label
    # protocol 2 names a class as text: the same object pickled before the move named the old module
    stored = pickle.dumps(label, protocol=2).replace(b"ragwatch.review.labels\n", b"ragwatch.labels\n")
    assert b"ragwatch.labels\n" in stored
    loaded = pickle.loads(stored)
    assert type(loaded) is ragwatch.review.labels.HumanLabel and loaded == label


def test_an_unknown_path_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ragwatch.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ragwatch.labels.no_such_module")


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MovedModules]:
    """A package `newpkg` with a submodule on the path, and a finder that moved `oldpkg` there."""
    (tmp_path / "newpkg").mkdir()
    (tmp_path / "newpkg" / "__init__.py").write_text("")
    (tmp_path / "newpkg" / "sub.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = MovedModules({"oldpkg": "newpkg"})
    sys.meta_path.insert(0, finder)
    yield finder
    sys.meta_path.remove(finder)
    for name in [n for n in sys.modules if n.split(".")[0] in ("oldpkg", "newpkg")]:
        del sys.modules[name]


def test_a_moved_package_brings_its_modules(packages: MovedModules) -> None:
    old = importlib.import_module("oldpkg.sub")  # first: the old path imports the new module
    assert old is importlib.import_module("newpkg.sub") and old.__spec__.name == "newpkg.sub"
    assert packages.new_name("oldpkg.sub") == "newpkg.sub"
    assert packages.new_name("oldpkgs") is None  # a longer name is not below the moved one
