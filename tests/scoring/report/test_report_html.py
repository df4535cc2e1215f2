"""`tracescore report --format html`, checked against `report --format json` and looked at in Chromium.

Real OTLP (the OpenTelemetry SDK and its exporter) → `tracescore serve --specs` (online scoring stores
verdicts) in two batches over time → the report from the running server (its HTTP API) and, after the
server stopped, from the file. The page must show exactly the JSON's figures: per-task rates with the
learning-zone rows highlighted, the pass-rate history per spec, a latency distribution per tool, and
the failing runs with reasons and trace ids. Then headless Chromium renders it (DOM and a screenshot).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer

from scoring.report.text import duration, number
from tests._otel import provider
from tests._server import ServeProcess

SPECS = """
name: weather
select: {task: weather}
expected_tools: [get_weather]
arguments: {get_weather: {city: Paris}}
---
name: refund
select: {task: refund}
expected_tools: [refund_order]
latency: {p95_ms: {refund_order: 50}}
---
name: search
select: {task: search}
expected_tools: [search]
"""

# (task, run, [(tool, arguments, duration ms, errored)], [requested tool names])
Run = tuple[str, str, list[tuple[str, dict[str, Any], float, bool]], list[str]]
BATCH_1: list[Run] = [
    ("weather", "w1", [("get_weather", {"city": "Paris"}, 12, False)], []),
    ("weather", "w2", [("get_weather", {"city": "Paris"}, 30, True)], []),
    ("weather", "w3", [("get_weather", {"city": "Lyon"}, 18, False)], []),
    ("refund", "r1", [("refund_order", {"order": "A1"}, 40, False)], []),
    ("search", "s1", [], ["search"]),
]
BATCH_2: list[Run] = [
    ("weather", "w4", [("get_weather", {"city": "Paris"}, 25, False)], []),
    (
        "weather",
        "w5",
        [("lookup_station", {"city": "Paris"}, 5, False), ("get_weather", {"city": "Paris"}, 400, False)],
        [],
    ),
    ("refund", "r2", [("refund_order", {"order": "B2"}, 90, False)], []),
    ("search", "s2", [("search", {"q": "parcels"}, 15, True)], []),
]
N_VERDICTS = len(BATCH_1) + len(BATCH_2)


def _emit(tracer: Tracer, runs: list[Run]) -> None:
    for task, run_id, tools, requests in runs:
        start = time.time_ns()
        agent = tracer.start_span(
            "invoke_agent shop",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "shop",
                "gen_ai.agent.call.id": run_id,
                "tracescore.task.id": task,
            },
            start_time=start,
        )
        with trace.use_span(agent, end_on_exit=False):
            at = start + 1_000_000
            for name in requests:
                parts = [{"type": "tool_call", "id": f"call-{run_id}", "name": name, "arguments": {}}]
                chat = tracer.start_span(
                    "chat",
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
                    },
                    start_time=at,
                )
                chat.end(end_time=at + 1_000_000)
                at += 2_000_000
            for name, arguments, duration_ms, errored in tools:
                span = tracer.start_span(
                    f"execute_tool {name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.arguments": json.dumps(arguments),
                    },
                    start_time=at,
                )
                if errored:
                    span.set_status(Status(StatusCode.ERROR, "upstream timeout"))
                span.end(end_time=at + int(duration_ms * 1_000_000))
                at += int(duration_ms * 1_000_000) + 1_000_000
        agent.end(end_time=at)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
        env={**os.environ, **(env or {})},
    )


def _stored_verdicts(server: ServeProcess) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.http_port}/api/v1/sql",
        data=json.dumps({"query": "SELECT count(*) FROM verdicts"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(json.loads(response.read())["rows"][0][0])
    except urllib.error.HTTPError:
        return 0  # no verdicts table before the first verdict


def _wait_for_verdicts(server: ServeProcess, count: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _stored_verdicts(server) >= count:
            return
        time.sleep(0.1)
    pytest.fail(f"{count} verdicts were not stored within {timeout_s} s:\n{server.log()}")


@dataclass
class Data:
    directory: Path
    db: Path
    spec_file: Path
    json_report: dict[str, Any]
    plain_json: list[dict[str, Any]]
    html: str
    page: Path
    live_json: dict[str, Any]
    live_html: str
    verdicts: dict[tuple[str, str], dict[str, Any]]
    expected_history: list[tuple[str, str, int, int, int]] = field(default_factory=list)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Data]:
    directory = tmp_path_factory.mktemp("report")
    spec_file = directory / "specs.yaml"
    spec_file.write_text(SPECS)
    server = ServeProcess(directory / "t.duckdb", extra_args=("--specs", str(spec_file))).start()
    try:
        tp = provider(server, "grpc")
        tracer = tp.get_tracer("tests")
        _emit(tracer, BATCH_1)
        tp.force_flush()
        _wait_for_verdicts(server, len(BATCH_1))
        time.sleep(1.2)  # the second batch completes in a later second: two points of history
        _emit(tracer, BATCH_2)
        tp.force_flush()
        tp.shutdown()
        _wait_for_verdicts(server, N_VERDICTS)
        # While serve holds the file, the CLI asks its HTTP API (POST /api/v1/report).
        live = _cli(
            "report", "--db", str(server.db), "--spec", str(spec_file), "--format", "json", "--include", "all"
        )
        assert live.returncode == 0, live.stderr
        live_html = _cli("report", "--db", str(server.db), "--spec", str(spec_file), "--format", "html")
        assert live_html.returncode == 0, live_html.stderr
    finally:
        assert server.stop() == 0, server.log()
    args = ("report", "--db", str(server.db), "--spec", str(spec_file))
    full = _cli(*args, "--format", "json", "--include", "all")
    assert full.returncode == 0, full.stderr
    plain = _cli(*args, "--format", "json")
    page = directory / "report.html"
    html = _cli(*args, "--format", "html", "--output", str(page))
    assert html.returncode == 0 and html.stdout == "", html.stderr
    score = _cli("score", "--db", str(server.db), "--spec", str(spec_file), "--format", "json", "--no-store")
    expected_history = server.query(
        "WITH latest AS (SELECT * FROM verdicts QUALIFY row_number() OVER "
        "(PARTITION BY run_id, spec ORDER BY run_version DESC) = 1) "
        "SELECT spec, strftime(date_trunc('second', runs.completed_at), '%Y-%m-%dT%H:%M:%SZ') AS start, "
        "count(*) FILTER (WHERE label <> 'error'), count(*) FILTER (WHERE label = 'pass'), "
        "count(*) FILTER (WHERE label = 'error') FROM latest JOIN runs USING (run_id) "
        "GROUP BY ALL ORDER BY ALL"
    )
    yield Data(
        directory=directory,
        db=server.db,
        spec_file=spec_file,
        json_report=json.loads(full.stdout),
        plain_json=json.loads(plain.stdout),
        html=page.read_text(),
        page=page,
        live_json=json.loads(live.stdout),
        live_html=live_html.stdout,
        verdicts={(v["run_id"], v["spec"]): v for v in json.loads(score.stdout)},
        expected_history=expected_history,
    )


# --- a small DOM, from the page itself or from what Chromium serialised ---------------------------


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts) + "".join(c.text for c in self.children)

    def find_all(self, tag: str, **attrs: str) -> list[Node]:
        found = []
        for child in self.children:
            wanted = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
            classes = child.attrs.get("class", "").split()
            if child.tag == tag and all(
                (v in classes) if k == "class" else child.attrs.get(k) == v for k, v in wanted.items()
            ):
                found.append(child)
            found.extend(child.find_all(tag, **attrs))
        return found

    def one(self, tag: str, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, (tag, attrs, len(found))
        return found[0]


_VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].parts.append(data)


def dom(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    return builder.root


def _figures_match_the_json(root: Node, report: dict[str, Any]) -> None:
    """Every figure of the JSON report is on the page, as the terminal prints it."""
    rows = root.find_all("tr", class_="task")
    assert len(rows) == len(report["tasks"])
    for task in report["tasks"]:
        row = root.one("tr", data_task=task["task"], data_spec=task["spec"])
        cells = {c.attrs["data-field"]: c for c in row.find_all("td") if "data-field" in c.attrs}
        assert cells["passed"].text == f"{task['n_passed']}/{task['n_scored']}"
        for name in ("pass_rate", "mean_value", "pass_at_k", "pass_hat_k"):
            assert cells[name].text.strip() == number(task[name]), name
            assert json.loads(cells[name].attrs["data-value"]) == task[name], name
        assert cells["k"].text == str(task["k"])
        zone = "zone" in row.attrs["class"].split()
        assert zone is task["in_learning_zone"]
        assert ("learning zone" in row.text) is task["in_learning_zone"]
        for check in task["latency"]:
            assert f"{check['percentile']} {check['tool']} " in row.text
            assert f"{duration(check['observed_ms'])}/{duration(check['bound_ms'])}" in row.text
        # Issue #20: this column was always empty. What the task's clean executions took, or why not.
        observed = task["execution_latency"]
        latency_cell = cells["execution_latency"].text
        if observed["n"]:
            for p in ("p50", "p95", "p99"):
                assert f"{p} {duration(observed[f'{p}_ms'])}" in latency_cell, (task["task"], latency_cell)
            assert f"({observed['n']} clean execution(s))" in latency_cell
        else:
            assert latency_cell.strip() == "no latency data", latency_cell
    for point in report["history"]:
        figure = root.one("figure", class_="history", data_spec=point["spec"])
        circle = figure.one("circle", data_start=point["start"])
        assert json.loads(circle.attrs["data-pass-rate"]) == point["pass_rate"]
        bucket = figure.one("tr", data_start=point["start"])
        assert f"{point['n_passed']}/{point['n_scored']}" in bucket.text
        assert number(point["pass_rate"]) in bucket.text
    for tool in report["tool_latency"]:
        row = root.one("tr", class_="tool", data_tool=tool["tool"])
        cells = {c.attrs["data-field"]: c for c in row.find_all("td") if "data-field" in c.attrs}
        assert cells["n"].text == str(tool["n"]) and cells["n_errored"].text == str(tool["n_errored"])
        if not tool["n"]:
            assert not root.find_all("figure", data_tool=tool["tool"])
            continue
        for name in ("p50_ms", "p95_ms", "p99_ms", "min_ms", "max_ms", "mean_ms"):
            assert cells[name].text == duration(tool[name]), (tool["tool"], name)
        figure = root.one("figure", class_="latency", data_tool=tool["tool"])
        svg = figure.one("svg")
        bars = svg.find_all("rect")
        assert (
            sum(int(b.text.split()[0]) for b in bars) == tool["n"]
        )  # each bar's title starts with its count
        labels = svg.find_all("text", class_="marker-label")
        for key in ("p50", "p95", "p99"):
            marker = svg.one("line", data_percentile=key)
            assert json.loads(marker.attrs["data-value"]) == tool[f"{key}_ms"]
            # Percentiles that print the same share one label (`p95, p99 400 ms`).
            [label] = [t for t in labels if key in t.attrs["data-percentile"].split()]
            assert label.text.endswith(f" {duration(tool[f'{key}_ms'])}"), label.text
            assert label.text.startswith(", ".join(label.attrs["data-percentile"].split()) + " ")
    failing = root.find_all("tr", class_="failing")
    assert len(failing) == len(report["failing_runs"]) == report["failing_runs_total"]
    for run in report["failing_runs"]:
        row = root.one("tr", class_="failing", data_run=run["run_id"], data_spec=run["spec"])
        assert row.attrs["data-trace"] == run["trace_id"]
        assert run["trace_id"] in row.text and run["run_id"] in row.text
        assert run["reason"] in row.text and run["label"] in row.text
        # Long ids print on one line, cut by the stylesheet; the whole id is the text and the tooltip.
        for value in (run["run_id"], run["trace_id"]):
            [shown] = [s for s in row.find_all("span", class_="id") if s.text == value]
            assert shown.attrs["title"] == value
        # The run opens (a <details>, no script) to its failed checks beside its executions.
        detail = root.one("tr", class_="detail", data_run=run["run_id"], data_spec=run["spec"])
        opened = detail.one("details")
        assert f"{run['executions_total']} execution(s)" in opened.one("summary").text
        checks = opened.find_all("li", class_="check")
        assert [c.attrs["data-kind"] for c in checks] == [c["kind"] for c in run["failed_checks"]]
        for shown, check in zip(checks, run["failed_checks"], strict=True):
            assert check["detail"] in shown.text and check["target"] in shown.text
        calls = opened.find_all("tr", class_="execution")
        assert [c.attrs["data-tool"] for c in calls] == [e["tool"] for e in run["executions"]]
        for call, execution in zip(calls, run["executions"], strict=True):
            cells = {c.attrs["data-label"]: c.text for c in call.find_all("td")}
            assert cells["arguments"] == (execution["arguments"] or "-")
            assert cells["result"] == (execution["result"] or "-")
            assert cells["duration"] == duration(execution["duration_ms"])
            assert cells["agent path"] == (execution["agent_path"] or "-")
            if execution["error"]:
                assert execution["error_message"] in cells["error"]
            assert json.loads(call.attrs["data-duration-ms"]) == execution["duration_ms"]


# --- the report's figures --------------------------------------------------------------------------


def test_the_json_report_has_the_expected_figures(data: Data) -> None:
    report = data.json_report
    tasks = {t["task"]: t for t in report["tasks"]}
    assert (tasks["weather"]["n_scored"], tasks["weather"]["n_passed"]) == (5, 3)
    assert tasks["weather"]["in_learning_zone"] is True
    assert (tasks["refund"]["n_passed"], tasks["refund"]["in_learning_zone"]) == (2, False)
    assert (tasks["search"]["n_passed"], tasks["search"]["in_learning_zone"]) == (0, False)
    assert tasks["refund"]["latency_passed"] is False  # p95 of 40, 90 ms is 90 > 50
    # Without --include the JSON is the plain array of task results (`tracescore diff` reads it).
    assert data.plain_json == report["tasks"]

    # Per task, every clean execution of its runs (any tool): weather 12, 18, 25, 400 ms of get_weather
    # and 5 ms of lookup_station (the errored 30 ms call is left out); search has none clean.
    assert tasks["weather"]["execution_latency"] == {"n": 5, "p50_ms": 18, "p95_ms": 400, "p99_ms": 400}
    assert tasks["refund"]["execution_latency"] == {"n": 2, "p50_ms": 40, "p95_ms": 90, "p99_ms": 90}
    assert tasks["search"]["execution_latency"] == {"n": 0}

    latency = {t["tool"]: t for t in report["tool_latency"]}
    weather = latency["get_weather"]  # clean: 12, 18, 25, 400 ms; the errored 30 ms call is left out
    assert (weather["n"], weather["n_errored"]) == (4, 1)
    assert (weather["min_ms"], weather["p50_ms"], weather["p95_ms"], weather["p99_ms"]) == (12, 18, 400, 400)
    assert weather["mean_ms"] == pytest.approx((12 + 18 + 25 + 400) / 4)
    assert sum(weather["histogram"]["counts"]) == 4 and weather["histogram"]["scale"] == "log"
    assert (latency["refund_order"]["p50_ms"], latency["refund_order"]["p95_ms"]) == (40, 90)
    assert latency["lookup_station"]["n"] == 1
    assert (latency["search"]["n"], latency["search"]["n_errored"]) == (0, 1)

    failing = {(r["run_id"], r["spec"]): r for r in report["failing_runs"]}
    expected = {key: v for key, v in data.verdicts.items() if v["label"] != "pass"}
    assert (
        set(failing)
        == set(expected)
        == {("w2", "weather"), ("w3", "weather"), ("s1", "search"), ("s2", "search")}
    )
    for key, verdict in expected.items():
        assert failing[key]["trace_id"] == verdict["trace_id"] and len(verdict["trace_id"]) == 32
        assert failing[key]["reason"] == verdict["reason"]
    completed = [r["completed_at"] for r in report["failing_runs"]]
    assert completed == sorted(completed, reverse=True)  # most recent first

    # Issue 28: what each failing run did, beside the checks it failed.
    w2 = failing[("w2", "weather")]
    [call] = w2["executions"]
    assert (call["tool"], call["arguments"], call["error"], call["error_message"]) == (
        "get_weather",
        '{"city": "Paris"}',
        True,
        "upstream timeout",
    )
    assert call["duration_ms"] == pytest.approx(30) and call["agent_path"] == "shop"
    assert [(c["kind"], c["target"], c["gate"]) for c in w2["failed_checks"]] == [
        ("expected_tool", "get_weather", False),
        ("arguments", "get_weather", False),
    ]
    w3 = failing[("w3", "weather")]
    assert [(c["kind"], c["target"]) for c in w3["failed_checks"]] == [("arguments", "get_weather")]
    assert [e["tool"] for e in w3["executions"]] == ["get_weather"] and w3["executions_total"] == 1
    s1 = failing[("s1", "search")]  # requested, never executed: nothing stored to show
    assert (s1["executions"], s1["executions_total"]) == ([], 0)


def test_history_comes_from_stored_verdicts_bucketed_by_run_completion(data: Data) -> None:
    report = data.json_report
    assert report["history_bucket"] == "second"  # auto: everything happened within a minute
    got = [
        (p["spec"], p["start"], p["n_scored"], p["n_passed"], p["n_errors"])
        for p in sorted(report["history"], key=lambda p: (p["spec"], p["start"]))
    ]
    assert got == data.expected_history
    weather = [p for p in report["history"] if p["spec"] == "weather"]
    assert len(weather) >= 2  # the two batches are at least a second apart
    # batch 1 (1 of 3 passed) completed before batch 2 (2 of 2 passed)
    seen, passed = 0, 0
    for point in weather:
        seen, passed = seen + point["n_scored"], passed + point["n_passed"]
        if seen == 3:
            break
    assert (seen, passed) == (3, 1)


def test_the_server_answers_the_same_report_as_the_file(data: Data) -> None:
    def without_time(report: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in report.items() if k != "generated_at"}

    assert without_time(data.live_json) == without_time(data.json_report)
    live, stopped = dom(data.live_html), dom(data.html)
    _figures_match_the_json(live, data.json_report)
    assert live.one("table", id="tasks-table").text == stopped.one("table", id="tasks-table").text


# --- the page --------------------------------------------------------------------------------------


def test_the_page_shows_the_json_figures(data: Data) -> None:
    root = dom(data.html)
    _figures_match_the_json(root, data.json_report)
    zone_rows = [r.attrs["data-task"] for r in root.find_all("tr", class_="zone")]
    assert zone_rows == ["weather"]
    embedded = json.loads(root.one("script", id="tracescore-report").text)
    assert {k: v for k, v in embedded.items() if k != "generated_at"} == {
        k: v for k, v in data.json_report.items() if k != "generated_at"
    }
    assert root.one("div", id="card-overall-pass-rate").text.startswith(number(5 / 9))


def test_the_task_table_says_which_errors_it_counts(data: Data) -> None:
    """Issue #20: ERRORS counted error verdicts but read as tool errors."""
    table = dom(data.html).one("table", id="tasks-table")
    headers = {h.text: h.attrs.get("title", "") for h in table.find_all("th")}
    assert "errors" not in headers
    scorer_errors = headers["scorer errors"]
    assert "error verdicts" in scorer_errors and "tool calls that errored" in scorer_errors
    assert "clean tool executions" in headers["latency percentiles"]
    assert all(headers), headers  # every column has a name


