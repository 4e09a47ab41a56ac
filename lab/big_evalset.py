"""A big evaluation set end to end: `run.py evaluate` on N labelled questions with a hosted judge.

Writes, in a temporary directory: a small corpus, a labelled set of N questions (JSONL, document
relevance, reference answers), and a config whose generator and judges are a fake OpenAI-compatible
server on 127.0.0.1 (latency L per call, concurrency C; replies valid under whatever schema a judge
asks for). Then, with a fresh ZenML store (`ZENML_CONFIG_PATH` in the same directory), runs
`run.py ingest`, `run.py testset` and, measured with /usr/bin/time -v, `run.py evaluate`, with output
to a log file (not a terminal, as in CI). Prints wall time, peak RSS, provider calls, the ideal
time (calls * L / C), progress lines seen, and the size of the HTML report.

Usage:
    python -m lab.big_evalset                       # N=5000, latency 1 s, concurrency 32
    python -m lab.big_evalset --n 500 --judges correctness faithfulness --keep
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from tests.fake_llm_server import FakeLLMServer, schema_reply  # noqa: E402

TOPICS = ["stacks", "pipelines", "artifacts", "models", "secrets", "schedules", "caching", "metadata"]


def write_corpus(folder: Path, n_docs: int) -> list[str]:
    folder.mkdir(parents=True)
    names = []
    for d in range(n_docs):
        topic = TOPICS[d % len(TOPICS)]
        body = "\n\n".join(
            f"Section {s} of the guide to {topic}, part {d}. The {topic} component number {d * 10 + s} "
            f"keeps its settings in a file named {topic}_{d}_{s}.yaml and is registered with one command."
            for s in range(6)
        )
        name = f"{topic}_{d}.md"
        (folder / name).write_text(f"# {topic.title()} part {d}\n\n{body}\n")
        names.append(name)
    return names


def write_evalset(path: Path, n: int, docs: list[str]) -> None:
    with path.open("w") as out:
        for i in range(n):
            doc = docs[i % len(docs)]
            topic, part = doc.removesuffix(".md").split("_")
            out.write(json.dumps({
                "id": f"q{i:05d}",
                "question": f"Question {i}: which file keeps the settings of {topic} component "
                            f"{int(part) * 10 + i % 6} in part {part}?",
                "reference_answer": f"{topic}_{part}_{i % 6}.yaml",
                "relevant": [doc],
            }) + "\n")


def write_config(path: Path, api_base: str, concurrency: int, judges: list[str]) -> None:
    llm = {"model": "openai/fake-judge", "api_base": api_base, "concurrency": concurrency, "max_tokens": 256}
    config = {
        "ingest": {"corpus": {"paths": ["corpus"]}},
        "testset": {
            "synthetic": False,
            "imports": [{"format": "jsonl", "path": "evalset.jsonl", "relevance_kind": "document"}],
        },
        "evaluate": {
            "system": {"generator": {**llm, "model": "openai/fake-generator", "max_tokens": 128}},
            "e2e": {"enabled": False},
            "judges": {"enabled": judges, "llm": llm},
        },
    }
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML


STEP_STARTED = re.compile(r"Step (\w+) has started")
STEP_FINISHED = re.compile(r"Step (\w+) has finished in (?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(
    command: list[str], env: dict[str, str], log: Path, timed: bool = False, per_step: dict[str, float] | None = None
) -> tuple[float, int | None]:
    """Run `run.py <command>` with output to `log`; (wall seconds, peak RSS in KiB when timed).
    `per_step` collects the peak RSS (MiB, sampled each second) while each ZenML step ran."""
    argv = [sys.executable, str(ROOT / "run.py"), *command]
    if timed:
        argv = ["/usr/bin/time", "-v", *argv]
    started = time.perf_counter()
    with log.open("w") as out:
        child = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent)
        while child.poll() is None:
            if per_step is not None:
                sample_rss(child.pid, log, per_step)
            time.sleep(1.0)
        code = child.returncode
    wall = time.perf_counter() - started
    text = log.read_text(errors="replace")
    if code not in (0, 1):  # 1: the gate found a regression, still a complete run
        tail = "\n".join(text.splitlines()[-30:])
        raise SystemExit(f"run.py {' '.join(command)} failed with exit code {code}; log {log}:\n{tail}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return wall, int(rss.group(1)) if rss else None


def sample_rss(pid: int, log: Path, per_step: dict[str, float]) -> None:
    import psutil

    try:
        processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        rss = sum(p.memory_info().rss for p in processes) / 2**20
    except psutil.Error:
        return
    steps = STEP_STARTED.findall(ANSI.sub("", log.read_text(errors="replace")))
    step = steps[-1] if steps else "(before the first step)"
    per_step[step] = max(per_step.get(step, 0.0), rss)


def step_seconds(log_text: str) -> dict[str, float]:
    """Wall seconds of each finished ZenML step, from its "Step x has finished in 4m2s" line."""
    out = {}
    for name, h, m, sec in STEP_FINISHED.findall(ANSI.sub("", log_text)):
        out[name] = 3600 * float(h or 0) + 60 * float(m or 0) + float(sec or 0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000, help="questions in the evaluation set")
    parser.add_argument("--docs", type=int, default=40, help="documents in the corpus")
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--judges", nargs="+", default=["correctness"])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, report)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ragwatch-big-"))
    docs = write_corpus(work / "corpus", args.docs)
    write_evalset(work / "evalset.jsonl", args.n, docs)
    env = {
        **os.environ,
        "ZENML_CONFIG_PATH": str(work / "zenml"),
        "RAGWATCH_CACHE_DIR": str(work / "cache"),
        "PYTHONUNBUFFERED": "1",
    }
    with FakeLLMServer(responder=schema_reply, latency_s=args.latency, lifetime_s=7200) as server:
        write_config(work / "config.yaml", server.base_url, args.concurrency, args.judges)
        config = ["--config", str(work / "config.yaml")]
        for step in ("ingest", "testset"):
            wall, _ = run([step, *config], env, work / f"{step}.log")
            print(f"run.py {step}: {wall:.0f}s")
        server.reset_counts()
        per_step: dict[str, float] = {}
        wall, rss = run(["evaluate", *config], env, work / "evaluate.log", timed=True, per_step=per_step)
        calls, peak = server.calls, server.peak_in_flight
    log = (work / "evaluate.log").read_text(errors="replace")
    progress = [line for line in log.splitlines() if re.search(r"\d+/\d+ \(\d+%\)", line)]
    reports = sorted(work.rglob("*.html"), key=lambda p: p.stat().st_mtime)
    ideal = calls * args.latency / args.concurrency
    print(
        f"run.py evaluate, {args.n} questions, judges {args.judges}, fake server latency {args.latency}s, "
        f"concurrency {args.concurrency}: wall {wall:.0f}s, peak RSS {rss / 1024 if rss else float('nan'):.0f} MiB, "
        f"provider calls {calls} (ideal {ideal:.0f}s at full concurrency, wall/ideal {wall / max(ideal, 1e-9):.2f}), "
        f"peak in flight {peak}, progress lines {len(progress)}"
    )
    print("peak RSS while each step ran (MiB, sampled each second): " + ", ".join(
        f"{step} {mib:.0f}" for step, mib in per_step.items()
    ))
    seconds = step_seconds(log)
    print("wall time of each step (s): " + ", ".join(f"{step} {t:.0f}" for step, t in seconds.items()))
    for report in reports[-2:]:
        print(f"report {report.name}: {report.stat().st_size / 1e6:.1f} MB")
    if args.keep:
        print(f"kept {work} (logs: ingest.log, testset.log, evaluate.log)")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
