"""Semantic support from the product's own embedding model, held out by system and by corpus, and under rewording.

Word overlap cannot be made invariant to synonyms (`benchmarks/reader_features.py`); a sentence embedding
may be. Every statement, its question and its retrieved contexts' sentences (`context_sentences`: the
sentences the judge sees) are embedded with the embedder retrieval uses (`get_embedder`, the default
`local/all-MiniLM-L6-v2`, int8 ONNX, offline), and from the cosines:

- `sem_max`: the best context sentence's cosine with the statement;
- `sem_novel`: the best cosine of the statement's novel part (its words, less those whose stem is a
  content word of the question) with a context sentence; 0 when nothing but the question's content is left;
- `sem_margin`: `sem_max` less the question's own cosine with that best sentence (how much closer the
  statement is to its evidence than the question already was).

Measured as `reader_features.py` measures (its functions): each feature added to the shipped family's
fullest set, held out by system (one of 8) and by corpus (one of 2), kappa / balanced accuracy / ROC AUC with
95% bootstrap intervals over answers and the paired difference against the set without it; its invariance
under both style-only rewordings (the reworded statements re-embedded); feature families with the input
choice held out too, decided by the rule of `reader_features.md` section 3, unchanged. And the cost: seconds
per statement to embed a sample of answers afresh (the context sentences once per answer, then its
statements, their novel parts and the question), beside the judge seconds per statement the features files
recorded for the same statements.

Embeddings are cached by text in `.ragwatch/semantic_support/` (not committed), so a rerun embeds only new
texts; the timing never reads the cache.

    python benchmarks/semantic_support.py --out benchmarks/results/semantic_support.md
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import reader_features as rf
from reader_features import (
    CORPUS,
    FAMILY_HEADER,
    REWORDINGS,
    candidate_inputs,
    content_words,
    family,
    family_rows,
    fitting_data,
    held_out,
    reword,
    rule_rows,
    single_feature_rows,
    stem,
)

from ragwatch.indexing.embeddings import Embedder, EmbeddingSettings, get_embedder
from ragwatch.judges.faithfulness import fit
from ragwatch.judges.faithfulness.evidence import context_sentences, words
from ragwatch.judges.faithfulness.fit import SHIPPED_RULE, Candidate, read_jsonl, statement_key

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".ragwatch" / "semantic_support"
TIMED_ANSWERS = 40  # answers embedded afresh for the cost (every system, drawn by a fixed hash)
SEMANTIC_NAMES = ("sem_max", "sem_novel", "sem_margin")

FAMILIES = {
    "v2 (shipped)": family(),
    "v3-sem: + sem_max": family(extra=("sem_max",)),
    "v3-sem-novel: + sem_max, sem_novel": family(extra=("sem_max", "sem_novel")),
    "v3-sem-margin: + sem_max, sem_margin": family(extra=("sem_max", "sem_margin")),
    "v3-sem-all: + sem_max, sem_novel, sem_margin": family(extra=SEMANTIC_NAMES),
    "v3-sem-lexical: lexical := sem_max": family("sem_max"),
}

RULE = """The rule of `reader_features.md` section 3, unchanged (quoted there): a family replaces v2 only if, with
the input choice held out as well, held out by system AND by corpus its kappa and balanced accuracy are each at
least v2's (point estimates), under BOTH rewordings the mean change of P(supported) of the readers' supported
statements is smaller in magnitude than v2's (held out by system), and the veto's precision stays >= 0.9 on S0-S2
(no family here changes the veto); among those that pass, the highest kappa held out by system wins; else v2
stays. The three features and the families above were written before any figure of this file was computed; the
figures of `reader_features.md` (v2's among them) had been read."""


def novel_part(statement: str, question: str) -> str:
    """The statement's words less those whose stem is a content word of the question ("" when no content word
    of its own is left)."""
    asked = set(content_words(question))
    kept = [w for w in words(statement) if stem(w) not in asked]
    own = [w for w in content_words(" ".join(kept)) if w not in asked]
    return " ".join(kept) if own else ""


def semantic_features(statement: np.ndarray, novel: np.ndarray | None, question: np.ndarray,
                      sentences: np.ndarray) -> dict[str, float]:
    """The features from unit vectors: the statement's, its novel part's (None: nothing novel), the
    question's, and the context sentences' rows."""
    if len(sentences) == 0:
        return {"sem_max": 0.0, "sem_novel": 0.0, "sem_margin": 0.0}
    cos = sentences @ statement
    best = int(np.argmax(cos))
    return {"sem_max": float(cos[best]),
            "sem_novel": 0.0 if novel is None else float(np.max(sentences @ novel)),
            "sem_margin": float(cos[best] - sentences[best] @ question)}


class EmbeddingCache:
    """Vectors by text, embedded on demand and saved under `CACHE` (one file per embedding model)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.path = CACHE / (hashlib.sha1(embedder.identity.encode()).hexdigest()[:12] + ".npz")
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.is_file():
            with np.load(self.path) as stored:
                self.vectors = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
        self.added = 0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))
        if todo:
            for key, vector in zip(map(self.key, todo), self.embedder.embed(todo), strict=True):
                self.vectors[key] = vector
            self.added += len(todo)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self.vectors[self.key(t)] for t in texts])

    def save(self) -> None:
        if self.added:
            CACHE.mkdir(parents=True, exist_ok=True)
            keys = list(self.vectors)
            np.savez(self.path, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
            self.added = 0


def features_of(vectors: EmbeddingCache, statement: str, question: str, sentences: list[str]) -> dict[str, float]:
    novel = novel_part(statement, question)
    st, q = vectors([statement, question])
    return semantic_features(st, vectors([novel])[0] if novel else None, q, vectors(sentences))


def annotate(records: list[dict[str, Any]], vectors: EmbeddingCache) -> None:
    """Every record's semantic features; the reworded statements' texts embedded up front (in one pass)."""
    texts = []
    for r in records:
        r["sentences"] = [s.text for s in context_sentences(r["contexts"])]
        variants = [r["statement"]] + [reword(p, r["statement"]) for p in REWORDINGS.values()] * r["label"]
        texts += [*r["sentences"], r["question"], *variants, *filter(None, (novel_part(v, r["question"])
                                                                             for v in variants))]
    vectors(texts)
    vectors.save()
    for r in records:
        r.update(features_of(vectors, r["statement"], r["question"], r["sentences"]))
    rf.REWORDED_EXTRAS.append(lambda r, text: features_of(vectors, text, r["question"], r["sentences"]))


def judge_seconds(data: Path) -> dict[str, float]:
    """The judge's recorded seconds per statement (its answer's call shared over its statements), by statement."""
    return {statement_key({**row, "system": row.get("system") or "default"}): float(row["seconds"])
            for name in rf.FEATURE_FILES for row in read_jsonl(data / name) if row.get("seconds") is not None}


def cost(records: list[dict[str, Any]], embedder: Embedder, recorded: dict[str, float]) -> list[str]:
    """Seconds per statement to compute the features afresh on `TIMED_ANSWERS` answers, beside the judge's."""
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        answers[r["answer_id"]].append(r)
    chosen = sorted(answers, key=lambda a: hashlib.sha1(a.encode()).hexdigest())[:TIMED_ANSWERS]
    embedder.embed(["warm up"])  # the model's one-off load is not a per-statement cost
    spent, on_contexts, statements, sentences = 0.0, 0.0, 0, 0
    for answer in chosen:
        rows = answers[answer]
        start = time.perf_counter()
        sent = embedder.embed(rows[0]["sentences"])
        on_contexts += time.perf_counter() - start
        q = embedder.embed([rows[0]["question"]])[0]
        for r in rows:
            novel = novel_part(r["statement"], r["question"])
            vec = embedder.embed([r["statement"], novel] if novel else [r["statement"]])
            semantic_features(vec[0], vec[1] if novel else None, q, sent)
        spent += time.perf_counter() - start
        statements += len(rows)
        sentences += len(rows[0]["sentences"])
    judged = [recorded[r["statement_id"]] for a in chosen for r in answers[a] if r["statement_id"] in recorded]
    per = spent / statements
    return ["| reader | seconds per statement | of which the context sentences | over the judge's recorded |",
            "|---|---|---|---|",
            f"| embedding features ({statements} labelled statements of {len(chosen)} answers, {sentences} context "
            f"sentences; {embedder.identity}) | {per:.4f} | {on_contexts / statements:.4f} | "
            f"{per / np.mean(judged):.4f}x |",
            f"| the judge, as recorded for the same statements ({len(judged)}) | {np.mean(judged):.2f} | - | 1x |",
            "", "Wall time on the shared 2-core machine (other jobs running). The context sentences are embedded once "
            "per answer and their cost shared by the answer's labelled statements here; the judge's seconds are its "
            "answer's call shared by all the answer's statements."]


