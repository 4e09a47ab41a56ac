"""How close `--estimate`'s stage times come to a real run's: replays the estimate against the stage
times a run recorded in its usage history, and prints the ratio estimate / actual per stage.

Give it the usage history of a machine that made a real run (`<cache root>/usage/history.jsonl`, e.g.
`~/.cache/ragwatch/usage/history.jsonl` after `make run`) and the config that run used. It picks a run
(the newest, or `--run <id>`) and compares, per (model, stage):

1. rate x recorded calls: the seconds per call `--estimate` reads from the history (`stage_rate`) times
   the calls the run really sent, against the run's wall time: the time model alone;
2. the whole estimate: `estimate_pipeline` on the config (a cold LLM cache, as a first run sends every
   call; no store, so answers and judges are counted on stand-ins) against the run: calls, tokens and
   wall time, the workload and the rate together.

The history it reads is what `full --estimate` run just after that run would read: every record up to
the run's last (`--held-out`: only other runs' records from before the run began, i.e. the prediction
made before it). Nothing is sent; the history file is only read.

Usage:
    python -m benchmarks estimate_accuracy ~/.cache/ragwatch/usage/history.jsonl
    python -m benchmarks estimate_accuracy HISTORY --config my.yaml --run 3f2c... --held-out
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from ragwatch.config import FullConfig  # noqa: E402
from ragwatch.config_loader import load_config  # noqa: E402
from ragwatch.estimate import estimate_pipeline  # noqa: E402
from ragwatch.llm.history import StageRecord, read_history, stage_rate  # noqa: E402

TARGET = 0.25  # the bar: within 25% of the actual stage time on an idle machine


def pick_run(records: Sequence[StageRecord], run_id: str | None) -> str:
    """`run_id` when it has records, else the run whose last record is newest among runs that sent calls."""
    runs = {r.run_id for r in records if r.run_id and r.calls > 0}
    if run_id is not None:
        if run_id not in runs:
            raise SystemExit(f"run {run_id!r} sent no calls in this history; runs that did: {sorted(runs)[:10]}")
        return run_id
    if not runs:
        raise SystemExit("the history holds no run with a run id that sent calls: make a run (python run.py) first")
    return max(runs, key=lambda run: max(r.time for r in records if r.run_id == run))


def history_for(records: Sequence[StageRecord], run: Sequence[StageRecord], held_out: bool) -> list[StageRecord]:
    """What an estimate next to the run reads: up to the run's last record, or (held out) before its first."""
    if held_out:
        begun = min(r.time for r in run)
        return [r for r in records if r.time < begun and r.run_id != run[0].run_id]
    ended = max(r.time for r in run)
    return [r for r in records if r.time <= ended]


def stage_totals(records: Sequence[StageRecord]) -> dict[tuple[str, str], dict[str, float]]:
    out: dict[tuple[str, str], dict[str, float]] = {}
    for r in records:
        t = out.setdefault((r.model, r.stage), {"calls": 0, "cache_hits": 0, "prompt_tokens": 0,
                                                "completion_tokens": 0, "wall_s": 0.0})
        for name in t:
            t[name] += getattr(r, name)
    return out


def cold(config: FullConfig) -> FullConfig:
    """The config with every LLM role's cache off: the estimate counts every call, as a first run sends it."""
    config = config.model_copy(deep=True)
    for settings in [config.testset.generator, config.evaluate.system.generator, config.evaluate.judges.llm,
                     *config.evaluate.judge_panel]:
        settings.cache = False
    return config


def _ratio(estimated: float, actual: float) -> str:
    if actual <= 0:
        return "-"
    ratio = estimated / actual
    return f"{ratio:.2f}" + ("" if abs(ratio - 1) <= TARGET else " !")


