"""Check that a run's `report` renders in the ZenML dashboard: headless Chromium, as a person sees it.

Logs in to the dashboard of the server the client points at (`ZENML_STORE_URL`, with
`ZENML_STORE_USERNAME`/`ZENML_STORE_PASSWORD`: `eval "$(scripts/team_stack.sh env)"`), opens the
run's page, clicks the `report` artifact in the DAG, and looks for the gate's verdict in the
rendered visualization. Exit 0 when it is there, 1 when not, 2 on bad input.

    python scripts/dashboard_check.py [RUN] [--screenshot reports/dashboard.png]

The dashboard first asks every new user for a name and an optional e-mail (the "survey"); this
check marks that form as answered for its user, as a person does by filling it in once.
Needs Debian's `chromium` (apt-get install -y --no-install-recommends chromium).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1500,1100",
                  # keep the sandboxed visualization iframe in the page's process, where DevTools reads it
                  "--disable-site-isolation-trials", "--disable-features=IsolateOrigins,site-per-process"]
VERDICTS = {True: "Gate: PROMOTE", False: "Gate: DO NOT PROMOTE"}


class CheckError(RuntimeError):
    """The check cannot run; the message says why."""


@dataclass
class Target:
    run_id: str
    run_name: str
    verdict: str  # the text the report shows for this run's gate decision


def find_target(run: str | None) -> Target:
    """The run (default: the latest with a report) and the verdict its report must show."""
    from zenml.client import Client

    client = Client()
    if run:
        candidates = [client.get_pipeline_run(run)]
    else:
        candidates = list(client.list_pipeline_runs(sort_by="desc:created", size=20))
    for candidate in candidates:
        steps = candidate.steps
        if "track_evaluation" in steps and "build_report_step" in steps:
            gate = steps["track_evaluation"].outputs["gate"][0].load()
            return Target(str(candidate.id), candidate.name, VERDICTS[bool(gate.promote)])
    raise CheckError("no evaluation run with a report found; run `python run.py full` first")


@dataclass
class Session:
    cookie_name: str
    cookie_value: str
    token: str


def _api(server_url: str, path: str, *, token: str | None = None, data: bytes | None = None,
         method: str | None = None, json_body: Any = None) -> tuple[Any, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if json_body is not None:
        data, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
    request = urllib.request.Request(f"{server_url}/api/v1{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response), response.headers
    except urllib.error.HTTPError as error:
        raise CheckError(f"{method or 'GET'} {path} answered HTTP {error.code}: {error.read()[:300]!r}") from None


def login(server_url: str, username: str, password: str) -> Session:
    """Log in as the dashboard does (POST /api/v1/login); the server answers with its session cookie."""
    body = urllib.parse.urlencode({"username": username, "password": password}).encode()
    answer, headers = _api(server_url, "/login", data=body)
    name, _, rest = headers.get("set-cookie", "").partition("=")
    if not name.startswith("zenml-server"):
        raise CheckError("the login answer set no session cookie")
    return Session(name, rest.split(";", 1)[0], answer["access_token"])


def mark_survey_answered(server_url: str, session: Session) -> None:
    """Answer the dashboard's first-run form for this user, as a person does once.

    The form shows while the user has no e-mail choice and no `finished_onboarding_survey` in its
    metadata. The e-mail choice goes through the endpoint the form itself calls: ZenML 0.98's
    general user update drops that field.
    """
    user, _ = _api(server_url, "/current-user?hydrate=true", token=session.token)
    _api(server_url, f"/users/{user['id']}/email-opt-in", token=session.token, method="PUT",
         json_body={"name": user["name"], "email_opted_in": False})
    metadata = {**(user.get("metadata") or {}).get("user_metadata", {}), "finished_onboarding_survey": True}
    _api(server_url, f"/users/{user['id']}", token=session.token, method="PUT",
         json_body={"name": user["name"], "user_metadata": metadata})


class DevTools:
    """A minimal Chrome DevTools Protocol client over one page's websocket."""

    def __init__(self, websocket_url: str) -> None:
        from websockets.sync.client import connect

        # entered by hand: the connection lives as long as this object (closed in `close`)
        self._ws = connect(websocket_url, max_size=None, open_timeout=30).__enter__()
        self._next_id = 0

    def call(self, method: str, timeout_s: float = 60, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        self._ws.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout_s
        while True:
            message = json.loads(self._ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise CheckError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str, timeout_s: float = 60) -> Any:
        result = self.call("Runtime.evaluate", timeout_s=timeout_s, expression=expression,
                           awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise CheckError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def page_text(self) -> str:
        """Text of the page and of every frame (visualizations render in a sandboxed iframe)."""
        texts = [self.evaluate("document.body ? document.body.innerText : ''") or ""]
        pending = [self.call("Page.getFrameTree")["frameTree"]]
        while pending:
            node = pending.pop()
            for child in node.get("childFrames", []):
                pending.append(child)
                # an isolated world reaches into frames the page's own scripts may not
                context = self.call("Page.createIsolatedWorld", frameId=child["frame"]["id"])["executionContextId"]
                result = self.call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                                   contextId=context, returnByValue=True)
                texts.append(result.get("result", {}).get("value") or "")
        return "\n".join(texts)

    def close(self) -> None:
        self._ws.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(predicate, timeout_s: float, what: str, interval_s: float = 1.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise CheckError(f"timed out after {timeout_s:.0f} s waiting for {what}")


# Clicks an artifact node of the run graph; its id is "<step>/outputs/step_output/<artifact name>".
CLICK_NODE = """
(() => {
  const node = document.querySelector('.react-flow__node[data-id=' + JSON.stringify(%s) + ']');
  if (!node) return false;
  (node.querySelector("button") || node).click();
  return true;
})()
"""
REPORT_NODE = "build_report_step/outputs/step_output/report"
# Opens the "Visualization" tab of the artifact sheet (Radix tabs switch on mousedown, not click).
OPEN_VISUALIZATION = """
(() => {
  const sheet = document.querySelector('[role=dialog]');
  const tab = sheet && [...sheet.querySelectorAll('[role=tab]')].find(t => t.innerText.trim() === 'Visualization');
  if (!tab) return false;
  for (const type of ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click'])
    tab.dispatchEvent(new MouseEvent(type, {bubbles: true, cancelable: true, button: 0}));
  return true;
})()
"""
# HTML visualizations wait behind a "Load Preview" button (the dashboard's guard against scripts).
LOAD_PREVIEW = """
(() => {
  const sheet = document.querySelector('[role=dialog]');
  const button = sheet && [...sheet.querySelectorAll('button')].find(b => b.innerText.trim() === 'Load Preview');
  if (!button) return false;
  button.click();
  return true;
})()
"""


def check(server_url: str, username: str, password: str, target: Target, screenshot: Path | None,
          timeout_s: float = 180) -> bool:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise CheckError("chromium is not installed: apt-get install -y --no-install-recommends chromium")
    port = _free_port()
    profile = tempfile.mkdtemp(prefix="ragwatch-chromium-")
    browser = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--remote-debugging-port={port}",
                                f"--user-data-dir={profile}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tools = None
    try:
        def page_socket() -> str | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as response:
                    pages = [t for t in json.load(response) if t.get("type") == "page"]
            except OSError:
                return None
            return pages[0]["webSocketDebuggerUrl"] if pages else None

        tools = DevTools(_wait_for(page_socket, 60, "chromium's DevTools endpoint"))
        tools.call("Page.enable")
        session = login(server_url, username, password)
        mark_survey_answered(server_url, session)
        tools.call("Network.setCookie", name=session.cookie_name, value=session.cookie_value, url=server_url,
                   httpOnly=True)
        # what the dashboard's login form stores besides the cookie
        tools.call("Page.addScriptToEvaluateOnNewDocument", source="localStorage.setItem('isAuthenticated', 'true')")
        tools.call("Page.navigate", url=f"{server_url}/projects/default/runs/{target.run_id}")
        _wait_for(lambda: tools.evaluate(CLICK_NODE % json.dumps(REPORT_NODE)), timeout_s,
                  "the run graph's 'report' node")
        _wait_for(lambda: tools.evaluate(OPEN_VISUALIZATION), timeout_s, "the artifact's Visualization tab")
        _wait_for(lambda: tools.evaluate(LOAD_PREVIEW), timeout_s, "the visualization's Load Preview button")
        found = _wait_for(lambda: target.verdict in tools.page_text(), timeout_s,
                          f"{target.verdict!r} in the report visualization", interval_s=3)
        return bool(found)
    finally:
        if screenshot is not None and tools is not None:
            try:
                data = tools.call("Page.captureScreenshot", format="png")["data"]
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(base64.b64decode(data))
            except Exception as error:  # the screenshot is evidence, not the check
                print(f"dashboard_check: no screenshot ({error})", file=sys.stderr)
        if tools is not None:
            tools.close()
        browser.terminate()
        try:
            browser.wait(timeout=20)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)


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
    from zenml_env import configure_environment

    configure_environment()
    try:
        target = find_target(args.run)
        ok = check(server_url.rstrip("/"), username, password, target, args.screenshot, args.timeout)
    except CheckError as error:
        print(f"dashboard_check: FAILED: {error}", file=sys.stderr)
        return 1
    print(f"dashboard_check: run {target.run_name}: the dashboard shows {target.verdict!r} "
          f"in the report visualization" if ok else "dashboard_check: verdict not found")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
