"""ragwatch: the one command.

    python run.py                      the full evaluation on the embedded default (offline)
    python run.py init                 a config for your documents, labelled set and system
    python run.py ingest|testset|evaluate|full [--config FILE] [--no-cache]
    python run.py full --estimate      calls, tokens, dollars and wall time per role, no LLM call
    python run.py --quick              a first look in minutes on about a dozen items (decides nothing)
    python run.py compare [RUN ...]    metric differences with intervals and verdicts
    python run.py calibrate            a judge against human labels (HaluEval sample by default)
    python run.py calibrate-fit --features F.jsonl [--labels L.jsonl]
                                       refit the faithfulness judge's shipped calibration on labelled statements
    python run.py review export|import human labels on judged items -> prediction-powered estimates
    python run.py review serve         label them in a local web page (127.0.0.1:8239)
    python run.py review plan --width W how many labels buy an interval W wide, what they cost
    python run.py schedule add|list|remove|serve
    python run.py watch [--once]       evaluate on every change of the system under test
    python run.py dashboard            the local ZenML dashboard on 127.0.0.1
    python run.py config show [PIPELINE] the resolved config, each value with the file it came from
    python run.py monitor [--window 1d] [--at DATE] [--estimate]
                                       logged answers of a window, evaluated as answered, drift vs earlier windows
    python run.py export --otlp-endpoint URL [--run RUN]  a run's results as OpenTelemetry evaluation events

`ragwatch` (after `pip install .`) is the same command. Relative paths inside a config file
resolve against that file's directory; reports go to reports/ under the current directory (or the
config's `reports_dir`). Without --config the bundled configs/ are used (the checkout's, or the
copies an installed package carries). The ZenML store is `.zenml_home/` of the project: $RAGWATCH_HOME
if set, else the checkout, else the current directory (or the nearest one above it holding a store).

Exit codes: 0 success, 1 the gate did not promote (a regression, or a hold under gate.inconclusive),
2 bad input or configuration, 3 could not evaluate (the system under test unreachable, the LLM budget
reached, or the judges failing; the last line says which and what to do; the run is nobody's baseline).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from ragwatch_zenml.env import BUNDLED, configure_environment, ensure_repository

configure_environment()

if TYPE_CHECKING:
    from ragwatch.config import FullConfig
    from ragwatch.estimate import Estimate


QUICK_HELP = ("a first look in minutes: about a dozen items, which decide nothing (never promoted, never a "
              "baseline; docs/quick-look.md)")


def _add_config(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--config", help=f"YAML config file; relative paths in it resolve against its "
                                         f"directory (default: the bundled {default})")
    parser.set_defaults(bundled_config=default)


def build_parser() -> argparse.ArgumentParser:
    prog = "ragwatch" if sys.argv[0].endswith("ragwatch") else "run.py"  # the console script or the file
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    init = commands.add_parser("init", help="write a config for your documents, labelled set and system",
                               description="Asks for your documents, an optional labelled set and the system "
                                           "under test (or takes the flags; never asks when stdin is not a "
                                           "terminal), writes a commented config checked to run, prints the "
                                           "commands to estimate and run it.")
    init.add_argument("--docs", action="append", help="documents: a file, folder or glob (repeatable)")
    init.add_argument("--labels", help="a labelled question set: .jsonl, .csv, LlamaIndex rag_dataset.json or "
                                       "a Hugging Face dataset directory")
    init.add_argument("--system", help="builtin (default), callable:package.module:function or http:URL")
    init.add_argument("--out", default="ragwatch.yaml", help="the config file to write (default: ragwatch.yaml)")
    init.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    for name, help_text in (
        ("ingest", "load, chunk and embed the corpus into a versioned index"),
        ("testset", "build the evaluation set (synthetic pairs and imported labelled sets)"),
        ("evaluate", "evaluate the system under test on the latest index and evaluation set"),
        ("full", "ingest, testset and evaluate in one run (the default command)"),
    ):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _add_config(sub, f"configs/{name}.yaml")
        sub.add_argument("--no-cache", action="store_true", help="re-run every step")
        sub.add_argument("--estimate", action="store_true",
                         help="print the run's calls, tokens, cost and wall time per role and judge stage, "
                              "without one LLM call, and exit")
        sub.add_argument("--zenml-config", help="a ZenML run configuration (docker/orchestrator settings), "
                                                "e.g. deploy/kubernetes/zenml_run_config.yaml")
        if name in ("evaluate", "full"):
            sub.add_argument("--quick", action="store_true", default=argparse.SUPPRESS, help=QUICK_HELP)

    compare = commands.add_parser("compare", help="compare evaluation runs",
                                  description="Compare RUN (default: the last that evaluated its system) with "
                                              "that system's previous run and production, or two runs given "
                                              "as NEW OLD (runs of two systems: a comparison of systems, "
                                              "not a regression).")
    compare.add_argument("runs", nargs="*", metavar="RUN", help="run names or ids, newest first")
    _add_config(compare, "configs/evaluate.yaml")

    calibrate = commands.add_parser("calibrate", help="measure a judge against human labels",
                                    description="Run a judge on a human-labelled set and report accuracy, "
                                                "balanced accuracy, F1 and Cohen's kappa with intervals.")
    _add_config(calibrate, "configs/calibrate.yaml")
    calibrate.add_argument("--limit", type=int, help="evaluate at most this many items")
    calibrate.add_argument("--dataset", help="a labelled JSONL/CSV file instead of the config's dataset "
                           "(e.g. data/judge_dev/rag_statements/calibrate.jsonl)")
    calibrate.add_argument("--labels", action="store_true", help="measure the judges of an evaluation run "
                                                                  "against your human_labels (review import)")
    calibrate.add_argument("--run", help="with --labels: run name or id (default: the newest run that evaluated "
                                                 "its system, not a --quick look)")
    calibrate.add_argument("--write-threshold", action="store_true",
                           help="write the tuned weighted-mode threshold into the --config file")

    commands.add_parser("calibrate-fit", add_help=False,
                              help="refit the faithfulness judge's calibration on labelled statements "
                                  "(calibrate-fit --help for its options)")

    review = commands.add_parser("review", help="human labels on judged items (export a sample, import labels)",
                                 description="Export a seeded stratified sample of a run's judged items for "
                                             "people to label; import the filled file as human_labels.")
    review_actions = review.add_subparsers(dest="action", metavar="ACTION", required=True)
    export = review_actions.add_parser("export", help="write a review sample (CSV and JSONL)")
    export.add_argument("--run", help="run name or id (default: the newest run that evaluated its system, "
                                      "not a --quick look)")
    export.add_argument("--n", type=int, default=50, help="items to sample (default 50)")
    export.add_argument("--metric", action="append", help="judged metric to label (repeatable; default: "
                                                          "every LLM-judged metric)")
    export.add_argument("--seed", type=int, default=0)
    export.add_argument("--design", choices=("active", "uniform"), default="active",
                        help="active: more items where the judge is unsure, weighted back (default); uniform")
    export.add_argument("--out", default="reviews", help="directory for the files (default: reviews/)")
    import_ = review_actions.add_parser("import", help="validate a filled review file and store its labels")
    import_.add_argument("file", help="the CSV or JSONL written by review export, label columns filled")
    import_.add_argument("--run", help="the run the file was exported from (default: its run_id column)")
    review_serve = review_actions.add_parser("serve", help="label the review sample in a local web page",
                                             description="A page on 127.0.0.1 that shows one sampled item at a "
                                                         "time (keys y/n, 1-5, s skip, u undo); every label is "
                                                         "stored at once and saved as human_labels.")
    review_serve.add_argument("--run", help="run name or id (default: the newest run that evaluated its "
                                            "system, not a --quick look)")
    review_serve.add_argument("--metric", action="append", help="judged metric to label (repeatable; default: "
                                                                "every LLM-judged metric)")
    review_serve.add_argument("--n", type=int, default=30, help="items in the sample, the progress target (default 30)")
    review_serve.add_argument("--seed", type=int, default=0, help="the sample's seed, as for review export (default 0)")
    review_serve.add_argument("--design", choices=("active", "uniform"), default="active",
                              help="active: more items where the judge is unsure, weighted back (default); uniform")
    review_serve.add_argument("--port", type=int, default=8239, help="port on 127.0.0.1 (default 8239)")
    review_serve.add_argument("--reviewer", help="your name, kept with each label")
    review_serve.add_argument("--duration", type=float, help="stop after this many seconds")
    plan = review_actions.add_parser("plan", help="labels and judge calls that buy a wanted interval width, "
                                                  "their cost; then what the labels bought")
    plan.add_argument("--run", help="run name or id (default: the newest run that evaluated its system)")
    plan.add_argument("--metric", help="judged metric (default: the run's first judged metric)")
    plan.add_argument("--width", type=float, required=True, help="wanted width of the 95%% interval, in the "
                                                                 "metric's units (e.g. 0.10)")
    plan.add_argument("--seconds-per-label", type=float, help="a reader's time per answer (default 30)")

    schedule = commands.add_parser("schedule", help="run a pipeline on a cron schedule",
                                   description="Native ZenML schedules on orchestrators that have them; "
                                               "otherwise a local scheduler (`schedule serve`).")
    actions = schedule.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="add a schedule")
    add.add_argument("--cron", required=True, help="5 fields (min hour day month weekday) or 6 with seconds first")
    add.add_argument("--pipeline", default="full", choices=["ingest", "testset", "evaluate", "full", "monitor"],
                     help="monitor: with --config a monitor config (configs/monitor.yaml)")
    _add_config(add, "configs/full.yaml")
    actions.add_parser("list", help="list local schedules")
    remove = actions.add_parser("remove", help="remove a local schedule")
    remove.add_argument("id")
    serve = actions.add_parser("serve", help="run the local schedules until Ctrl-C")
    serve.add_argument("--max-runs", type=int, help="stop after this many runs")
    serve.add_argument("--timeout", type=float, help="stop after this many seconds")

    watch = commands.add_parser("watch", help="evaluate whenever the system under test changes",
                                description="Poll the configuration fingerprint, the corpus and the ZenML "
                                            "model versions; evaluate once per change.")
    _add_config(watch, "configs/full.yaml")
    watch.add_argument("--interval", type=float, default=60.0, help="seconds between checks (default 60)")
    watch.add_argument("--once", action="store_true", help="check once and exit (for cron and CI)")

    config = commands.add_parser("config", help="show the resolved configuration of a run")
    config_actions = config.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = config_actions.add_parser("show", help="every key, its value and where it came from (a file or the "
                                                  "default)")
    show.add_argument("pipeline", nargs="?", default="full", choices=["ingest", "testset", "evaluate", "full"])
    show.add_argument("--config", help="YAML config file (default: the bundled configs/<pipeline>.yaml)")
    monitor = commands.add_parser("monitor", help="evaluate a window of logged answers and compare it for drift",
                                  description="Read a log (JSONL/CSV, OpenInference spans, Langfuse traces), "
                                              "evaluate a window of it as it was answered (no generator call) and "
                                              "compare it, unpaired, with the previous and the reference window. "
                                              "Exit code 1 when a metric drifted for the worse. "
                                              "See docs/monitoring.md.")
    _add_config(monitor, "configs/monitor.yaml")
    monitor.add_argument("--window", help="the window's length, e.g. 1d, 12h, 7d (default: the config's, 1d)")
    monitor.add_argument("--at", help="the window's end, ISO 8601 (default: the end of the last logged day, UTC)")
    monitor.add_argument("--estimate", action="store_true", help="print the bill for the sampled windows and exit")
    monitor.add_argument("--no-cache", action="store_true", help="re-run every step")

    export_otlp = commands.add_parser("export", help="send a run's results to an OTLP endpoint (Phoenix, Langfuse)",
                                      description="Per-item scores, metric levels with their intervals and the "
                                                  "verdict of an evaluation run as OpenTelemetry GenAI evaluation "
                                                  "events; items from a log join their logged traces. See "
                                                  "docs/monitoring.md (Export to OpenTelemetry).")
    export_otlp.add_argument("--otlp-endpoint", required=True, help="OTLP/HTTP URL, e.g. http://127.0.0.1:6006 "
                                                                    "(/v1/traces is added when missing)")
    export_otlp.add_argument("--run", help="run name or id (default: the newest completed evaluation run)")
    export_otlp.add_argument("--project", help="Phoenix project of the spans (openinference.project.name)")

    dashboard = commands.add_parser("dashboard", help="the local ZenML dashboard on 127.0.0.1")
    dashboard.add_argument("--port", type=int, default=8237)
    dashboard.add_argument("--duration", type=float, help="stop after this many seconds")
    return parser


def cmd_pipeline(name: str, config: str, no_cache: bool, zenml_config: str | None = None,
                 estimate: bool = False, quick: bool = False) -> int:
    import time

    from ragwatch.preflight import preflight

    checked = preflight(name, config)  # before ZenML is imported: a typo is answered in about a second
    if quick:
        from ragwatch.quick import QUICK_TAG, quick_banner, quick_config

        if name in ("ingest", "testset"):
            raise ValueError(f"--quick is a look at an evaluation: use it with full or evaluate, not {name}")
        if name == "evaluate":  # the latest evaluation set is the full one: a quick look makes its own
            print("evaluate --quick runs the whole chain on its own small evaluation set (ingest is cached)")
            name, checked = "full", preflight("full", config)
        checked = quick_config(checked)
        print(quick_banner() + "\n")
    if estimate:
        from ragwatch.estimate import estimate_pipeline, format_estimate
        from ragwatch_zenml.commands.runner import latest_inputs

        print(format_estimate(estimate_pipeline(name, checked, latest=latest_inputs())))
        return 0
    planned = _quiet_estimate(name, checked)
    started = time.time()
    from ragwatch.llm.history import start_run

    run_id = start_run()  # this run's usage records carry it: another process's calls are not this run's
    from ragwatch_zenml.commands.runner import format_outcome, run_pipeline

    outcome = run_pipeline(name, config, enable_cache=not no_cache, zenml_config=zenml_config, config=checked,
                           tags=[QUICK_TAG] if quick else None)
    print(format_outcome(outcome))
    if planned is not None:
        from ragwatch.estimate import format_comparison
        from ragwatch.llm.history import read_history

        recorded = read_history(since=started, run_id=run_id)
        if planned.rows or recorded:
            print("\n" + format_comparison(planned, recorded))
    if quick:
        judged = [m.n_scored + m.n_failed for m in (outcome.metrics.metrics.values() if outcome.metrics else [])
                  if m.info.is_judge]
        print("\n" + quick_banner(max(judged) if judged else None))
    if outcome.not_evaluated:  # first and last: the line a scheduled run's log must not bury
        print("\n" + outcome.cause_line())
    return exit_code(outcome, quick=quick)


def exit_code(outcome, *, quick: bool = False) -> int:
    """3 could not evaluate, 1 not promoted, 0 otherwise (the module docstring lists them). A quick look
    decides nothing, so its gate never fails a job; a quick look that could not evaluate still says so."""
    if outcome.not_evaluated:
        return 3
    return 0 if quick else 1 if outcome.regressed else 0


def _quiet_estimate(name: str, config: FullConfig) -> Estimate | None:
    """The estimate of a run about to start, for estimate vs actual afterwards; never stops the run."""
    try:
        from ragwatch.estimate import estimate_pipeline
        from ragwatch_zenml.commands.runner import latest_inputs

        return estimate_pipeline(name, config, latest=latest_inputs())
    except Exception as exc:  # an estimate is a courtesy: a bug in it must not cost the run
        print(f"(no estimate: {type(exc).__name__}: {exc})", file=sys.stderr)
        return None


def cmd_compare(runs: list[str], config: str) -> int:
    from ragwatch.config import FullConfig
    from ragwatch.config_loader import load_config

    settings = load_config(config, FullConfig)  # before ZenML is imported: a typo is answered at once
    from ragwatch_zenml.commands.compare_runs import compare_command

    text, path = compare_command(runs, settings.evaluate.gate, settings.reports_dir)
    print(text)
    print(f"\nHTML: {path} (also the 'run_comparison' artifact)")
    return 0


def cmd_calibrate(config: str, limit: int | None, write: bool = False, dataset: str | None = None) -> int:
    from ragwatch.calibration import CalibrationSettings, run_calibration
    from ragwatch.config_loader import load_config

    settings = load_config(config, CalibrationSettings, path_keys=("dataset",))
    if limit is not None:
        settings = settings.model_copy(update={"limit": limit})
    if dataset is not None:
        settings = settings.model_copy(update={"dataset": str(Path(dataset).expanduser().resolve())})
    report = run_calibration(settings)
    print(report.to_markdown())
    if write:
        from ragwatch.calibration.running import write_threshold

        print(write_threshold(config, report))
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ragwatch_zenml.commands import review

    if args.action == "serve":
        from ragwatch_zenml.commands.review_serve import serve_review

        return serve_review(args.run, args.metric, n=args.n, seed=args.seed, port=args.port, reviewer=args.reviewer,
                            duration_s=args.duration, design=args.design)
    if args.action == "plan":
        print(review.plan_review(args.run, args.metric, args.width, seconds_per_label=args.seconds_per_label))
        return 0
    if args.action == "export":
        csv_path, jsonl_path, summary = review.export_review(args.run, args.n, args.metric, args.seed,
                                                             Path(args.out), design=args.design)
        print(f"{summary}\nwrote {csv_path} and {jsonl_path}: fill the label: columns of either, then "
              f"`python run.py review import {csv_path}`")
        return 0
    outcome = review.import_review(args.file, args.run)
    print(review.format_import(outcome, args.file))
    return 2 if outcome.problems else 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from ragwatch_zenml.commands import scheduling

    store = scheduling.ScheduleStore()
    if args.action == "add":
        if scheduling.active_orchestrator_schedulable():
            if args.pipeline == "monitor":
                from ragwatch_zenml.commands.monitor import schedule_monitor

                print(schedule_monitor(args.cron, args.config))
                return 0
            print(scheduling.create_native_schedule(args.cron, args.pipeline, args.config))
            return 0
        schedule = store.add(args.cron, args.pipeline, args.config)
        print(f"added local schedule {schedule.id}: {schedule.pipeline} at '{schedule.cron}' (UTC)\n"
              "the local orchestrator cannot run schedules itself: keep `python run.py schedule serve` running")
    elif args.action == "list":
        print(scheduling.describe(store.list()))
    elif args.action == "remove":
        if not store.remove(args.id):
            print(f"no local schedule {args.id!r}; see `python run.py schedule list`", file=sys.stderr)
            return 2
        print(f"removed schedule {args.id}")
    else:
        runs = scheduling.serve(store, max_runs=args.max_runs, timeout_s=args.timeout)
        print(f"scheduler stopped after {runs} run(s)")
    return 0


def cmd_watch(config: str, interval: float, once: bool) -> int:
    from ragwatch_zenml.commands.runner import format_outcome, run_pipeline
    from ragwatch_zenml.commands.watch import watch

    worst = 0

    def evaluate():
        return run_pipeline("full", config)

    def report(changes: list[str], outcome) -> None:
        nonlocal worst
        print("change: " + "; ".join(changes))
        print(format_outcome(outcome), flush=True)
        worst = max(worst, exit_code(outcome))

    watch(config, evaluate, interval_s=interval, max_checks=1 if once else None, on_change=report)
    if once and worst == 0:
        print("watch: evaluated every change (or there was none)")
    return worst


def main(argv: list[str] | None = None) -> int:
    import os
    from pathlib import Path

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["calibrate-fit"]:  # its options are the fit's own (no ZenML store needed)
        from ragwatch.judges.faithfulness.fit import main as fit_main

        return fit_main(argv[1:], prog=f"{sys.argv[0]} calibrate-fit")
    args = build_parser().parse_args(argv)
    # A --config is where the user stands; without one, the checkout's bundled config. The current
    # directory is never changed: reports land under it, paths in a config resolve against the config.
    if hasattr(args, "bundled_config"):
        args.config = str(Path(args.config).resolve()) if args.config else str(BUNDLED / args.bundled_config)
    for name in ("file", "out"):  # review paths, also relative to where the user stands
        if getattr(args, name, None):
            setattr(args, name, str(Path(getattr(args, name)).resolve()))
    ensure_repository()
    from ragwatch.config_loader import ConfigError

    try:
        if args.command in (None, "ingest", "testset", "evaluate", "full"):
            name = args.command or "full"
            config = getattr(args, "config", None) or str(BUNDLED / "configs" / "full.yaml")
            return cmd_pipeline(name, config, getattr(args, "no_cache", False), getattr(args, "zenml_config", None),
                                getattr(args, "estimate", False), getattr(args, "quick", False))
        if args.command == "init":
            from ragwatch_zenml.commands.init import init_command

            return init_command(args.docs, args.labels, args.system, args.out, args.force, f"python {sys.argv[0]}"
                                if sys.argv[0].endswith(".py") else "ragwatch")
        if args.command == "compare":
            return cmd_compare(args.runs, args.config)
        if args.command == "calibrate" and args.labels:
            from ragwatch_zenml.commands.review import calibrate_on_labels

            print(calibrate_on_labels(args.run))
            return 0
        if args.command == "calibrate":
            return cmd_calibrate(args.config, args.limit, args.write_threshold, args.dataset)
        if args.command == "review":
            return cmd_review(args)
        if args.command == "schedule":
            return cmd_schedule(args)
        if args.command == "monitor":
            from ragwatch_zenml.commands.monitor import monitor_command

            code, text = monitor_command(args.config, at=args.at, window=args.window, estimate=args.estimate,
                                         no_cache=args.no_cache)
            print(text)
            return code
        if args.command == "export":
            from ragwatch_zenml.commands.export import export_command

            code, text = export_command(args.otlp_endpoint, args.run, args.project)
            print(text)
            return code
        if args.command == "watch":
            return cmd_watch(args.config, args.interval, args.once)
        if args.command == "config":
            from ragwatch.config_show import show_config

            print(show_config(args.config or BUNDLED / "configs" / f"{args.pipeline}.yaml", args.pipeline))
            return 0
        from ragwatch_zenml.commands.dashboard import run_dashboard

        return run_dashboard(args.port, args.duration)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        if os.environ.get("RAGWATCH_DEBUG"):
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        if os.environ.get("RAGWATCH_DEBUG") or "Pipeline run has failed" not in str(exc):
            raise
        # ZenML has already logged the failing step's own error above; skip its orchestrator traceback.
        print(f"error: {exc}; the step's error is printed above (RAGWATCH_DEBUG=1 shows the traceback)",
              file=sys.stderr)
        return 2


def cli() -> None:
    """The `ragwatch` console script (`pip install .`) and `python run.py`."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
