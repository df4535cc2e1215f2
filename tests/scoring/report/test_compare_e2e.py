"""`tracescore compare` through a real `tracescore serve` (issue 28, item 3): rollouts of three versions
of an agent sent by the OpenTelemetry SDK with `service.version` on the resource, over OTLP; the CLI
asks the server (`--server`) for the versions, scores each group and tests the difference.

Version 1.0 passes 45 of 50 rollouts (0.9), 1.1 and 1.2 pass 30 of 50 (0.6): 1.0 → 1.1 is a significant
regression (Fisher's exact p = 0.00097), 1.1 → 1.2 no change at all.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from scipy.stats import fisher_exact as scipy_fisher_exact

from collector.cli._main import main
from tests._otel import exporter
from tests._server import ServeProcess

ROLLOUTS = 50
VERSIONS = {"1.0": 45, "1.1": 30, "1.2": 30}  # passing rollouts of 50
SPEC = "name: dispatch\nselect: {task: dispatch}\nexpected_tools: [lookup_shipping_cutoff]\n"


def _send(server: ServeProcess, version: str, passing: int) -> None:
    resource = Resource.create({"service.name": "shop", "service.version": version})
    provider = TracerProvider(resource=resource)
    # One export of every rollout: max_export_batch_size above the spans sent, flushed at the end.
    provider.add_span_processor(
        BatchSpanProcessor(exporter(server, "grpc"), max_export_batch_size=4096, max_queue_size=8192)
    )
    tracer = provider.get_tracer("tests")
    for i in range(ROLLOUTS):
        agent = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "shop",
            "tracescore.task.id": "dispatch",
        }
        with tracer.start_as_current_span("invoke_agent shop", attributes=agent):
            tool = "lookup_shipping_cutoff" if i < passing else "send_email"
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
                pass
    provider.force_flush()
    provider.shutdown()


def _complete_runs(server: ServeProcess) -> int:
    url = f"http://127.0.0.1:{server.http_port}/api/v1/runs?status=complete&limit=10000"
    with urllib.request.urlopen(url, timeout=10) as response:
        return len(json.loads(response.read()))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("compare")
    server = ServeProcess(directory / "t.duckdb").start()
    boundaries = []
    try:
        for version, passing in VERSIONS.items():
            boundaries.append(datetime.now(UTC).replace(tzinfo=None))
            _send(server, version, passing)
        deadline = time.monotonic() + 30
        while _complete_runs(server) < ROLLOUTS * len(VERSIONS):
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.2)
        (directory / "spec.yaml").write_text(SPEC)
        yield {"server": server, "spec": directory / "spec.yaml", "boundaries": boundaries}
    finally:
        server.kill()


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def _cli(served: dict[str, Any], *args: str) -> Result:
    """The CLI in this process (a subprocess spends seconds importing), asking the real server."""
    server: ServeProcess = served["server"]
    where = ["--server", f"http://127.0.0.1:{server.http_port}", "--spec", str(served["spec"])]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, *where])
    return Result(code, out.getvalue(), err.getvalue())


def test_a_significant_regression_fails_the_gate(served: dict[str, Any]) -> None:
    result = _cli(
        served,
        "compare",
        "--by",
        "service.version",
        "1.0",
        "1.1",
        "--fail-on",
        "regression",
        "--format",
        "json",
    )
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert (document["before"], document["after"]) == (
        {"value": "1.0", "n_runs": 50},
        {"value": "1.1", "n_runs": 50},
    )
    [row] = document["rows"]
    assert (row["task"], row["spec"], row["change"], row["significant"]) == (
        "dispatch",
        "dispatch",
        "regressed",
        True,
    )
    assert (row["passed_before"], row["n_before"], row["passed_after"], row["n_after"]) == (45, 50, 30, 50)
    reference = scipy_fisher_exact([[45, 5], [30, 20]]).pvalue
    assert row["p_value"] == pytest.approx(reference, rel=1e-12) and row["p_value"] < 0.001
    assert document["significant_regressions"] == 1


def test_equal_rates_are_not_significant_and_pass_the_gate(served: dict[str, Any]) -> None:
    # Without values: the two most recently first seen, 1.1 then 1.2.
    result = _cli(served, "compare", "--by", "service.version", "--fail-on", "regression")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("service.version: 1.1 (50 run(s)) -> 1.2 (50 run(s))")
    assert lines[2].split()[:3] == ["TASK", "SPEC", "BEFORE"]
    row = next(line for line in lines if line.startswith("dispatch"))
    assert row.split()[2:4] == ["0.60", "30/50"] and row.rstrip().endswith("unchanged")
    assert "1.0000" in row.split()


def _scored(result: Result) -> list[str]:
    assert result.returncode in (0, 1), result.stderr
    return sorted(v["run_id"] for v in json.loads(result.stdout))


def test_score_through_the_server_takes_since_until_and_where(served: dict[str, Any]) -> None:
    every = _scored(_cli(served, "score", "--no-store", "--format", "json"))
    assert len(every) == 150
    old = _scored(_cli(served, "score", "--no-store", "--format", "json", "--where", "service.version=1.0"))
    assert len(old) == 50
    _, second, third = (moment.isoformat() for moment in served["boundaries"])
    before_1_1 = _scored(_cli(served, "score", "--no-store", "--format", "json", "--until", second))
    assert before_1_1 == old
    middle = _cli(served, "score", "--no-store", "--format", "json", "--since", second, "--until", third)
    assert len(_scored(middle)) == 50 and not set(_scored(middle)) & set(old)
    report = _cli(served, "report", "--format", "json", "--since", third, "--where", "service.name=shop")
    [row] = json.loads(report.stdout)
    assert (row["n_scored"], row["n_passed"]) == (50, 30)


def test_the_server_lists_the_values_of_an_attribute(served: dict[str, Any]) -> None:
    server: ServeProcess = served["server"]
    url = f"http://127.0.0.1:{server.http_port}/api/v1/values?key=service.version&where=service.name%3Dshop"
    with urllib.request.urlopen(url, timeout=10) as response:
        found = json.loads(response.read())
    assert [(v["value"], v["n_runs"]) for v in found] == [("1.2", 50), ("1.1", 50), ("1.0", 50)]
    bad = f"http://127.0.0.1:{server.http_port}/api/v1/values?key=service.version&where=oops"
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(bad, timeout=10)
    assert caught.value.code == 400 and "KEY=VALUE" in json.loads(caught.value.read())["error"]


def test_a_missing_group_is_named_and_fails_closed(served: dict[str, Any], tmp_path: Path) -> None:
    result = _cli(served, "compare", "--by", "service.version", "1.0", "2.0")
    assert result.returncode == 2
    assert "no complete run with service.version=2.0 was scored" in result.stderr


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"where": "service.version=1.0"}, "where: expected an object"),
        ({"where": {"service.version": []}}, "expected a value or a non-empty list"),
        ({"since": "yesterday"}, "since: expected an ISO 8601 time"),
        ({"since": "2026-12-02", "until": "2026-12-01"}, "since must be before until"),
    ],
)
def test_a_malformed_window_is_a_400_that_names_the_field(
    served: dict[str, Any], window: dict[str, Any], message: str
) -> None:
    server: ServeProcess = served["server"]
    body = json.dumps({"specs": [{"name": "s", "expected_tools": ["x"]}], "store": False, **window}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.http_port}/api/v1/score",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert message in json.loads(caught.value.read())["error"]
