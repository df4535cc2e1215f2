"""A trace that only built an agent is no run (issue #27): through the real path, OTel SDK -> OTLP ->
`tracescore serve --specs` -> DuckDB -> verdicts.

The set-up trace is the one OpenLLMetry's LangChain instrumentation (0.62.4) records when LangGraph
compiles `create_react_agent` (tests/frameworks/fixtures/langgraph-react-openllmetry): one
`create_agent react_agent` span with `gen_ai.operation.name = create_agent`, in a trace of its own.
"""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider

from tests._otel import provider, stored_rows
from tests._server import ServeProcess

SPEC = """name: weather
select: {service.name: setup-runs}
expected_tools: [get_weather]
"""


def _compile_graph(tp: TracerProvider) -> None:
    tracer = tp.get_tracer("opentelemetry.instrumentation.langchain", "0.62.4")
    with tracer.start_as_current_span(
        "create_agent react_agent",
        attributes={
            "gen_ai.operation.name": "create_agent",
            "gen_ai.provider.name": "langgraph",
            "gen_ai.agent.name": "react_agent",
            "gen_ai.tool.definitions": '[{"type": "function", "name": "get_weather"}]',
        },
    ):
        pass


def _run_agent(tp: TracerProvider) -> None:
    tracer = tp.get_tracer("test")
    with (
        tracer.start_as_current_span(
            "invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent"}
        ),
        tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
            },
        ),
    ):
        pass


def test_a_trace_that_only_builds_an_agent_is_no_run_and_gets_no_verdict(tmp_path: Path) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPEC)
    server = ServeProcess(tmp_path / "setup.duckdb", extra_args=("--specs", str(specs))).start()
    try:
        tp = provider(server, "http", service="setup-runs")
        _compile_graph(tp)
        _run_agent(tp)
        tp.shutdown()
    finally:
        assert server.stop() == 0, server.log()
    spans = stored_rows(server, "SELECT name FROM spans ORDER BY name")
    assert [s["name"] for s in spans] == [
        "create_agent react_agent",
        "execute_tool get_weather",
        "invoke_agent weather",
    ]
    runs = stored_rows(server, "SELECT agent_name, n_executions FROM runs")
    assert runs == [{"agent_name": "weather", "n_executions": 1}]
    verdicts = stored_rows(server, "SELECT spec, passed FROM verdicts")
    assert verdicts == [{"spec": "weather", "passed": True}]


def test_a_set_up_span_above_a_tool_call_still_makes_a_run(tmp_path: Path, server: ServeProcess) -> None:
    """Only set-up: a tool executed under a `create_agent` span is evidence, and its trace a run."""
    tp = provider(server, "http", service="setup-runs")
    tracer = tp.get_tracer("test")
    with (
        tracer.start_as_current_span("create_agent x", attributes={"gen_ai.operation.name": "create_agent"}),
        tracer.start_as_current_span(
            "execute_tool probe",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe"},
        ),
    ):
        pass
    tp.shutdown()
    assert server.stop() == 0, server.log()
    assert stored_rows(server, "SELECT n_executions FROM runs") == [{"n_executions": 1}]