def replay(records: Sequence[StageRecord], config: FullConfig, *, run_id: str | None = None,
           pipeline: str | None = None, held_out: bool = False) -> str:
    """The report: per stage, rate x recorded calls and the whole estimate against the run's times."""
    chosen = pick_run(records, run_id)
    run = [r for r in records if r.run_id == chosen]
    history = history_for(records, run, held_out)
    pipeline = pipeline or ("full" if any(r.stage.startswith("testset") for r in run) else "evaluate")
    actual = stage_totals(run)
    lines = [f"run {chosen}: {len(run)} records, {sum(t['calls'] for t in actual.values()):.0f} calls, "
             f"{sum(t['wall_s'] for t in actual.values()):.1f} s of LLM stages; rates from "
             + (f"{len(history)} records before it (held out)" if held_out else
                f"{len(history)} records up to its end (as `{pipeline} --estimate` right after it reads them)"),
             "", "1. the history's seconds per call x the calls the run sent (the time model alone)"]
    head = f"{'stage':<34} {'model':<30} {'calls':>6} {'actual':>9} {'estimate':>9} {'ratio':>7}  rate"
    lines += [head, "-" * len(head)]
    for (model, stage), t in actual.items():
        if not t["calls"]:
            continue
        rate = stage_rate(history, model, stage)
        est = t["calls"] * rate.seconds_per_call if rate else None
        lines.append(f"{stage[:34]:<34} {model[:30]:<30} {t['calls']:>6.0f} {t['wall_s']:>8.1f}s "
                     + (f"{est:>8.1f}s {_ratio(est, t['wall_s']):>7}  {rate.describe()}" if rate and est is not None
                        else f"{'-':>9} {'-':>7}  no rate: no other run of this model and stage"))
    estimate = estimate_pipeline(pipeline, cold(config), history=history, latest=None)
    cached = sum(t["cache_hits"] for t in actual.values())
    lines += ["", f"2. the whole estimate (`{pipeline}`, a cold LLM cache, stand-ins; {estimate.seconds:.1f} s) "
              "against the run"
              + (f": the run had {cached:.0f} cache hits, which a cold estimate counts as calls" if cached else "")]
    head = (f"{'stage':<34} {'calls est/act':>14} {'in tok est/act':>18} {'out tok est/act':>16} "
            f"{'wall est/act':>16} {'ratio':>7}  time from")
    lines += [head, "-" * len(head)]
    keys = list(dict.fromkeys([(r.model, r.stage) for r in estimate.rows] + list(actual)))
    totals = [0.0, 0.0]
    for model, stage in keys:
        rows = [r for r in estimate.rows if (r.model, r.stage) == (model, stage)]
        t = actual.get((model, stage), {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "wall_s": 0.0})
        wall = sum(r.wall_s for r in rows)
        totals[0] += wall
        totals[1] += t["wall_s"]
        source = rows[0].time_source if rows else "not in the estimate"
        pairs = [f"{sum(getattr(r, name) for r in rows)}/{t[name]:.0f}"
                 for name in ("calls", "prompt_tokens", "completion_tokens")]
        walls = f"{wall:.0f}/{t['wall_s']:.0f}s"
        lines.append(f"{stage[:34]:<34} {pairs[0]:>14} {pairs[1]:>18} {pairs[2]:>16} {walls:>16} "
                     f"{_ratio(wall, t['wall_s']):>7}  {source}")
    lines.append(f"{'TOTAL':<34} {'':>14} {'':>18} {'':>16} {f'{totals[0]:.0f}/{totals[1]:.0f}s':>16} "
                 f"{_ratio(*totals):>7}")
    lines += ["", f"ratio = estimate / actual; ! marks a stage off by more than {TARGET:.0%}. The local embedding "
              "(ingest) is not an LLM stage: the usage history does not time it."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("history", type=Path, help="a usage history file (<cache root>/usage/history.jsonl)")
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "full.yaml",
                        help="the config the run used (default: configs/full.yaml, what `make run` runs)")
    parser.add_argument("--run", help="the run id to replay (default: the newest run that sent calls)")
    parser.add_argument("--pipeline", choices=["full", "evaluate"], help="default: full if the run made a testset")
    parser.add_argument("--held-out", action="store_true", help="rates from records before the run only")
    args = parser.parse_args(argv)
    if not args.history.is_file():
        raise SystemExit(f"no history file at {args.history}: after a run it is <cache root>/usage/history.jsonl "
                         "($RAGWATCH_CACHE_DIR, else ~/.cache/ragwatch)")
    records = read_history(path=args.history)
    print(replay(records, load_config(args.config, FullConfig), run_id=args.run, pipeline=args.pipeline,
                 held_out=args.held_out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
