"""The ZenML dashboard in headless Chromium, as a person sees it: log in, open a run, check that its
graph draws, read an artifact's visualization.

One driver for `scripts/dashboard_check.py` (any server: the team stack, `python run.py dashboard`)
and `tests/integration/test_dashboard_browser.py`. Playwright (requirements/dev.txt) drives Debian's
Chromium (`apt-get install -y --no-install-recommends chromium`) through `executable_path`, so no
browser is downloaded.

    with DashboardBrowser("http://127.0.0.1:8237", "default", "") as browser:
        steps = browser.open_run(run_id)                      # the step nodes the graph shows
        text = browser.visualization_text(artifact_node("build_report_step", "report"), "Gate: PROMOTED")
        browser.screenshot(Path("reports/dashboard.png"))

Selectors are the dashboard's as of ZenML 0.98: graph nodes are `.react-flow__node` with `data-id`
`step/<step>` and `<step>/outputs/step_output/<artifact>`; an artifact opens in a side sheet
(`role=dialog`) with a Visualization tab; an HTML visualization waits behind "Load Preview" and then
renders in a sandboxed iframe.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page, Playwright

# What the dashboard writes in place of the graph when GET /runs/{id}/dag fails.
DAG_ERROR = "There was an error loading the DAG visualization"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1500, "height": 1000}  # the graph and the artifact sheet side by side


class DashboardError(RuntimeError):
    """The dashboard did not show what was expected, or could not be reached; the message says which."""


def chromium_path() -> str | None:
    """Debian's Chromium, or None when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def artifact_node(step: str, artifact: str) -> str:
    """The graph node id of a step's output artifact."""
    return f"{step}/outputs/step_output/{artifact}"


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
        raise DashboardError(f"{method or 'GET'} {path} answered HTTP {error.code}: {error.read()[:300]!r}") from None
    except urllib.error.URLError as error:
        raise DashboardError(f"no ZenML server at {server_url}: {error.reason}") from None


def login(server_url: str, username: str, password: str) -> Session:
    """Log in as the dashboard's form does (POST /api/v1/login); the server answers with its session cookie."""
    body = urllib.parse.urlencode({"username": username, "password": password}).encode()
    answer, headers = _api(server_url, "/login", data=body)
    name, _, rest = headers.get("set-cookie", "").partition("=")
    if not name.startswith("zenml-server"):
        raise DashboardError("the login answer set no session cookie")
    return Session(name, rest.split(";", 1)[0], answer["access_token"])


def mark_survey_answered(server_url: str, session: Session) -> None:
    """Answer the dashboard's first-run form for this user, as a person does once.

    The form shows while the user has no e-mail choice and no `finished_onboarding_survey` in its
    metadata (`zenml_env.skip_dashboard_survey` does the same through the client for a local store).
    The e-mail choice goes through the endpoint the form itself calls: ZenML 0.98's general user
    update drops that field.
    """
    user, _ = _api(server_url, "/current-user?hydrate=true", token=session.token)
    _api(server_url, f"/users/{user['id']}/email-opt-in", token=session.token, method="PUT",
         json_body={"name": user["name"], "email_opted_in": False})
    metadata = {**(user.get("metadata") or {}).get("user_metadata", {}), "finished_onboarding_survey": True}
    _api(server_url, f"/users/{user['id']}", token=session.token, method="PUT",
         json_body={"name": user["name"], "user_metadata": metadata})


# (step names of the graph's visible step nodes, or None while it loads, or the error text)
GRAPH_STATE = """
(error) => {
  if (document.body && document.body.innerText.includes(error)) return {error: true};
  const shown = [...document.querySelectorAll('.react-flow__node-step')].filter(node => {
    const box = node.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  }).map(node => node.dataset.id.replace(/^step\\//, ''));
  return shown.length ? {steps: shown} : null;
}
"""


