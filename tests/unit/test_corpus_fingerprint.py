"""The corpus fingerprint (ingestion's cache key) changes with the corpus, wherever the corpus lives."""

from __future__ import annotations

from pathlib import Path

from ragwatch.config import CorpusSettings, corpus_fingerprint


def test_corpora_under_a_hidden_folder_differ_and_hidden_files_below_do_not_count(tmp_path: Path) -> None:
    a, b = tmp_path / ".work" / "a", tmp_path / ".work" / "b"
    for folder, text in ((a, "alpha"), (b, "beta")):
        folder.mkdir(parents=True)
        (folder / "doc.md").write_text(text, encoding="utf-8")
    fa, fb = (corpus_fingerprint(CorpusSettings(paths=[str(p)])) for p in (a, b))
    assert fa != fb
    (a / ".cache").mkdir()
    (a / ".cache" / "x.md").write_text("noise", encoding="utf-8")
    assert corpus_fingerprint(CorpusSettings(paths=[str(a)])) == fa
    (a / "doc.md").write_text("alpha, edited", encoding="utf-8")
    assert corpus_fingerprint(CorpusSettings(paths=[str(a)])) != fa