def test_the_page_is_self_contained(data: Data) -> None:
    html = data.html.lower()
    for reference in ("src=", "href=", "url(", "@import", "<link", "http://", "https://", "<img", "<iframe"):
        assert reference not in html, reference
    root = dom(data.html)
    scripts = root.find_all("script")
    assert [s.attrs.get("type") for s in scripts] == ["application/json"]  # data, never code


def test_the_table_format_can_show_every_section(data: Data) -> None:
    text = _cli(
        "report", "--db", str(data.db), "--spec", str(data.spec_file), "--include", "history,latency,failing"
    )
    assert text.returncode == 0, text.stderr
    for needle in ("pass rate over time", "tool latency", "failing runs (4)", "get_weather", "w3"):
        assert needle in text.stdout
    # The history's error column counts error verdicts, as the HTML page's does: named so here too.
    (history_header,) = [
        line for line in text.stdout.splitlines() if line.startswith("SPEC") and "FROM" in line
    ]
    assert "SCORER ERRORS" in history_header
    refused = _cli("report", "--db", str(data.db), "--spec", str(data.spec_file), "--include", "charts")
    assert refused.returncode == 2 and "history, latency, failing or all" in refused.stderr


# --- Chromium --------------------------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine: `apt-get install -y chromium` (Debian) provides it")


