"""The embedding features of `benchmarks/semantic_support.py`: the novel part of a statement, the features from
known vectors, the cache of vectors by text, and that a reworded record recomputes them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the tool imports its siblings

import reader_features as rf
import semantic_support as ss


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


class CountingEmbedder:
    """Vectors from the text's length and vowel count (distinct, unit length); counts the texts embedded."""

    identity = "test/counting"
    dim = 2

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += texts
        return np.stack([unit(len(t) + 1.0, sum(c in "aeiou" for c in t) + 1.0) for t in texts])


def test_the_novel_part_drops_the_questions_content_words():
    question = "Does ZenML cache steps?"
    assert ss.novel_part("ZenML caches steps in the artifact store.", question) == "in the artifact store"
    assert ss.novel_part("Yes, ZenML caches steps.", question) == "yes"  # "yes" is a word of its own
    assert ss.novel_part("ZenML does cache the steps.", question) == ""  # function words alone are not a claim


def test_features_from_known_vectors():
    sentences = np.stack([unit(1, 0), unit(0, 1)])
    f = ss.semantic_features(unit(1, 1), unit(0, 1), unit(1, 0), sentences)
    assert f["sem_max"] == pytest.approx(np.sqrt(0.5))  # a tie: the first sentence is the best
    assert f["sem_novel"] == pytest.approx(1.0)
    assert f["sem_margin"] == pytest.approx(np.sqrt(0.5) - 1.0)  # the question is that sentence
    assert ss.semantic_features(unit(1, 0), None, unit(0, 1), sentences)["sem_novel"] == 0.0
    assert ss.semantic_features(unit(1, 0), None, unit(0, 1), np.zeros((0, 2), np.float32)) == {
        "sem_max": 0.0, "sem_novel": 0.0, "sem_margin": 0.0}


def test_the_cache_embeds_a_text_once_and_keeps_the_order(tmp_path, monkeypatch):
    monkeypatch.setattr(ss, "CACHE", tmp_path)
    embedder = CountingEmbedder()
    cache = ss.EmbeddingCache(embedder)
    first = cache(["a step", "a pipeline", "a step"])
    assert embedder.embedded == ["a step", "a pipeline"] and first.shape == (3, 2)
    assert np.allclose(first[0], first[2])
    cache.save()
    again = ss.EmbeddingCache(CountingEmbedder())
    assert np.allclose(again(["a pipeline"])[0], first[1]) and again.embedder.embedded == []


def test_a_reworded_record_gets_its_own_semantic_features(tmp_path, monkeypatch):
    monkeypatch.setattr(ss, "CACHE", tmp_path)
    monkeypatch.setattr(rf, "REWORDED_EXTRAS", [])
    record = {"statement_id": "s1", "statement": "The stack provides an orchestrator.", "question": "What is a stack?",
              "contexts": ["A stack provides an orchestrator. It also has an artifact store."], "label": True,
              "p_judge": 0.9, "uncited": False, "missing_terms": 0}
    ss.annotate([record], ss.EmbeddingCache(CountingEmbedder()))
    text = rf.reword(rf.STYLE_1, record["statement"])
    assert text != record["statement"]
    new = rf.reworded(record, text)
    assert new["statement"] == text and new["sem_max"] != record["sem_max"]
