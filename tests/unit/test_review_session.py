"""The review page's core (no ZenML): items as the page shows them, the append-only label log, undo,
two tabs, restarts, the judge withheld until an item is labelled, agreement and the PPI preview; and
the HTTP layer on 127.0.0.1 (host check, JSON only, port in use)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ragwatch.judges.faithfulness.verify import context_windows
from ragwatch.results import ItemScore, MetricInfo, MetricResult
from ragwatch.review.hints import judge_windows
from ragwatch.review.labels import HumanLabel, HumanLabels, remove_labels
from ragwatch.review.log import LabelEvent, LabelLog, replay
from ragwatch.review.sample import review_sample
from ragwatch.review.server import PortInUseError, ReviewApp, attach, make_server
from ragwatch.review.session import ReviewSession
from ragwatch.statements import StatementVerdict

CONTEXT = ("ZenML runs pipelines on the local orchestrator by default. Steps run one after another.\n\n"
           "A failure hook runs when a step fails. Attach it with on_failure.")


def _run(n: int = 8) -> tuple[list[dict], dict[str, MetricResult]]:
    """A run of `n` items: faithfulness statement by statement (2 statements) and a 1-5 correctness."""
    rows, faith, corr = [], [], []
    for i in range(n):
        item_id = f"q{i}"
        answer = "The local orchestrator is the default. A failure hook runs when a step fails."
        rows.append({"item_id": item_id, "question": f"question {i}?", "answer": answer, "contexts": [CONTEXT, "other"],
                     "context_sources": ["docs/local.md", "docs/other.md"], "reference_answer": "local"})
        verdicts = [1, i % 2]
        statements = ["The local orchestrator is the default.", "A failure hook runs when a step fails."]
        reasons = ["the context says local is default", "on_failure hook"]
        faith.append(ItemScore(item_id=item_id, score=sum(verdicts) / 2, details={
            "statements": statements, "reason": "...",
            "verdicts": [StatementVerdict(statement=s, verdict=bool(v), reason=r, window=1).model_dump()
                         for s, v, r in zip(statements, verdicts, reasons, strict=True)]}))
        corr.append(ItemScore(item_id=item_id, score=float(1 + i % 5), details={"reason": f"score {1 + i % 5}"}))
    judged = {
        "faithfulness": MetricResult.from_items("faithfulness", faith, info=MetricInfo(
            prompt_version="faithfulness-v4", family="judge")),
        "correctness": MetricResult.from_items("correctness", corr, info=MetricInfo(
            scale=(1.0, 5.0), prompt_version="v2", family="judge")),
    }
    judged["faithfulness"].details["max_context_tokens"] = 1500
    return rows, judged


def _session(tmp_path: Path, **kw) -> ReviewSession:
    rows, judged = _run()
    return ReviewSession.start(rows, judged, LabelLog(tmp_path / "run.labels.jsonl"), run_id="run-1",
                               run_name="full-1", n=kw.pop("n", 6), **kw)


def test_the_sample_is_the_exports_and_the_judge_is_withheld_until_labelled(tmp_path: Path) -> None:
    session = _session(tmp_path, metrics=["faithfulness", "correctness"])
    rows, judged = _run()
    exported = review_sample(rows, judged, n=6, metric_names=["faithfulness", "correctness"], seed=0, run_id="run-1")
    assert [it.item_id for it in session.items] == [r["item_id"] for r in exported.rows]
    assert [it.inclusion_prob for it in session.items] == [r["inclusion_prob"] for r in exported.rows]

    item = session.items[0]
    assert [t.kind for t in item.tasks] == ["statements", "scale"]
    assert item.tasks[0].statement_spans[0] == (0, len("The local orchestrator is the default."))
    assert [p.source for p in item.passages] == ["docs/local.md", "docs/other.md"]
    assert session.item_view(0)["judge"] is None  # no anchoring

    session.label("t1", item.item_id, "faithfulness", statements=[1, 0])
    assert session.item_view(0)["judge"] is None  # correctness still open
    out = session.label("t1", item.item_id, "correctness", value=4)
    judge = out["item"]["judge"]
    assert judge["correctness"]["score"] == judged["correctness"].items[int(item.item_id[1:])].score
    pointer = judge["faithfulness"]["statements"][1]["pointer"]
    assert CONTEXT[pointer["start"]:pointer["end"]] == "A failure hook runs when a step fails."
    assert pointer["window"] == 1 and pointer["window_passages"] == [0, 1]
    assert out["item"]["labels"]["faithfulness"]["value"] == 0.5  # the share of supported statements


def test_labels_are_validated_as_review_import_validates(tmp_path: Path) -> None:
    session = _session(tmp_path, metrics=["faithfulness", "correctness"])
    item = session.items[0].item_id
    with pytest.raises(ValueError, match="outside the metric's scale 1-5"):
        session.label("t1", item, "correctness", value=7)
    with pytest.raises(ValueError, match="send 2 yes/no marks"):
        session.label("t1", item, "faithfulness", statements=[1])
    with pytest.raises(ValueError, match="not in this review sample"):
        session.label("t1", "ghost", "correctness", value=3)
    with pytest.raises(ValueError, match="has no 'similarity'"):
        session.label("t1", item, "similarity", value=1)
    assert replay(session.log.events()).current == {}


def test_undo_two_tabs_and_a_restart(tmp_path: Path) -> None:
    session = _session(tmp_path, metrics=["correctness"])
    a, b = session.items[0].item_id, session.items[1].item_id
    session.label("tab-A", a, "correctness", value=2, seen=0)
    first = session.label("tab-B", a, "correctness", value=5, seen=0)  # B had not seen A's label
    assert first["notice"] and "another tab" in first["notice"]
    assert first["event"]["replaced"]["value"] == 2 and first["event"]["replaced"]["tab"] == "tab-A"
    again = session.label("tab-B", a, "correctness", value=4, seen=first["event"]["seq"])
    assert again["notice"] is None  # B saw its own label: no conflict
    session.label("tab-A", b, "correctness", value=3)

    undone = session.undo("tab-B")  # B's last label returns to B's previous one
    assert undone["index"] == 0 and undone["item"]["labels"]["correctness"]["value"] == 5
    session.undo("tab-B")
    assert session.item_view(0)["labels"]["correctness"]["value"] == 2  # back to A's
    with pytest.raises(LookupError, match="nothing to undo"):
        session.undo("tab-B")

    session.skip("tab-A", session.items[2].item_id)
    with session.log.path.open("ab") as handle:
        handle.write(b'{"kind": "label", "item_id": "q')  # a kill in the middle of a line
    restarted = _session(tmp_path, metrics=["correctness"])
    state = restarted.labelled_state()
    assert {k: e.value for k, e in state.current.items()} == {(a, "correctness"): 2.0, (b, "correctness"): 3.0}
    assert restarted.next_index(state) == 3  # neither labelled nor skipped
    restarted.label("tab-C", session.items[3].item_id, "correctness", value=1)
    assert restarted.log.skipped_lines  # the torn line is its own line, ignored
    assert replay(LabelLog(restarted.log.path).events()).current.keys() == restarted.labelled_state().current.keys()


def test_two_processes_share_one_log(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    one, two = LabelLog(path), LabelLog(path)
    threads = [threading.Thread(target=lambda log=log, k=k: [log.append(LabelEvent(
        kind="label", tab=f"t{k}", item_id=f"i{k}-{j}", metric="m", value=1.0)) for j in range(25)])
        for k, log in enumerate((one, two))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = LabelLog(path).events()
    assert [e.seq for e in events] == list(range(1, 51))
    assert len({e.item_id for e in events}) == 50


def test_agreement_and_estimate_follow_the_labels(tmp_path: Path) -> None:
    session = _session(tmp_path, metrics=["faithfulness"])
    for k, item in enumerate(session.items[:4]):
        judge_marks = [int(bool(s.supported)) for s in item.judge["faithfulness"].statements]
        marks = judge_marks if k else [1 - judge_marks[0], judge_marks[1]]  # one disagreement
        session.label("t", item.item_id, "faithfulness", statements=marks)
    state = session.state("t")
    row = state["agreement"][0]
    assert row["n"] == 8 and row["items"] == 4 and row["unit"] == "statements"
    assert row["accuracy"]["value"] == pytest.approx(7 / 8)
    est = state["estimates"][0]
    assert est["n_labels"] == 4 and est["ci"][0] <= est["score"] <= est["ci"][1]
    assert state["labelled"] == 4 and state["target"] == 6 and state["can_undo"]


def test_judge_windows_match_the_faithfulness_judge() -> None:
    passages = ["a" * 900 + ". " + "b" * 700, "c" * 300, "d" * 2000]
    spans = judge_windows(passages, 1000)
    assert [[passages[p][s:e] for p, s, e in window] for window in spans] == context_windows(passages, 1000)


def test_remove_labels_takes_back_only_its_own() -> None:
    labels = HumanLabels().merge([HumanLabel(item_id="q1", metric="m", value=1.0),
                                  HumanLabel(item_id="q2", metric="m", value=0.0)], source="page.jsonl")
    labels = labels.merge([HumanLabel(item_id="q2", metric="m", value=1.0)], source="sheet.csv")
    out = remove_labels(labels, [("q1", "m"), ("q2", "m")], source="page.jsonl")
    assert [lab.item_id for lab in out.labels] == ["q2"]
    assert (out.history[-1].item_id, out.history[-1].new) == ("q1", None)


def _request(url: str, body: dict | None = None, host: str | None = None, content_type: str = "application/json"):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": content_type, **({"Host": host} if host else {})}
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_http_api(tmp_path: Path) -> None:
    session = _session(tmp_path, metrics=["correctness"])
    changes = []
    server = make_server(0)
    attach(server, ReviewApp(session, on_change=lambda: changes.append(1)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        status, page = _request(base + "/")
        assert status == 200 and b"/page.js" in page
        status, body = _request(base + "/api/state?tab=t")
        assert status == 200 and json.loads(body)["target"] == 6
        item = session.items[0].item_id
        status, body = _request(base + "/api/label", {"tab": "t", "item_id": item, "metric": "correctness", "value": 9})
        assert status == 400 and "outside the metric's scale" in json.loads(body)["error"]
        status, body = _request(base + "/api/label", {"tab": "t", "item_id": item, "metric": "correctness", "value": 3})
        assert status == 200 and json.loads(body)["item"]["judge"] is not None and changes == [1]
        status, _ = _request(base + "/api/label", {"tab": "t", "item_id": item, "metric": "correctness", "value": 3},
                             content_type="text/plain")
        assert status == 415  # a cross-site form cannot post
        status, _ = _request(base + "/api/state", host="evil.example:80")
        assert status == 403
        status, body = _request(base + "/api/undo", {"tab": "other"})
        assert status == 409 and "nothing to undo" in json.loads(body)["error"]
        with pytest.raises(PortInUseError, match="is in use"):
            make_server(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_held_by_another_program_is_reported(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        with pytest.raises(PortInUseError, match=f"port {other.getsockname()[1]} on 127.0.0.1 is in use"):
            make_server(other.getsockname()[1])


def test_the_reading_aid_comes_from_the_statement_alone(tmp_path: Path) -> None:
    rows, judged = _run()
    flipped = judged["faithfulness"].model_copy(deep=True)
    for item in flipped.items:  # the judge's verdicts and reasons changed: the aid must not move
        item.details["verdicts"] = [{**v, "verdict": not v["verdict"], "reason": "something else entirely"}
                                    for v in item.details["verdicts"]]
    a = ReviewSession.start(rows, judged, LabelLog(tmp_path / "a.jsonl"), run_id="r", run_name="r", n=6,
                            metrics=["faithfulness"])
    b = ReviewSession.start(rows, {**judged, "faithfulness": flipped}, LabelLog(tmp_path / "b.jsonl"), run_id="r",
                            run_name="r", n=6, metrics=["faithfulness"])
    hints = a.item_view(0)["tasks"][0]["hints"]
    assert hints == b.item_view(0)["tasks"][0]["hints"]
    first = hints[1][0]
    assert CONTEXT[first["start"]:first["end"]] == "A failure hook runs when a step fails."


def _raw(port: int, request: bytes, *, timeout: float = 10.0) -> tuple[int, dict]:
    """Send `request` as it is over a new connection; the status and JSON answer (read to EOF)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1."), answer[:200]  # answered, not dropped
    return int(head.split()[1]), json.loads(body)


