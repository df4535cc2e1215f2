"""MCP (the Model Context Protocol's Python SDK) through the shared scenario: a real server and client.

The server is the SDK's own high-level server (`MCPServer` in mcp 2, `FastMCP` in mcp 1) with the tools
`get_weather` and `book_flight`, whose bodies are the harness's tools, so the ledger records what the
server-side tool received. The client is the SDK's own, connected to it in the same process over the
SDK's in-memory streams: real JSON-RPC messages with the initialize handshake, as over stdio or HTTP
(mcp 2: `Client(server, mode="legacy")`; its default in-process mode skips JSON-RPC altogether, and with
it the client's spans. mcp 1: `mcp.shared.memory.create_connected_server_and_client_session`).

There is no model and no agent framework: MCP is the tool protocol under an agent, so a script plays
the host. Per invocation it connects, lists the tools (what a host offers its model), and calls them:
both `get_weather` calls at once (concurrent `tools/call` requests on one session, as a host runs a
turn's parallel calls), then `book_flight`, whose `ValueError` the server returns to the client as a
`CallToolResult` with `isError` set, never as an exception. No agent span is added: one would record
this script, not MCP; the harness's `rollout` span is the run. Nothing leaves the machine but OTLP to
`--endpoint`.

Instrumentations (`--instrumentation`):
- `native`: none but the SDK's own. mcp >= 2 traces every request itself through the global tracer
  provider (`mcp/shared/_otel.py`, tracer `mcp-python-sdk`): a CLIENT span `MCP send <method> [<tool>]`
  per request sent, a SERVER span `<method> [<tool>]` per request handled, with the OpenTelemetry MCP
  semantic conventions' attributes. It captures no tool arguments or results.
- `openinference`: openinference-instrumentation-mcp as well. It creates no spans: it only carries the
  trace context across the stdio, SSE and Streamable HTTP transports (not the in-memory streams), which
  mcp 2 also does itself, so the spans are the SDK's own.
- `openllmetry`: opentelemetry-instrumentation-mcp (Traceloop). It cannot instrument mcp 2 (it wraps
  `mcp.client.streamable_http.streamablehttp_client` and `mcp.shared.session.BaseSession.send_request`,
  both gone), so this cell runs on mcp 1, which traces nothing itself: one `<tool>.tool` span per
  client call with the arguments and result as `traceloop.entity.input` / `traceloop.entity.output`.

Run inside a virtualenv with tests/frameworks/requirements/mcp.txt installed (`native`, `openinference`)
or tests/frameworks/requirements/mcp-openllmetry.txt (`openllmetry`):
    python tests/frameworks/drivers/drive_mcp.py --instrumentation native \
        --endpoint http://127.0.0.1:4318/v1/traces --record tests/frameworks/fixtures/mcp-native
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from _harness import BOOKING_CALLS, WEATHER_CALLS, Harness, arguments
from opentelemetry import trace

INSTRUMENTATIONS = {
    "native": None,
    "openinference": "openinference-instrumentation-mcp",
    "openllmetry": "opentelemetry-instrumentation-mcp",
}

CallTool = Callable[[str, dict[str, Any]], Awaitable[Any]]


def _instrument(name: str, harness: Harness) -> None:
    # mcp 2's own spans go through the global tracer provider; so do most hosts' setups.
    trace.set_tracer_provider(harness.provider)
    if name == "openinference":
        from openinference.instrumentation.mcp import MCPInstrumentor

        MCPInstrumentor().instrument(tracer_provider=harness.provider)
    elif name == "openllmetry":
        from opentelemetry.instrumentation.mcp import McpInstrumentor

        McpInstrumentor().instrument(tracer_provider=harness.provider)


def _server(harness: Harness) -> Any:
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp >= 2
    except ImportError:
        from mcp.server.fastmcp import FastMCP as Server  # mcp 1

    server = Server("travel")

    @server.tool()
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return harness.get_weather(city)

    @server.tool()
    def book_flight(destination: str, passengers: int) -> str:
        """Book a flight for some passengers."""
        return harness.book_flight(destination, passengers)

    return server


@asynccontextmanager
async def _connect(server: Any) -> AsyncIterator[tuple[CallTool, Callable[[], Awaitable[Any]]]]:
    """A client session on the server over in-memory JSON-RPC streams: its call_tool and list_tools."""
    try:
        from mcp import Client  # mcp >= 2
    except ImportError:
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(server) as session:
            yield session.call_tool, session.list_tools
        return
    async with Client(server, mode="legacy") as client:
        yield client.call_tool, client.list_tools


def _outcome(task: str, tool: str, result: Any) -> dict[str, Any]:
    """What the client got back for one call: the result's text, and whether it is an error."""
    is_error = getattr(result, "is_error", None)
    if is_error is None:  # mcp 1 names the field as on the wire
        is_error = getattr(result, "isError", False)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return {"task": task, "tool": tool, "is_error": bool(is_error), "text": text}


async def _play(harness: Harness, server: Any) -> list[dict[str, Any]]:
    outcomes: list[dict[str, Any]] = []
    for task, calls, parallel in (("weather", WEATHER_CALLS, True), ("booking", BOOKING_CALLS, False)):
        with harness.invocation(task):
            async with _connect(server) as (call_tool, list_tools):
                await list_tools()
                names = [name for _, name, _ in calls]
                if parallel:
                    results = await asyncio.gather(*(call_tool(name, args) for _, name, args in calls))
                else:
                    results = [await call_tool(name, args) for _, name, args in calls]
                outcomes += [_outcome(task, n, r) for n, r in zip(names, results, strict=True)]
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--instrumentation", choices=tuple(INSTRUMENTATIONS), default="native")
    args = parser.parse_args(argv)
    package = INSTRUMENTATIONS[args.instrumentation]
    harness = Harness(
        f"mcp-{args.instrumentation}",
        ["mcp", *([package] if package else [])],
        args.endpoint,
        args.record,
    )
    _instrument(args.instrumentation, harness)
    outcomes = asyncio.run(_play(harness, _server(harness)))
    harness.finish(
        requests=False,  # no model: nothing shows the calls a model asked for
        arguments=args.instrumentation == "openllmetry",  # mcp 2's own spans capture no arguments
        # mcp 2's server turns the tool's exception into "Error executing tool book_flight" and records
        # no text at all on its span: the message exists in no span to read.
        error_messages=args.instrumentation == "openllmetry",
        parallel_calls=True,
        client_results=outcomes,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