def what_ships(records: list[dict[str, Any]], candidates: Sequence[Candidate]) -> list[str]:
    """The inputs a calibration fitted with the winning family's candidates would choose (the shipped way: by
    kappa cross-fitted by answer) on S0-S2 and on all 800, and whether any is a semantic one."""
    lines = []
    for name, rows in (("S0-S2", [r for r in records if r["system"] in rf.FITTED_ON]), ("all 800", records)):
        chosen = fit.choose(rows, SHIPPED_RULE, candidates)
        semantic = [f for f in chosen.features if f in SEMANTIC_NAMES]
        lines.append(f"- Fitted on {name}, the shipped way, the family chooses `{chosen.name}`: "
                     + (f"semantic inputs {semantic}." if semantic else "no semantic input, so the calibration it "
                        "gives is v2's own."))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=rf.DATA, help="the labelled statements' folder")
    parser.add_argument("--embedding-model", default=EmbeddingSettings().model, help="the embedder (default: "
                        "the product's, as in configs/ingest.yaml)")
    parser.add_argument("--out", type=Path, help="write the tables here, the command on top")
    args = parser.parse_args(argv)
    embedder = get_embedder(EmbeddingSettings(model=args.embedding_model))
    records, dropped = rf.load(args.data)
    vectors = EmbeddingCache(embedder)
    annotate(records, vectors)
    per_system = Counter(r["system"] for r in records)
    lines = [f"{len(records)} labelled statements ({dict(sorted(per_system.items()))}; left out: {dict(dropped)}); "
             f"corpora {sorted(set(CORPUS.values()))}; {rf.RESAMPLES} bootstrap replicates over answers; "
             f"embedder {embedder.identity}.", "",
             "## 1. Cost", "", *cost(records, embedder, judge_seconds(args.data)), "",
             "## 2. Each feature added to the fullest shipped set (judge+lexical+all, balanced), held out", "",
             "As in `reader_features.md` section 2: kappa and balanced accuracy with 95% intervals; the paired "
             "difference against the set without the feature; pooled ROC AUC of the feature alone; the mean change "
             "of P(supported) of the readers' supported statements / the verdicts turned unsupported under each "
             "rewording (held out by system; the reworded statements re-embedded).", ""]
    with candidate_inputs((*rf.CANDIDATE_NAMES, *SEMANTIC_NAMES)):
        lines += single_feature_rows(records, SEMANTIC_NAMES)
        shipped = {by: held_out(records, by, None) for by in ("system", "corpus")}
        lines += ["", "## 3. The decision rule", "", RULE, "", "## 4. Feature families, the input choice held out "
                  "too", "", *FAMILY_HEADER]
        rows, outcome = family_rows(records, FAMILIES, shipped)
        lines += rows
        lines += ["", "Inputs chosen per left-out system: " + "; ".join(
            f"{name}: {', '.join(r['held']['system'].chosen)}" for name, r in outcome.items()), ""]
        rows, winner, passed = rule_rows(records, outcome)
        lines += [*rows, "", f"Outcome of the rule: **{winner}**"
                  + ("" if passed else " (no family passes: v2 stays)") + ".", ""]
        if passed:
            lines += ["## 5. Fitting on all 800 against S0-S2 only (the winning family's candidates)", "",
                      *fitting_data(records, FAMILIES[winner]), "", *what_ships(records, FAMILIES[winner]), ""]
    vectors.save()
    text = "\n".join(lines)
    print(text)
    if args.out:
        command = "python benchmarks/semantic_support.py " + " ".join(sys.argv[1:] if argv is None else argv)
        args.out.write_text(f"    {command}\n\n{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
