"""deploy/monitoring against a real Prometheus (Debian's `prometheus` package; .ci/run installs it).

A real `tracescore serve`, fed over OTLP by the OpenTelemetry SDK, is scraped every second by a real
Prometheus that loads the shipped alert rules with every duration divided by 60 (10 minutes become 10
seconds; the copy is generated from the shipped file, never kept by hand). Then every query of the
Grafana dashboard (its template variables given concrete values) and every alert expression must
evaluate without error and return series, and the pass-rate alert must fire, and no other, when the test
turns a spec's runs from passing to failing. `promtool` checks the shipped rule file and the scrape
example, and its rule unit tests make each alert fire on the series it watches (and stay quiet before);
tests/test_deploy.py checks the Helm chart's PrometheusRule with it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider

from tests._otel import provider
from tests._server import ServeProcess, free_port

ROOT = Path(__file__).resolve().parent.parent
MONITORING = ROOT / "deploy" / "monitoring"
RULES = MONITORING / "tracescore-rules.yaml"
DASHBOARD = MONITORING / "tracescore-dashboard.json"
PROVISIONING = MONITORING / "grafana-dashboards.yaml"
SCRAPE_EXAMPLE = MONITORING / "prometheus-scrape.yaml"
SPEC = "monitoring-cutoff"
TASK = "monitoring:shop"
TOOL = "lookup_shipping_cutoff"
SPECS = f"name: {SPEC}\nselect: {{task: {TASK}}}\nexpected_tools: [{TOOL}]\n"
SPEED_UP = 60  # every duration of the shipped rules, divided by this in the test's copy


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        message = f"{name} (Debian package prometheus) is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + "; .ci/run installs it")
        pytest.skip(message)
    return found


# ---------------------------------------------------------------------------------------------------
# PromQL helpers: durations scaled for the test, comparisons turned into 0/1 series

_DURATION = re.compile(r"(\d+)([smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# A duration in a range selector `[10m]`, a subquery `[1h:1m]` or after `offset`.
_EXPR_DURATION = re.compile(r"(?<=\[)\d+[smhdw](?=[\]:])|(?<=offset )\d+[smhdw]")


def _faster(duration: str) -> str:
    match = _DURATION.fullmatch(duration)
    assert match, f"not a single-unit duration: {duration}"
    return f"{max(1, int(match[1]) * _SECONDS[match[2]] // SPEED_UP)}s"


def quicker_rules(rules: dict[str, Any]) -> dict[str, Any]:
    """The shipped rules with every window, offset and `for:` divided by SPEED_UP, evaluated every second."""
    groups = []
    for group in rules["groups"]:
        quick_rules = []
        for rule in group["rules"]:
            quick = {**rule, "expr": _EXPR_DURATION.sub(lambda m: _faster(m[0]), rule["expr"])}
            if "for" in rule:
                quick["for"] = _faster(rule["for"])
            quick_rules.append(quick)
        groups.append({**group, "interval": "1s", "rules": quick_rules})
    return {"groups": groups}


_COMPARISON = re.compile(r"==|!=|>=|<=|>|<")


def as_bool(expr: str) -> str:
    """`expr` with `bool` after each comparison outside label matchers: every series it compares comes
    back (as 0 or 1), firing or not. An alert expression that returns series this way reads metrics that
    exist; one that returns nothing names a metric or label the server does not expose."""
    out, depth, quoted, i = [], 0, False, 0
    while i < len(expr):
        char = expr[i]
        if quoted:
            quoted = char != '"' or expr[i - 1] == "\\"
        elif char == '"':
            quoted = True
        elif char in "{}":
            depth += 1 if char == "{" else -1
        elif depth == 0 and (match := _COMPARISON.match(expr, i)):
            out.append(match[0] + " bool")
            i = match.end()
            continue
        out.append(char)
        i += 1
    return "".join(out)


def test_the_bool_form_and_the_speed_up_touch_only_what_they_should() -> None:
    assert as_bool('x{a="b",c!="d"} > 0.5 and y == 0') == 'x{a="b",c!="d"} > bool 0.5 and y == bool 0'
    assert as_bool('max(x{a=~">"}) >= 2') == 'max(x{a=~">"}) >= bool 2'
    rule = {"alert": "A", "expr": "rate(x[10m]) / rate(x[6h] offset 10m) > 600", "for": "5m"}
    (quick,) = quicker_rules({"groups": [{"name": "g", "rules": [rule]}]})["groups"][0]["rules"]
    assert quick == {"alert": "A", "expr": "rate(x[10s]) / rate(x[360s] offset 10s) > 600", "for": "5s"}


# ---------------------------------------------------------------------------------------------------
# promtool on the shipped files


def test_promtool_checks_the_shipped_rules_and_the_scrape_example(tmp_path: Path) -> None:
    promtool = _binary("promtool")
    checked = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(_alerts())} rules found" in checked.stdout
    # The example names files only a real installation has: the same config with stand-ins for them.
    config = yaml.safe_load(SCRAPE_EXAMPLE.read_text())
    assert config["rule_files"] == [RULES.name]
    config["rule_files"] = [str(RULES)]
    for job in config["scrape_configs"]:
        for block, key in (("authorization", "credentials_file"), ("tls_config", "ca_file")):
            stand_in = tmp_path / Path(job[block][key]).name
            stand_in.write_text("stand-in\n")
            job[block][key] = str(stand_in)
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    checked = subprocess.run(
        [promtool, "check", "config", str(tmp_path / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


# Each alert on the series it watches, in promtool's rule unit tests (the shipped file; minutes apart):
# (alert, input series (selector, values), when it must be firing, when it must not, labels it has).
_SERVER = 'job="t",instance="a"'
_ALERT_CASES: list[tuple[str, list[tuple[str, str]], str, str, dict[str, str]]] = [
    (
        "TracescorePassRateDrop",
        [  # six hours of passing runs, then only failing ones
            (f'tracescore_verdicts_total{{{_SERVER},spec="s",task="x",label="pass"}}', "0+10x360 3600x30"),
            (f'tracescore_verdicts_total{{{_SERVER},spec="s",task="x",label="fail"}}', "0x360 0+10x30"),
        ],
        "380m",
        "355m",
        {"job": "t", "spec": "s", "severity": "warning"},
    ),
    (
        "TracescoreVerdictLag",
        [(f'tracescore_verdict_lag_seconds{{{_SERVER},quantile="0.99"}}', "1x10 60x20")],
        "25m",
        "10m",
        {"job": "t", "instance": "a", "severity": "warning"},
    ),
    (
        "TracescoreScoringStalled",
        [
            (f"tracescore_scoring_queue_traces{{{_SERVER}}}", "0x10 5x30"),
            (f"tracescore_runs_scored_total{{{_SERVER}}}", "0+5x10 50x30"),
        ],
        "35m",
        "10m",
        {"job": "t", "instance": "a", "severity": "critical"},
    ),
    (
        "TracescoreRefusingSpans",
        [(f"tracescore_requests_refused_total{{{_SERVER}}}", "0x10 0+5x20")],
        "25m",
        "10m",
        {"job": "t", "instance": "a", "severity": "warning"},
    ),
    (
        "TracescoreHistoryExportStalled",
        [(f"tracescore_history_export_last_success_timestamp_seconds{{{_SERVER}}}", "0+60x30 1800x100")],
        "100m",
        "30m",
        {"job": "t", "instance": "a", "severity": "warning"},
    ),
    (
        "TracescoreDatabaseStopped",
        [(f"tracescore_store_healthy{{{_SERVER}}}", "1x5 0x10")],
        "10m",
        "5m",
        {"job": "t", "instance": "a", "severity": "critical"},
    ),
    (
        "TracescoreRestarting",
        [(f"tracescore_start_time_seconds{{{_SERVER}}}", "100x5 400x5 700x5")],
        "12m",
        "8m",
        {"job": "t", "instance": "a", "severity": "critical"},
    ),
]


def test_promtool_proves_each_alert_fires_on_what_it_watches_and_only_then(tmp_path: Path) -> None:
    promtool = _binary("promtool")
    assert {case[0] for case in _ALERT_CASES} == {rule["alert"] for rule in _alerts()}, "a case per alert"
    # promtool compares annotations too: they are left out of the copy (their templates are checked by
    # `promtool check rules` above, and rendered by the real Prometheus test below).
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    tests = [
        {
            "interval": "1m",
            "input_series": [{"series": series, "values": values} for series, values in inputs],
            "alert_rule_test": [
                {"eval_time": quiet, "alertname": alert, "exp_alerts": []},
                {"eval_time": firing, "alertname": alert, "exp_alerts": [{"exp_labels": labels}]},
            ],
        }
        for alert, inputs, firing, quiet, labels in _ALERT_CASES
    ]
    unit = tmp_path / "tests.yaml"
    unit.write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests})
    )
    checked = subprocess.run(
        [promtool, "test", "rules", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_grafana_provisioning_points_a_file_provider_at_the_dashboard_folder() -> None:
    provisioning = yaml.safe_load(PROVISIONING.read_text())
    assert provisioning["apiVersion"] == 1
    (provider_,) = provisioning["providers"]
    assert provider_["type"] == "file" and provider_["options"]["path"].startswith("/")
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "tracescore" and dashboard["templating"]["list"][0]["type"] == "datasource"
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"]), "panel ids are unique"
    cells: set[tuple[int, int]] = set()
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        columns, rows = range(grid["x"], grid["x"] + grid["w"]), range(grid["y"], grid["y"] + grid["h"])
        area = {(x, y) for x in columns for y in rows}
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
    for panel in _panels(dashboard):
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["description"] and panel["targets"], panel["title"]
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(set(ref_ids)) == len(ref_ids), panel["title"]


# ---------------------------------------------------------------------------------------------------
# a real Prometheus scraping a real serve


def _alerts() -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r]


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


class Prometheus:
    def __init__(self, binary: str, folder: Path, target: str) -> None:
        self.port = free_port()
        rules = folder / "rules.yaml"
        rules.write_text(yaml.safe_dump(quicker_rules(yaml.safe_load(RULES.read_text()))))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [{"job_name": "tracescore", "static_configs": [{"targets": [target]}]}],
        }
        (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = folder / "prometheus.log"
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )
        self.wait(self._ready, "Prometheus ready")

    def _ready(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{path} {params}: {exc.code} {exc.read().decode()}") from exc
        assert body["status"] == "success" and not body.get("warnings"), body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", (expr, data)
        return list(data["result"])

    def firing(self) -> dict[str, list[dict[str, str]]]:
        alerts: dict[str, list[dict[str, str]]] = {}
        for alert in self.api("alerts")["alerts"]:
            if alert["state"] == "firing":
                alerts.setdefault(alert["labels"]["alertname"], []).append(alert["labels"])
        return alerts

    def wait(self, ready: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout_s
        while not (value := ready()):
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}\n{self.log.read_text()}")
            time.sleep(0.2)
        return value

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcess]:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "shop.yaml").write_text(SPECS)
    process = ServeProcess(
        db=tmp_path / "traces.duckdb",
        extra_args=(
            "--specs",
            str(specs),
            "--export-dir",
            str(tmp_path / "export"),
            "--export-every",
            "1",
            "--memory-limit",
            "2GB",
        ),
    ).start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture
def prometheus(serve: ServeProcess, tmp_path: Path) -> Iterator[Prometheus]:
    folder = tmp_path / "prometheus"
    folder.mkdir()
    running = Prometheus(_binary("prometheus"), folder, f"127.0.0.1:{serve.http_port}")
    try:
        yield running
    finally:
        running.stop()


def _run(tracer_provider: TracerProvider, tool: str) -> None:
    """One agent run of the task through the real SDK: an agent span and one tool span under it."""
    tracer = tracer_provider.get_tracer("tests.monitoring")
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "shop",
        "tracescore.task.id": TASK,
    }
    tool_attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
    with (
        tracer.start_as_current_span("invoke_agent shop", context=Context(), attributes=attributes),
        tracer.start_as_current_span(f"execute_tool {tool}", attributes=tool_attributes),
    ):
        pass


def _send_for(tracer_provider: TracerProvider, tool: str, seconds: float, until: Callable[[], Any]) -> Any:
    """Runs calling `tool`, about five a second, for `seconds` or until `until()` says something."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        _run(tracer_provider, tool)
        assert tracer_provider.force_flush(10_000)
        if value := until():
            return value
        time.sleep(0.2)
    return None


