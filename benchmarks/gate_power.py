"""Does the promotion gate catch real regressions and stay quiet on no-ops? Planted changes, measured.

A baseline system (hybrid retrieval, top 3, the default prompt) answers a labelled question set on
the bundled corpus; each planted change answers the same questions and is gated against the
baseline as the promoted production version (the gate of `ragwatch.decision.compare`, paired by question).

Regressions (must be blocked): top_k 3 -> 1; contexts shuffled across questions; a generator that
answers from no context (the system still reports the contexts it retrieved); answers truncated to
their first 10 words; a retriever that drops the best hit.
No-ops (must promote): the identical configuration with a cold LLM cache; another sampling seed;
a cosmetic whitespace change of the prompt.

Two evaluation sets and gates:
- `--generator local` (the product's default): the embedded default's own evaluation set (the
  labelled ZenML questions of the sample corpus with their written reference answers, plus the
  synthetic pairs, exactly as `python run.py testset` builds them), the default's models (the 0.5B
  generator, at temperature 0.3 so that the seed no-op really changes the answers; the 1.5B
  faithfulness judge) and the default's gate from `configs/evaluate.yaml` (system metrics, answer
  grounding, faithfulness; `min_n`). Every LLM call goes through the LLM cache in
  `.ragwatch/gate_power/llm`; the cold-cache no-op uses an empty cache for the generator and judge.
- any other generator: the ZenML question set's questions whose page is in the bundled corpus plus
  the guide's handwritten question -> page cases (no reference answers: coverage reads the passage
  each question was written from), gated on the system metrics of `ragwatch.checks.system_metrics` only
  (no LLM judge: cheap, and deterministic when retrieval is).

Usage:
    python benchmarks/gate_power.py --generator local            # the default's models and gate
    python benchmarks/gate_power.py --generator extractive       # fake extractive generator, ~1 min
    python benchmarks/gate_power.py --sizes 8,16,24 --markdown reports/gate_power.md

`--generator extractive` answers through tests/fake_llm_server.py with the context sentence that
best overlaps the question (a stand-in that reads its context, for changes in retrieval or in the
answer text; the seed no-op is trivial for it). Exit code: 0 when every regression is blocked and
no no-op is, else 1.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.checks.e2e import TABLES, E2ETables, load_e2e_tables, run_e2e_tests  # noqa: E402
from ragwatch.checks.system_metrics import system_metrics  # noqa: E402
from ragwatch.config import FullConfig, content_hash, corpus_fingerprint  # noqa: E402
from ragwatch.config_loader import load_config  # noqa: E402
from ragwatch.corpus.chunking import chunk_documents  # noqa: E402
from ragwatch.corpus.documents import load_documents  # noqa: E402
from ragwatch.decision.compare import Comparison, compare_runs  # noqa: E402
from ragwatch.decision.gate import GateDecision, gate_decision  # noqa: E402
from ragwatch.decision.labels_plan import labels_plans  # noqa: E402
from ragwatch.decision.thresholds import GateThresholds  # noqa: E402
from ragwatch.evalset.assemble import generation_samples, import_labelled_samples, merge_samples  # noqa: E402
from ragwatch.evalset.imported import load_handwritten_retrieval_cases, load_zenml_qa  # noqa: E402
from ragwatch.evalset.references import write_reference_answers  # noqa: E402
from ragwatch.evalset.synthetic import generate_testset  # noqa: E402
from ragwatch.evaluation import judge_answers  # noqa: E402
from ragwatch.indexing.embeddings import Embedder, get_embedder  # noqa: E402
from ragwatch.indexing.index import Index  # noqa: E402
from ragwatch.llm.client import LLMClient  # noqa: E402
from ragwatch.llm.types import TINY_MODEL, LLMSettings  # noqa: E402
from ragwatch.rag import BuiltinRAG, RagSettings, build_prompt, format_contexts  # noqa: E402
from ragwatch.report.verdicts import reason_lines  # noqa: E402
from ragwatch.results import MetricResult  # noqa: E402
from ragwatch.retrieval import MatchSettings, unmatched_labels  # noqa: E402
from ragwatch.types import EvalSample, RagAnswer, SearchHit  # noqa: E402

CACHE = ROOT / ".ragwatch" / "gate_power"

# The gate under test. Retrieval as run is deterministic for an unchanged retriever, so it needs no
# tolerance (drop 0); answer text varies with sampling, so its metrics may drop 0.05 before it counts.
GATE = GateThresholds(
    default_allowed_drop=0.05,
    per_metric={"system/*": 0.0},
    gated_metrics=["system/hit_rate", "system/mrr", "system/context_recall", "answer/context_support",
                   "answer/reference_coverage"],
    inconclusive="min_n",
    min_n=30,
)


# ---------------------------------------------------------------- planted changes


class ShuffledContexts(BuiltinRAG):
    """A bug that hands every question the contexts retrieved for the next question."""

    def retrieve_many(self, questions: list[str], k: int | None = None, mode: Any = None) -> list[list[SearchHit]]:
        rankings = super().retrieve_many(questions, k, mode)
        return rankings[1:] + rankings[:1]


class DropsBestHit(BuiltinRAG):
    """A retriever that loses its best hit: it returns ranks 2..k+1."""

    def retrieve_many(self, questions: list[str], k: int | None = None, mode: Any = None) -> list[list[SearchHit]]:
        k = k or self.settings.top_k
        return [hits[1:] for hits in super().retrieve_many(questions, k + 1, mode)]


class IgnoresContext(BuiltinRAG):
    """A generator that never sees the context; the system still reports what it retrieved."""

    def answer_many(self, questions: list[str], **overrides: Any) -> list[RagAnswer]:
        rankings = self.retrieve_many(questions)
        used = [format_contexts(hits, self.settings.max_context_chars)[1] for hits in rankings]
        prompts = [build_prompt(self.settings.prompt_template, q, "") for q in questions]
        generations = self.llm.generate_many(prompts, desc="answers without context", **overrides)
        return [RagAnswer(question=q, answer=g.text if g.ok else "", contexts=c,
                          error=None if g.ok else f"generation failed: {g.error}")
                for q, c, g in zip(questions, used, generations, strict=True)]


def truncate(answers: list[RagAnswer], words: int = 10) -> list[RagAnswer]:
    return [a.model_copy(update={"answer": " ".join(a.answer.split()[:words])}) for a in answers]


# A name (a capitalised word with a lower-case letter after its first, e.g. ZenML, Docker) or a number.
_TERM = re.compile(r"(?<![\w.])(?:[A-Z][\w-]*[a-z][\w-]*|\d+(?:\.\d+)?)(?![\w])")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*[-*#>]*\s*|\*\*|#+\s*)$")
# fabricated names of both shapes: a CamelCase one replaces a CamelCase name (ZenML, PostgreSQL), a plain
# one a plain capitalised word; the verifier's rule knows only numbers, identifiers and CamelCase names
_FAKE_CAMEL = ("FlowDeck", "DataForge", "PipeSmith", "KubeRail", "MetaStack", "GridHarbor")
_FAKE_PLAIN = ("Kubeflux", "Dagster", "Metaflow", "Airbyte", "Snowpark", "Tekton", "Flyway", "Quarkus")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")


def _terms(text: str) -> list[re.Match[str]]:
    """Names and numbers of `text`, without the capitalised first word of a sentence."""
    return [m for m in _TERM.finditer(text) if m.group()[0].isdigit() or not _SENTENCE_START.search(text[:m.start()])]


def _kind(term: str) -> str:
    return "number" if term[0].isdigit() else "name"


def plant(answers: list[RagAnswer], how: str) -> list[RagAnswer]:
    """Each answer with its first name or number that one of its contexts holds replaced by a term of the
    same kind that no context of it holds (`how="fabricate"`), or that another place of its contexts
    holds (`how="swap"`: right words, wrong place). Answers without such a term stay as they were."""
    out = []
    for a in answers:
        context = "\n".join(c.text for c in a.contexts)
        present = {m.group() for m in _terms(a.answer)}
        grounded = [m for m in _terms(a.answer) if m.group() in context]
        new = None
        for m in grounded:
            term = m.group()
            if how == "fabricate":
                pool = ([str(int(float(term)) + k) for k in (7, 13, 19, 23, 31)] if _kind(term) == "number"
                        else list(_FAKE_CAMEL if _CAMEL.search(term) else _FAKE_PLAIN))
                pool = [t for t in pool if t not in context]
            else:
                pool = [t.group() for t in _terms(context)
                        if _kind(t.group()) == _kind(term) and t.group() not in present]
            if pool:
                new = a.answer[:m.start()] + pool[0] + a.answer[m.end():]
                break
        out.append(a if new is None else a.model_copy(update={"answer": new}))
    return out


_STYLE = (("allows you to", "lets you"), ("In order to", "To"), ("in order to", "to"), ("does not", "doesn't"),
          ("is not", "isn't"), ("can not", "cannot"), ("It is", "It's"), ("you can", "you are able to"),
          ("helps", "assists"), ("However,", "That said,"), ("provides", "offers"), ("such as", "like"),
          ("For example", "For instance"), ("use", "make use of"), ("need to", "have to"),
          ("to ensure", "to make sure"), ("specific", "particular"), ("different", "various"),
          ("several", "a number of"), ("important", "key"), ("allows", "lets"), ("using", "with"))


def restyle(answers: list[RagAnswer]) -> list[RagAnswer]:
    """The same content in other words: contractions and synonyms of function words (a no-op for faithfulness)."""
    out = []
    for a in answers:
        text = a.answer
        for old, new in _STYLE:
            text = re.sub(rf"\b{re.escape(old)}\b", new, text)
        out.append(a.model_copy(update={"answer": text}))
    return out


@dataclass
class Change:
    name: str
    regression: bool
    make: Callable[[Index, Embedder, LLMSettings], list[RagAnswer] | None]
    edit: Callable[[list[RagAnswer]], list[RagAnswer]] | None = None  # applied to the baseline's answers


# ---------------------------------------------------------------- the extractive stand-in generator

_BLOCK = re.compile(r"\[\d+\] source: [^\n]*\n(`{3,})\n(.*?)\n\1", re.S)
_WORDS = re.compile(r"\w+")


def extractive_reply(body: dict[str, Any]) -> str:
    """The context sentence (up to 40 words) that shares most words with the question."""
    prompt = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
    question = prompt.rsplit("Query:", 1)[-1].split("Answer:")[0]
    wanted = {w.lower() for w in _WORDS.findall(question) if len(w) > 3}
    sentences = [s for block in _BLOCK.findall(prompt) for s in re.split(r"(?<=[.!?])\s+", block[1]) if s.strip()]
    if not sentences:
        return "ZenML is an open-source MLOps framework; it runs machine learning pipelines on many stacks."
    best = max(sentences, key=lambda s: len(wanted & {w.lower() for w in _WORDS.findall(s)}))
    return " ".join(best.split()[:40])


# ---------------------------------------------------------------- the run


def build_index(config: FullConfig) -> tuple[Index, Embedder]:
    embedder = get_embedder(config.ingest.embedding)
    # Keyed by the corpus, its chunking and the loader's code: a changed reader re-chunks.
    key = hashlib.sha256("|".join((corpus_fingerprint(config.ingest.corpus), config.ingest.chunking.model_dump_json(),
                                   content_hash(ROOT / "ragwatch" / "corpus", (".py",)))).encode()).hexdigest()[:16]
    cached = CACHE / f"index-{key}"
    if cached.is_dir():
        return Index.load(cached), embedder
    docs = load_documents(config.ingest.corpus.paths).documents
    chunks = chunk_documents(docs, config.ingest.chunking, embedder.count_tokens,
                             max_window=embedder.max_input_tokens)
    index = Index.build(chunks, embedder)
    index.save(cached)
    return index, embedder


def question_set(index: Index, match: MatchSettings) -> list[EvalSample]:
    """Questions whose labelled page is in the bundled corpus (others cannot be answered from it)."""
    samples = load_handwritten_retrieval_cases() + load_zenml_qa()
    broken = unmatched_labels(samples, index.documents(), match)
    return [s for s in samples if s.id not in broken]


QUESTIONS: list[str] = []


def system(cls: type[BuiltinRAG] = BuiltinRAG, **rag: Any) -> Callable[..., list[RagAnswer]]:
    """A maker of answers to QUESTIONS by a built-in system of class `cls` with RAG settings `rag`."""
    def make(index: Index, embedder: Embedder, llm: LLMSettings, **llm_updates: Any) -> list[RagAnswer]:
        settings = RagSettings(**{"retrieval_mode": "hybrid", "top_k": 3, "max_context_chars": 2400, **rag})
        rag_system = cls(index, embedder, LLMClient(llm.model_copy(update=llm_updates)), settings)
        return rag_system.answer_many(QUESTIONS)
    return make


BASELINE = system()


def _edit(regression: bool, name: str, edit: Callable[[list[RagAnswer]], list[RagAnswer]]) -> Change:
    return Change(name, regression, lambda *_: None, edit)


def answer_edits() -> list[Change]:
    """Planted changes of the answers' words (for the judge's faithfulness; `--generator local` runs them)."""
    return [
        _edit(True, "a name or number no context holds", lambda answers: plant(answers, "fabricate")),
        _edit(True, "a name or number of its contexts in the wrong place", lambda answers: plant(answers, "swap")),
        _edit(False, "no-op: identical replay", list),
        _edit(False, "no-op: answers reworded (style only)", restyle),
    ]


def changes(local: bool = False) -> list[Change]:
    whitespace = RagSettings().prompt_template.replace("below.\n", "below.  \n").replace("Answer: ", "Answer:  ")
    return [
        *(answer_edits() if local else []),
        Change("top_k 3 -> 1", True, system(top_k=1)),
        Change("contexts shuffled across questions", True, system(ShuffledContexts)),
        Change("generator answers from no context", True, system(IgnoresContext)),
        _edit(True, "answers truncated to 10 words", truncate),
        Change("retriever drops the best hit", True, system(DropsBestHit)),
        Change("no-op: cold LLM cache", False,
               lambda i, e, llm: BASELINE(i, e, llm, cache_dir=tempfile.mkdtemp(prefix="cold-cache-"))),
        Change("no-op: another sampling seed", False, lambda i, e, llm: BASELINE(i, e, llm, seed=(llm.seed or 0) + 1)),
        Change("no-op: prompt whitespace", False, system(prompt_template=whitespace)),
    ]




@dataclass
class Outcome:
    change: Change
    comparison: Comparison
    decision: GateDecision
    seconds: float
    changed: int = 0  # answers whose text differs from the baseline's
    strict: GateDecision | None = None  # the decision under gate.weak_judge: labels

    @property
    def ok(self) -> bool:
        blocked = not self.decision.promote
        return blocked == self.change.regression and (not blocked or self.decision.status in ("regressed",
                                                                                              "needs_labels"))


def default_eval_set(config: FullConfig, index: Index, embedder: Embedder, cache_dir: Path) -> list[EvalSample]:
    """The embedded default's answered items, built as `python run.py testset` builds them."""
    generator = LLMClient(config.testset.generator.model_copy(update={"cache_dir": str(cache_dir)}))
    imported, _ = import_labelled_samples(config.testset)
    if config.testset.write_reference_answers:
        imported, _ = write_reference_answers(imported, generator)
    synthetic = generate_testset(index, generator, embedder, config.testset.testset).samples
    return generation_samples(merge_samples(synthetic, imported))


