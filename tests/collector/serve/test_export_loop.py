"""Verdict export never points back at the server's own listener.

Found running the README's tour with `OTEL_EXPORTER_OTLP_ENDPOINT` set for the agent: `serve`, started
from the same shell, read the same variable and exported its verdicts into itself (spans ignored on
arrival, metrics refused: error lines every ten seconds, nothing exported)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from collector.serve._export_settings import ExportSettings, points_at_own_listener
from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess

OWN = [("127.0.0.1", 4317), ("127.0.0.1", 4318)]


@pytest.mark.parametrize(
    ("variable", "value", "protocol"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317", "grpc"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4317", "grpc"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4317", "grpc"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]:4318", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost", "http/protobuf"),  # the protocol's port
    ],
)
def test_an_endpoint_at_the_own_listener_is_recognised(variable: str, value: str, protocol: str) -> None:
    settings = ExportSettings(protocol=protocol)
    assert points_at_own_listener(settings, OWN, {variable: value}) == value


@pytest.mark.parametrize(
    "value",
    ["http://127.0.0.1:14317", "http://collector.internal:4317", "http://10.0.0.5:4318", "http://[::1]:9999"],
)
def test_another_endpoint_is_left_alone(value: str) -> None:
    assert points_at_own_listener(ExportSettings(), OWN, {"OTEL_EXPORTER_OTLP_ENDPOINT": value}) is None


def test_the_flag_counts_too() -> None:
    settings = ExportSettings(endpoint="http://127.0.0.1:4318", protocol="http/protobuf")
    assert points_at_own_listener(settings, OWN, {}) == "http://127.0.0.1:4318"


def test_serve_with_the_agents_variable_says_so_once_and_exports_nothing_to_itself(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: lookup\nexpected_tools: [lookup]\n")
    server = ServeProcess(tmp_path / "t.duckdb", extra_args=("--specs", str(spec), "--grace-seconds", "0.2"))
    server.env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.grpc_port}"}
    server.start()
    trace_id, root, start = new_trace_id(), new_span_id(), time.time_ns()
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
    document = request(
        [
            span(
                trace_id, root, "invoke_agent shop", start_ns=start, duration_ns=5_000_000, attributes=agent
            ),
            span(
                trace_id, new_span_id(), "execute_tool lookup", parent=root, start_ns=start, attributes=tool
            ),
        ]
    )
    assert post_json(server.http_url, document)[0] == 200
    time.sleep(1.5)  # completed and scored: an exporter would have sent the verdict by its shutdown
    assert server.stop() == 0, server.log()
    log = server.log()
    assert log.count("not exporting verdicts to") == 1, log
    assert "this server's own OTLP listener" in log and "--export-endpoint" in log
    assert "Failed to export" not in log and "Transient error" not in log, log
    assert server.query("SELECT label FROM verdicts") == [("pass",)]
