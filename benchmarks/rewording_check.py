"""Can the judge tell a rewording from a changed claim? `ragwatch.judges.faithfulness.rewording` on pairs.

Pairs are built from the labelled RAG answer statements (`data/judge_dev/rag_statements/`, the statements
no error was planted in), one pair per statement and family, deterministically (`--seed`):

- rewordings, which a reader calls the same claim: `gate_power.restyle`'s list and `reader_features.STYLE_2`
  (written independently of it);
- changed claims, which a reader calls different: each kind of `planted_errors.plant` (a name or number no
  context holds, one of the contexts in the wrong place, a negation, an antonym, a number off by a little),
  an antonym of a second list written apart from the first (`ANTONYMS_2`), and a content word replaced by
  another word of the contexts (a word for another thing).

Per family: how many pairs the model-free skeleton already calls changed, and the share called "same"
(P(same) >= `SAME_CUTOFF`) in all, with a 95% Wilson interval; seconds per judge call. `--n` pairs per family.

The rule, fixed before the first run: a reworded answer may keep its old support in the gate's paired
difference only if every changed-claim family is called "same" at most 5% of the time (upper bound of
the interval at most 10%) and each rewording list at least 80% of the time.

    python benchmarks/rewording_check.py --n 60 --out benchmarks/results/rewording_check.md
"""

from __future__ import annotations

import argparse
import random
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planted_errors import PLANTS, plant, share
from reader_features import REWORDINGS, load, reword
from statement_features import shipped_judge

from ragwatch.judges.engine import drive
from ragwatch.judges.faithfulness.evidence import STOPWORDS
from ragwatch.judges.faithfulness.rewording import SAME_CUTOFF, rewording_plan, same_skeleton

ROOT = Path(__file__).resolve().parents[1]
CUTOFFS = (0.5, 0.8, 0.9, 0.95, 0.99)  # shown beside the shipped `SAME_CUTOFF`, to choose it
DATA = ROOT / "data" / "judge_dev" / "rag_statements"


# A second list of antonyms, written apart from `planted_errors.ANTONYMS` (none of its pairs): the judge's prompt
# was revised after a first probe on 15 pairs of the first list; this list tests that it was not fitted to it
ANTONYMS_2 = (("open", "close"), ("higher", "lower"), ("success", "failure"), ("succeeds", "fails"),
              ("include", "exclude"), ("includes", "excludes"), ("import", "export"), ("save", "load"),
              ("minimum", "maximum"), ("parent", "child"), ("internal", "external"), ("faster", "slower"),
              ("larger", "smaller"), ("online", "offline"), ("static", "dynamic"), ("source", "target"),
              ("above", "below"), ("inside", "outside"), ("latest", "oldest"), ("single", "multiple"),
              ("simple", "complex"), ("easy", "hard"), ("stores", "discards"), ("runs", "skips"),
              ("supports", "lacks"), ("better", "worse"), ("early", "late"), ("cheap", "expensive"),
              ("useful", "useless"), ("specific", "generic"), ("newest", "oldest"), ("shared", "private"))