@dataclass
class Evaluator:
    """The metrics of one set of answers: system metrics, and the default's judges when `judges` is set."""

    match: MatchSettings
    judges: Any = None  # a JudgesConfig
    embedder: Embedder | None = None
    e2e: E2ETables | None = None  # keyword tests: their questions follow the samples' in the answers

    def __call__(self, samples: list[EvalSample], answers: list[RagAnswer], top_k: int,
                 cache_dir: str | None = None) -> dict[str, MetricResult]:
        answers, e2e_answers = answers[:len(samples)], answers[len(samples):]
        metrics = system_metrics(samples, answers, match=self.match, k=top_k)
        if self.e2e is not None:
            by_question = {a.question: a for a in e2e_answers}
            metrics.update(run_e2e_tests(self.e2e, lambda qs: [by_question[q] for q in qs]).metrics)
        if self.judges is not None:
            config = self.judges
            if cache_dir is not None:
                config = config.model_copy(update={"llm": config.llm.model_copy(update={"cache_dir": cache_dir})})
            metrics.update(judge_answers(samples, answers, config, self.embedder).metrics)
        return metrics


def run(generator: str, limit: int | None, gate: GateThresholds = GATE, sizes: tuple[int, ...] = (),
        only: tuple[str, ...] = (), questions: str = "default"
        ) -> tuple[list[Outcome], dict[int, dict[str, str]], int, GateThresholds]:
    """Every planted change (or those whose name starts with one of `only`) gated against the baseline;
    also, per subset size, the gate's status. `questions="zenml"` with the local generator: the ZenML
    question set (no test set to generate first: the quick run)."""
    config = load_config(ROOT / "configs" / "full.yaml", FullConfig)
    match = config.evaluate.retrieval.match
    index, embedder = build_index(config)
    evaluate = Evaluator(match)
    server = None
    if generator == "local":
        llm_cache = CACHE / "llm"
        samples = (question_set(index, match) if questions == "zenml"
                   else default_eval_set(config, index, embedder, llm_cache))[:limit]
        llm = config.evaluate.system.generator.model_copy(
            update={"temperature": 0.3, "seed": 0, "cache_dir": str(llm_cache)})
        judges = config.evaluate.judges
        judges = judges.model_copy(update={"enabled": [j for j in judges.enabled if j != "perplexity"],
                                           "llm": judges.llm.model_copy(update={"cache_dir": str(llm_cache)})})
        tables = load_e2e_tables(config.evaluate.e2e.tables) if config.evaluate.e2e.tables else None
        evaluate = Evaluator(match, judges, embedder, tables)
        gate = config.evaluate.gate
    else:
        samples = question_set(index, match)[:limit]
    QUESTIONS[:] = [s.question for s in samples]
    if evaluate.e2e is not None:
        QUESTIONS.extend(dict.fromkeys(c.question for name in TABLES for c in getattr(evaluate.e2e, name).cases))
    if generator == "extractive":
        server = _fake_server_class()(responder=extractive_reply).start()
        llm = LLMSettings(model="openai/extractive", api_base=server.base_url, cache=False, max_tokens=80)
    elif generator != "local":
        llm = LLMSettings(model=generator, temperature=0.3, seed=0, max_tokens=80,
                          cache_dir=str(CACHE / "llm"), concurrency=1)
    try:
        started = time.perf_counter()
        base_answers = BASELINE(index, embedder, llm)
        base = evaluate(samples, base_answers, 3)
        print(f"baseline: {len(samples)} questions answered and evaluated in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        outcomes, per_size = [], {n: {} for n in sizes}
        by_name = {c.name: c for c in changes(local=generator == "local")}
        names = dict.fromkeys(n for prefix in only for n in by_name if n.startswith(prefix)) if only else by_name
        picked = [by_name[n] for n in names]
        for change in picked:  # in the order asked for
            started = time.perf_counter()
            answers = change.make(index, embedder, llm)
            if answers is None and change.edit is not None:
                answers = change.edit(base_answers[:len(samples)]) + base_answers[len(samples):]  # e2e kept
            assert answers is not None, change.name
            top_k = 1 if change.name.startswith("top_k") else 3
            cold = tempfile.mkdtemp(prefix="cold-judge-cache-") if "cold" in change.name else None
            metrics = evaluate(samples, answers, top_k, cache_dir=cold)
            comparison = compare_runs(metrics, base, thresholds=gate, new_label=change.name, old_label="baseline")
            plans = labels_plans(comparison, metrics, base, run="<this run>", thresholds=gate)
            outcome = Outcome(change, comparison, gate_decision(comparison, gate, plans=plans),
                              time.perf_counter() - started, changed=sum(
                                  a.answer != b.answer for a, b in zip(answers, base_answers, strict=True)),
                              strict=gate_decision(comparison, gate.model_copy(update={"weak_judge": "labels"}),
                                                   plans=plans))
            outcomes.append(outcome)
            print(f"  {change.name}: {'blocked' if not outcome.decision.promote else 'promoted'} "
                  f"({outcome.decision.status}, {outcome.seconds:.0f} s)", flush=True)
            print("  " + table([outcome], gate).splitlines()[-1], flush=True)  # the row, before a long run ends
            for n in sizes:
                sub = compare_runs(_first(metrics, samples[:n], answers[:n], evaluate.match, top_k),
                                   _first(base, samples[:n], base_answers[:n], evaluate.match, 3),
                                   thresholds=gate)
                per_size[n][change.name] = gate_decision(sub, gate).status
    finally:
        if server is not None:
            server.stop()
    return outcomes, per_size, len(samples), gate


def _first(metrics: dict[str, MetricResult], samples: list[EvalSample], answers: list[RagAnswer],
           match: MatchSettings, top_k: int) -> dict[str, MetricResult]:
    """The metrics on the first N items: system metrics recomputed, judged metrics restricted (no new calls)."""
    subset = system_metrics(samples, answers, match=match, k=top_k)
    ids = {s.id for s in samples}
    for name, result in metrics.items():
        if name in subset:
            continue
        items = [it for it in result.items if it.item_id in ids]
        # keyword tests are not a sample of the questions: they stay whole
        subset[name] = MetricResult.from_items(name, items, info=result.info) if items else result
    return subset


def table(outcomes: list[Outcome], gate: GateThresholds) -> str:
    """Markdown: one row per change, one column per gated metric (diff, interval, verdict), the gate."""
    metrics = gate.gated_metrics or []
    head = "| change | answers changed | expected | gate | weak_judge: labels | " + " | ".join(metrics) + " |"
    lines = [head, "|" + "---|" * (5 + len(metrics))]
    for o in outcomes:
        cells = []
        for m in metrics:
            r = o.comparison.row(m)
            cells.append(f"{r.diff:+.3f} [{r.diff_low:+.3f}, {r.diff_high:+.3f}] {r.verdict}"
                         if r.diff is not None else r.verdict)
        expected = "block" if o.change.regression else "promote"
        got = ("**blocked**" if not o.decision.promote else "promoted") + ("" if o.ok else " (WRONG)")
        strict = o.strict.status if o.strict is not None else ""
        lines.append(f"| {o.change.name} | {o.changed} | {expected} | {got} ({o.decision.status}) | {strict} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)



def _fake_server_class() -> type:
    """The tests' fake OpenAI-compatible server, loaded from its file (the tests folder is not a package
    on the path of a script run as `python benchmarks/gate_power.py`)."""
    spec = importlib.util.spec_from_file_location("fake_llm_server", ROOT / "tests" / "fake_llm_server.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]  # its dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.FakeLLMServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generator", default="local",
                        help="'local': the embedded default's models, evaluation set and gate; 'extractive': "
                             f"a fake extractive generator; or a litellm model string (e.g. {TINY_MODEL})")
    parser.add_argument("--limit", type=int, default=None, help="use the first N questions only")
    parser.add_argument("--changes", default=None,
                        help="comma-separated planted changes to run, in this order "
                             "(name prefixes, e.g. 'top_k,no-op'); default all")
    parser.add_argument("--sizes", default="8,16,24", help="also gate on the first N questions, for each N")
    parser.add_argument("--questions", choices=("default", "zenml"), default="default",
                        help="with --generator local: the default's evaluation set (generated first, ~30 min) or "
                             "the ZenML question set of the bundled corpus (no generation)")
    parser.add_argument("--markdown", default=None, help="write the tables to this Markdown file too")
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.sizes.split(",") if n.strip())
    started = time.perf_counter()
    only = tuple(name.strip() for name in args.changes.split(",") if name.strip()) if args.changes else ()
    outcomes, per_size, n, gate = run(args.generator, args.limit, GATE, sizes, only, args.questions)
    out = [f"Gate power: {n} questions, generator {args.generator}, "
           f"{time.perf_counter() - started:.0f} s in all", "", table(outcomes, gate), ""]
    for o in outcomes:
        if not o.decision.promote:
            out.append(f"- {o.change.name}: " + "; ".join(reason_lines(o.decision)))
    if per_size:
        out += ["", "The gate on the first N questions only (regressed and hold block; hold: an undecided "
                "gated metric with fewer than min_n items):", "",
                "| N | " + " | ".join(o.change.name for o in outcomes) + " |",
                "|---|" + "---|" * len(outcomes)]
        for size, blocked in per_size.items():
            out.append(f"| {size} | " + " | ".join(blocked[o.change.name] for o in outcomes) + " |")
    text = "\n".join(out)
    print(text)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