def _post(path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def test_every_malformed_request_gets_an_answer_and_the_server_stays_up(tmp_path: Path) -> None:
    session = _session(tmp_path, metrics=["faithfulness", "correctness"])
    server = make_server(0, read_timeout_s=1.0)
    attach(server, ReviewApp(session))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    item = session.items[0].item_id

    def label(**fields) -> bytes:
        body = json.dumps({"tab": "t", "item_id": item, **fields}).encode()
        return _post("/api/label", body, {"Content-Length": str(len(body))})

    nested = b'{"tab": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    big = json.dumps({"tab": "t", "pad": "x" * (200 * 1024)}).encode()
    cases = {
        "statements is a number": (label(metric="faithfulness", statements=3), 400, "send 2 yes/no marks"),
        "statements is text": (label(metric="faithfulness", statements="10"), 400, "send 2 yes/no marks"),
        "a mark is a list": (label(metric="faithfulness", statements=[[1], 0]), 400, "1 (supported) or 0"),
        "value is an object": (label(metric="correctness", value={"a": 1}), 400, "not a dict"),
        "value is missing": (label(metric="correctness"), 400, "send value"),
        "value is empty": (label(metric="correctness", value=""), 400, "send value"),
        "value is a huge integer": (label(metric="correctness", value=10**400), 400, "outside the metric's scale"),
        "seen is text": (label(metric="correctness", value=3, seen="x"), 400, "seen is the seq"),
        "30,000 nested brackets": (_post("/api/label", nested, {"Content-Length": str(len(nested))}), 400,
                                   "nests too deeply"),
        "Content-Length: abc": (_post("/api/label", b"{}", {"Content-Length": "abc"}), 400,
                                "Content-Length 'abc' is not the body's size"),
        "Content-Length: -1": (_post("/api/label", b'{"tab": "t"}', {"Content-Length": "-1"}), 400,
                               "Content-Length '-1' is not the body's size"),
        "two Content-Lengths": (_post("/api/undo", b"{}", {"Content-Length": "2", "content-length": "3"}), 400,
                                "conflicting Content-Length"),
        "a chunked body": (_post("/api/undo", b"2\r\n{}\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"}), 411,
                           "Content-Length"),
        "not JSON": (_post("/api/undo", b"{tab", {"Content-Length": "4"}), 400, "not JSON"),
        "not UTF-8": (_post("/api/undo", b'"\xff"', {"Content-Length": "3"}), 400, "not UTF-8"),
        "a JSON list": (_post("/api/undo", b"[1]", {"Content-Length": "3"}), 400, "not a list"),
        "a body larger than the cap": (_post("/api/skip", big, {"Content-Length": str(len(big))}), 413,
                                       "request too large"),
        "a body shorter than announced": (_post("/api/undo", b'{"tab"', {"Content-Length": "100"}), 408,
                                          "100 bytes announced, then nothing more for 1 s"),
    }
    try:
        for name, (request, status, reason) in cases.items():
            started = time.monotonic()
            got, answer = _raw(port, request)
            assert (got, reason in answer["error"]) == (status, True), (name, got, answer)
            assert time.monotonic() - started < 5.0, name  # answered at once (the stalled body: after 1 s)
        # a client that never sends its body is cut off by the read timeout, answered 408
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(_post("/api/undo", b"", {"Content-Length": "10"}))
            assert sock.recv(65536).startswith(b"HTTP/1.0 408")
        # still up: a good label is stored
        body = json.dumps({"tab": "t", "item_id": item, "metric": "correctness", "value": 3}).encode()
        status, answer = _raw(port, _post("/api/label", body, {"Content-Length": str(len(body))}))
        assert status == 200 and answer["event"]["value"] == 3.0
        assert len(replay(session.log.events()).current) == 1  # none of the bad requests wrote a label
    finally:
        server.shutdown()
        server.server_close()


def test_the_read_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="read_timeout_s must be > 0"):
        make_server(0, read_timeout_s=0)