_WORD = re.compile(r"\b[a-z]{4,}\b")
# code, links and citation markers: not prose a reader reads as a claim's words
_NOT_PROSE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`|\[[^\]]*\]\([^)]*\)|\[\d+\][^\n]*?:"
                        r"|--[\w-]+(?:=\S+)?|\S+/\S+", re.S)


def prose_words(statement: str) -> list[re.Match[str]]:
    """The lower-case words of the statement outside code, links, flags, paths and citation markers."""
    spans = [m.span() for m in _NOT_PROSE.finditer(statement)]
    return [m for m in _WORD.finditer(statement) if not any(a <= m.start() < b for a, b in spans)]


def antonym_2(statement: str, rng: random.Random) -> str | None:
    """One word of `ANTONYMS_2` in the statement replaced by its opposite (either way round)."""
    found = [(m, b if m.group() == a else a) for m in prose_words(statement) for a, b in ANTONYMS_2
             if m.group() in (a, b)]
    if not found:
        return None
    m, other = rng.choice(found)
    return statement[:m.start()] + other + statement[m.end():]


def other_word(statement: str, contexts: list[str], rng: random.Random) -> str | None:
    """A lower-case content word of the statement's prose replaced by another content word of the contexts
    that the statement lacks and that does not share its first five letters (not the same word in another
    form): a word for another thing, not a name or number (the skeleton cannot see it). Some such swaps are
    ungrammatical; a reader still reads another claim."""
    own = [m for m in prose_words(statement) if m.group() not in STOPWORDS]
    have = set(_WORD.findall(statement))
    pool = sorted({w for c in contexts for w in _WORD.findall(c) if w not in STOPWORDS} - have)
    if not own:
        return None
    m = rng.choice(own)
    pool = [w for w in pool if w[:5] != m.group()[:5]]
    return statement[:m.start()] + rng.choice(pool) + statement[m.end():] if pool else None


def families() -> dict[str, tuple[bool, Callable[[dict[str, Any], random.Random], str | None]]]:
    """name -> (a reader calls it the same claim, how to make the new statement from a record)."""
    out: dict[str, tuple[bool, Callable[[dict[str, Any], random.Random], str | None]]] = {
        f"rewording: {name}": (True, lambda r, _, pairs=pairs: reword(pairs, r["statement"]))
        for name, pairs in REWORDINGS.items()}
    for kind in PLANTS:
        out[f"changed: {kind}"] = (False, lambda r, rng, kind=kind: plant(kind, r["statement"], r["contexts"], rng))
    out["changed: an antonym of a second list"] = (False, lambda r, rng: antonym_2(r["statement"], rng))
    out["changed: a word for another thing"] = (False, lambda r, rng: other_word(r["statement"], r["contexts"], rng))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=60, help="pairs per family")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "evaluate.yaml")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    records, _ = load(DATA)
    # one reading of each statement: the planted sets' untouched statements are copies of their sources'
    sources = list({r["statement"]: r for r in records if r["kind"] == "-"}.values())
    _, llm = shipped_judge(args.config, cache=True)  # a rerun is free
    lines = [f"{len(sources)} distinct labelled statements with no planted error; judge {llm.settings.model}, "
             f"cut-off P(same) >= {SAME_CUTOFF}", "",
             "| family | reader says | pairs | skeleton: changed | asked the judge | called same [95%] | "
             f"called same at P >= {' / '.join(map(str, CUTOFFS))} | s per call (-: from the LLM cache) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, (same, make) in families().items():
        pairs = []
        for r in random.Random(f"{args.seed}/{name}").sample(sources, len(sources)):
            new = make(r, random.Random(f"{args.seed}/{name}/{r['statement_id']}"))
            if new and new != r["statement"]:
                pairs.append((r["statement"], new))
            if len(pairs) == args.n:
                break
        start = time.perf_counter()
        p_same, gens = drive(rewording_plan(pairs), llm)
        fresh = not any(g.cached for g in gens)
        seconds = time.perf_counter() - start
        skeleton = sum(not same_skeleton(a, b) for a, b in pairs)
        asked = len(pairs) - skeleton
        called = sum(p is not None and p >= SAME_CUTOFF for p in p_same)
        undecided = sum(p is None for p in p_same)
        lines.append(f"| {name} | {'same' if same else 'changed'} | {len(pairs)} | {skeleton} | {asked}"
                     f"{f' ({undecided} no verdict)' if undecided else ''} | {share(called, len(pairs))} | "
                     + " / ".join(str(sum(p is not None and p >= c for p in p_same)) for c in CUTOFFS)
                     + f" | {f'{seconds / asked:.2f}' if asked and fresh else '-' if asked else '0'} |")
        wrong = [(a, b, p) for (a, b), p in zip(pairs, p_same, strict=True)
                 if (p is not None and p >= SAME_CUTOFF) != same][:2]
        for a, b, p in wrong:
            print(f"  {name}: P(same) {p}\n    OLD {a[:160]!r}\n    NEW {b[:160]!r}", file=sys.stderr)
        print(lines[-1], file=sys.stderr, flush=True)
    command = "python benchmarks/rewording_check.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = "\n".join([f"    {command}", "", *lines]) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
