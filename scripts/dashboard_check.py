"""Check that a run draws and its `report` renders in the ZenML dashboard: headless Chromium, as a person sees it.

Logs in to the dashboard of the server the client points at (`ZENML_STORE_URL`, with
`ZENML_STORE_USERNAME`/`ZENML_STORE_PASSWORD`: `eval "$(scripts/team_stack.sh env)"`), opens the
run's page, waits for its graph (the dashboard's "There was an error loading the DAG visualization"
fails the check), clicks the `report` artifact and looks for the gate's verdict in the rendered
visualization. Exit 0 when it is there, 1 when not, 2 on bad input.

    python scripts/dashboard_check.py [RUN] [--screenshot reports/dashboard.png]

The dashboard first asks every new user for a name and an optional e-mail (the "survey"); this
check marks that form as answered for its user, as a person does by filling it in once.
Needs Debian's `chromium` (apt-get install -y --no-install-recommends chromium) and Playwright
(requirements/dev.txt). The browser logic is `orchestration/dashboard_browser.py`, which
`tests/integration/test_dashboard_browser.py` drives too.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from ragwatch_zenml.commands.dashboard_browser import DashboardBrowser, DashboardError, artifact_node  # noqa: E402


@dataclass
class Target:
    run_id: str
    run_name: str
    verdict: str  # the text the report shows for this run's gate decision


def find_target(run: str | None) -> Target:
    """The run (default: the latest with a report) and the verdict its report must show."""
    from zenml.client import Client

    from ragwatch.report.summary import gate_label

    client = Client()
    if run:
        candidates = [client.get_pipeline_run(run)]
    else:
        candidates = list(client.list_pipeline_runs(sort_by="desc:created", size=20))
    for candidate in candidates:
        steps = candidate.steps
        if "track_evaluation" in steps and "build_report_step" in steps:
            gate = steps["track_evaluation"].outputs["gate"][0].load()
            # the report's own wording (summary.gate_label), whatever the decision was
            return Target(str(candidate.id), candidate.name, f"Gate: {gate_label(gate)}")
    raise DashboardError("no evaluation run with a report found; run `python run.py full` first")


def check(server_url: str, username: str, password: str, target: Target, screenshot: Path | None,
          timeout_s: float = 180) -> None:
    """Raise DashboardError unless the run's graph draws and its report shows the verdict."""
    with DashboardBrowser(server_url, username, password, timeout_s=timeout_s) as browser:
        try:
            browser.open_run(target.run_id)
            browser.visualization_text(artifact_node("build_report_step", "report"), target.verdict)
        finally:
            if screenshot is not None:
                try:
                    browser.screenshot(screenshot)
                except Exception as error:  # the screenshot is evidence, not the check
                    print(f"dashboard_check: no screenshot ({error})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="run name or id (default: the latest evaluation run)")
    parser.add_argument("--screenshot", type=Path, help="save what the browser shows as a PNG")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for each page state")
    args = parser.parse_args(argv)
    server_url = os.environ.get("ZENML_STORE_URL", "")
    username, password = os.environ.get("ZENML_STORE_USERNAME"), os.environ.get("ZENML_STORE_PASSWORD")
    if not server_url.startswith("http") or not username or password is None:
        print("dashboard_check: point the client at a ZenML server with a user first: "
              'eval "$(scripts/team_stack.sh env)"', file=sys.stderr)
        return 2
    from ragwatch_zenml.env import configure_environment

    configure_environment()
    try:
        target = find_target(args.run)
        check(server_url.rstrip("/"), username, password, target, args.screenshot, args.timeout)
    except DashboardError as error:
        print(f"dashboard_check: FAILED: {error}", file=sys.stderr)
        return 1
    print(f"dashboard_check: run {target.run_name}: the graph draws and the dashboard shows "
          f"{target.verdict!r} in the report visualization")
    return 0


if __name__ == "__main__":
    sys.exit(main())
