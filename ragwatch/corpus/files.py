"""Which files a list of paths names: files, directories walked recursively, globs.

Hidden files and folders inside a directory are left out; symbolic links are followed once (a loop or a
dangling link is reported as skipped, with the reason). Each file comes with its `source`: its path
relative to `root`, else to the directory or glob prefix it was found under.

Example:
    >>> skipped: list[SkippedFile] = []
    >>> [source for _, source in expand_paths(["no/such/dir"], None, skipped)], skipped[0].reason
    ([], 'no such file or directory; check the path')
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel

_GLOB_CHARS = re.compile(r"[*?\[]")


class SkippedFile(BaseModel):
    """A file that was not loaded, and why (the reason says what to do)."""

    path: str
    reason: str



def expand_paths(
    paths: Iterable[str | Path], root: Path | None, skipped: list[SkippedFile]
) -> Iterator[tuple[Path, str]]:
    """Yield (file, source) for every file named by `paths`; missing paths go to `skipped`."""
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield path, _source(path, root, base=None)
        elif path.is_dir():
            for f in _walk(path, skipped):
                yield f, _source(f, root, base=path)
        elif path.is_symlink():
            skipped.append(SkippedFile(path=str(raw), reason=f"dangling symbolic link to {os.readlink(path)}"))
        elif _GLOB_CHARS.search(str(raw)):
            matches = sorted(Path(m) for m in glob.glob(str(raw), recursive=True))
            files = [m for m in matches if m.is_file()]
            if not files:
                skipped.append(SkippedFile(path=str(raw), reason="the glob matched no file"))
            base = _glob_base(str(raw))
            for f in files:
                yield f, _source(f, root, base=base)
        else:
            skipped.append(SkippedFile(path=str(raw), reason="no such file or directory; check the path"))


def _walk(top: Path, skipped: list[SkippedFile]) -> list[Path]:
    """Files under `top` in sorted order, hidden ones left out, each linked directory walked once."""
    files: list[Path] = []
    walked = {top.resolve()}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
        here = Path(dirpath)
        kept = []
        for name in sorted(dirnames):
            if name.startswith("."):
                continue
            sub = here / name
            real = sub.resolve()
            if real in walked:
                skipped.append(
                    SkippedFile(
                        path=str(sub),
                        reason=f"symbolic link loop: points to {real}, which is already walked",
                    )
                )
                continue
            walked.add(real)
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            file = here / name
            if file.is_symlink() and not file.exists():
                skipped.append(
                    SkippedFile(path=str(file), reason=f"dangling symbolic link to {os.readlink(file)}")
                )
            elif file.is_file():
                files.append(file)
    return sorted(files)


def _glob_base(pattern: str) -> Path:
    """The fixed directory prefix of a glob pattern (`docs/**/*.md` -> `docs`)."""
    parts = Path(pattern).parts
    fixed: list[str] = []
    for part in parts:
        if _GLOB_CHARS.search(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _source(file: Path, root: Path | None, base: Path | None) -> str:
    if root is not None:
        try:
            return file.resolve().relative_to(root).as_posix()
        except ValueError:
            raise ValueError(
                f"{file} is not under root {root}: pass a root that contains every input path, or no root"
            ) from None
    if base is not None:
        # The path as found under `base` (not resolved): a linked file keeps the name it was found by.
        return Path(os.path.relpath(file.absolute(), base.absolute())).as_posix()
    return file.name