def _substitute(expr: str, values: dict[str, str]) -> str:
    for name, value in sorted(values.items(), key=lambda item: -len(item[0])):
        expr = expr.replace(f"${{{name}}}", value).replace(f"${name}", value)
    assert "$" not in expr, f"a template variable the test does not give a value: {expr}"
    return expr


def test_prometheus_evaluates_every_dashboard_query_and_alert_and_fires_on_a_pass_rate_drop(
    serve: ServeProcess, prometheus: Prometheus
) -> None:
    tracer_provider = provider(serve)
    try:
        # Passing runs long enough for the rule's baseline (6 h, here 6 min, before the last 10 s), and
        # until Prometheus has seen the pass count rise between two scrapes (a burst of verdicts before a
        # series' first scrape is no rate)...
        _send_for(tracer_provider, TOOL, 5.0, lambda: None)
        passing = f'sum(increase(tracescore_verdicts_total{{spec="{SPEC}",label="pass"}}[1m])) > 0'
        assert _send_for(tracer_provider, TOOL, 20.0, lambda: prometheus.query(passing)), "no pass rate"
        assert "TracescorePassRateDrop" not in prometheus.firing()
        # ...then failing ones (the expected tool never called) until the alert fires.
        firing = _send_for(
            tracer_provider, "cancel_order", 40.0, lambda: prometheus.firing().get("TracescorePassRateDrop")
        )
    finally:
        tracer_provider.shutdown()
    assert firing, f"TracescorePassRateDrop never fired\n{prometheus.log.read_text()}\n{serve.log()}"
    assert [(a["spec"], a["job"], a["severity"]) for a in firing] == [(SPEC, "tracescore", "warning")]
    assert set(prometheus.firing()) == {"TracescorePassRateDrop"}, "only the pass rate dropped"

    # Every alert expression evaluates as shipped, and reads series that exist (in its quicker form: a
    # shipped window reaches back before this Prometheus started).
    quick = quicker_rules({"groups": [{"name": "all", "rules": _alerts()}]})["groups"][0]["rules"]
    for rule, quick_rule in zip(_alerts(), quick, strict=True):
        prometheus.query(rule["expr"])
        assert prometheus.query(as_bool(quick_rule["expr"])), f"{rule['alert']}: no series: {rule['expr']}"

    # Every dashboard query, with the variables a user would pick: first the variables' own queries.
    dashboard = json.loads(DASHBOARD.read_text())
    values = {"__rate_interval": "10s", "__interval": "1s", "__range": "1m"}
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        call = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["query"]["query"])
        assert call, variable["query"]
        selector, label = call.groups()
        found = prometheus.api(f"label/{label}/values", **{"match[]": _substitute(selector, values)})
        assert found, f"variable {variable['name']}: no values"
        values[variable["name"]] = found[0]
    assert (values["job"], values["spec"]) == ("tracescore", SPEC)
    assert prometheus.query(f'tracescore_verdicts_total{{spec="{SPEC}",task="{TASK}",label="fail"}} > 0')
    # Every metric the server exposes is documented.
    names = prometheus.api("label/__name__/values", **{"match[]": '{job="tracescore"}'})
    ours = {re.sub(r"_(count|sum)$", "", n) for n in names if n.startswith("tracescore_")}
    metrics_doc = (ROOT / "docs" / "online.md").read_text()
    assert len(ours) > 30 and not {n for n in ours if f"`{n}" not in metrics_doc}, "docs/online.md#metrics"
    queries = [
        (panel["title"], target["expr"]) for panel in _panels(dashboard) for target in panel["targets"]
    ]
    assert len(queries) >= 20
    empty = [(title, expr) for title, expr in queries if not prometheus.query(_substitute(expr, values))]
    assert not empty, f"dashboard queries that return no series: {empty}"