def _headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) pixels of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    blob = path.read_bytes()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, header = 8, b"", b""
    while offset < len(blob):
        (length,) = struct.unpack(">I", blob[offset : offset + 4])
        kind, body = blob[offset + 4 : offset + 8], blob[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    size = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * size
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(size, stride):
                line[i] = (line[i] + line[i - size]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - size] if i >= size else 0
                line[i] = (line[i] + (left + previous[i]) // 2) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - size] if i >= size else 0
                b, c = previous[i], previous[i - size] if i >= size else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def test_chromium_renders_the_page(data: Data, tmp_path: Path) -> None:
    browser = _chromium()
    url = data.page.resolve().as_uri()
    dumped = _headless(browser, tmp_path / "profile-dom", "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    rendered = dom(dumped.stdout)
    _figures_match_the_json(rendered, data.json_report)  # the browser parsed every figure as written

    shot = data.directory / "report.png"
    taken = _headless(
        browser, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1200,1600", url
    )
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    assert shot.stat().st_size > 30_000  # a blank 1200x1600 page compresses to a few KB
    width, height, rows = _png_pixels(shot)
    assert (width, height) == (1200, 1600)
    size = len(rows[0]) // width
    pixels: dict[bytes, int] = {}
    for row in rows:
        for i in range(0, len(row), size):
            key = row[i : i + 3]
            pixels[key] = pixels.get(key, 0) + 1
    assert len(pixels) > 200  # text, charts and colours, not a blank or error page
    assert pixels.get(bytes((0xFF, 0xF4, 0xCC)), 0) > 5_000  # the learning-zone row's highlight
    assert pixels.get(bytes((0x1F, 0x8A, 0x4C)), 0) > 100  # the pass-rate bars