class DashboardBrowser:
    """One logged-in Chromium page on a ZenML server's dashboard; a context manager."""

    def __init__(self, server_url: str, username: str, password: str, *, timeout_s: float = 120,
                 chromium: str | None = None) -> None:
        self.server_url = server_url.rstrip("/")
        self.username, self.password = username, password
        self.timeout_ms = timeout_s * 1000
        self.chromium = chromium or chromium_path()
        self._playwright: Playwright | None = None
        self._page: Page | None = None

    def __enter__(self) -> DashboardBrowser:
        if self.chromium is None:
            raise DashboardError("chromium is not installed: apt-get install -y --no-install-recommends chromium")
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise DashboardError("the playwright package is not installed: "
                                 "pip install -r requirements/dev.txt") from None
        session = login(self.server_url, self.username, self.password)
        mark_survey_answered(self.server_url, session)
        self._playwright = sync_playwright().start()
        try:
            browser = self._playwright.chromium.launch(executable_path=self.chromium, args=CHROMIUM_FLAGS)
            context = browser.new_context(viewport=VIEWPORT)
            context.add_cookies([{"name": session.cookie_name, "value": session.cookie_value,
                                  "url": self.server_url, "httpOnly": True}])
            # what the dashboard's login form stores besides the cookie; without it the app shows the form
            context.add_init_script("localStorage.setItem('isAuthenticated', 'true')")
            self._page = context.new_page()
            self._page.set_default_timeout(self.timeout_ms)
        except BaseException:
            self._playwright.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._playwright is not None:
            self._playwright.stop()  # closes the browser it launched
        self._playwright = self._page = None

    @property
    def page(self) -> Page:
        if self._page is None:
            raise DashboardError("DashboardBrowser is used outside its `with` block")
        return self._page

    def open_run(self, run_id: str) -> list[str]:
        """Open the run's page and wait for its graph: the names of the step nodes it shows.

        Raises `DashboardError` when the dashboard says the graph failed to load (the server's
        `get_pipeline_run_dag` raised) or when no step node shows up in time.
        """
        self.page.goto(f"{self.server_url}/projects/default/runs/{run_id}")
        try:
            state = self.page.wait_for_function(GRAPH_STATE, arg=DAG_ERROR, polling=250).json_value()
        except Exception as error:  # playwright's TimeoutError: say what was missing
            raise DashboardError(f"run {run_id}: no step node of the graph showed up ({error})") from None
        if state.get("error"):
            raise DashboardError(f"run {run_id}: the dashboard says {DAG_ERROR!r}")
        # A graph larger than the page draws only the nodes in view (and draws in passes): zoom out
        # over it until no new step shows up, then wait until the steps shown stay the same.
        steps = set(state["steps"])
        graph = self.page.locator(".react-flow__pane").first.bounding_box()
        if graph:
            self.page.mouse.move(graph["x"] + graph["width"] / 2, graph["y"] + graph["height"] / 2)
        unchanged = 0
        deadline = time.monotonic() + self.timeout_ms / 1000
        while unchanged < 3 and time.monotonic() < deadline:
            if graph:
                self.page.mouse.wheel(0, 400)
            time.sleep(0.4)
            now = set((self.page.evaluate(GRAPH_STATE, DAG_ERROR) or {}).get("steps") or ())
            unchanged = unchanged + 1 if now <= steps else 0
            steps |= now
        return sorted(steps)

    def visualization_text(self, node_id: str, expect: str) -> str:
        """Click an artifact node of the open run's graph, open its Visualization and return the
        rendered text once it contains `expect` (the text of the page and of its frames: an HTML
        visualization renders in a sandboxed iframe). The artifact sheet stays open (screenshot it).
        """
        page = self.page
        close = page.get_by_role("dialog")
        if close.count():  # one sheet at a time: the next node's click lands on the graph
            page.keyboard.press("Escape")
            close.wait_for(state="hidden")
        node = page.locator(f".react-flow__node[data-id={json.dumps(node_id)}]")
        if node.count() == 0:
            raise DashboardError(f"the graph has no node {node_id!r}")
        node.click()
        sheet = page.get_by_role("dialog")
        sheet.get_by_role("tab", name="Visualization").click()
        # HTML visualizations wait behind this button (the dashboard's guard against scripts)
        sheet.get_by_role("button", name="Load Preview").click()
        deadline = time.monotonic() + self.timeout_ms / 1000
        text = ""
        while time.monotonic() < deadline:
            text = self._rendered_text()
            if expect in text:
                return text
            time.sleep(0.5)
        raise DashboardError(f"{node_id}: {expect!r} not in the rendered visualization; it shows: {text[-1500:]!r}")

    def _rendered_text(self) -> str:
        texts = []
        for frame in self.page.frames:
            try:
                texts.append(frame.evaluate("document.body ? document.body.innerText : ''"))
            except Exception:  # a frame navigating or detached between listing and reading
                continue
        return "\n".join(texts)

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path))
        return path
