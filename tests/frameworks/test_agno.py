"""Agno, instrumented by OpenInference's `AgnoInstrumentor`, into a real `tracescore serve --specs`.

No LLM and no network. The "model" of every agent is Agno's own `OpenAIChat` whose OpenAI client talks
to a script instead of a server (`httpx.MockTransport`: no socket is opened): each scripted reply is a
chat completion asking for tool calls with fixed call ids, then plain text. Agno really runs the tools,
the instrumentor really emits its AGENT / LLM / TOOL spans, and the real OTLP exporter ships them.
Why not a `Model` subclass of our own: the instrumentor wraps only the model classes it finds under
`agno.models` when it instruments, so such a model gets no LLM span (no request side, no call ids).
One run here uses exactly that (`ScriptedModel`) to pin the gap.

Every span the SDK emits is also kept in memory: the ground truth the stored rows are compared with.
Runs, each under a harness span naming its task (`tracescore.task.id`):

- agno:checkout: one clean tool and one that raises (Agno catches it, the TOOL span is ERROR).
- agno:team: a Team whose leader delegates to a member, and the member calls a tool.
- agno:refund: a tool that requires confirmation pauses the run (Agno opens no TOOL span for it); the
  verdict is read while the server runs; then the run is continued (a second trace, same agno.run.id)
  and scored again.
- agno:own-model: an agent driven by a `Model` subclass of our own: tools run, no LLM span.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("agno", reason="agno is not installed (test extra)")
pytest.importorskip("openinference.instrumentation.agno", reason="openinference-instrumentation-agno")

from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.models.base import Model
from agno.models.openai import OpenAIChat
from agno.models.response import ModelResponse
from agno.run.base import RunStatus
from agno.team import Team
from agno.tools import tool
from openinference.instrumentation.agno import AgnoInstrumentor
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests import _otel
from tests._otel import hex_span, hex_trace, stored_rows
from tests._server import ServeProcess

SERVICE = "agno-shop"
SCOPE = "openinference.instrumentation.agno"
TASK_CHECKOUT = "agno:checkout"
TASK_TEAM = "agno:team"
TASK_REFUND = "agno:refund"
TASK_OWN_MODEL = "agno:own-model"
WAIT_S = 20.0

SPECS = f"""
name: agno-checkout
select: {{task: {TASK_CHECKOUT}}}
expected_tools: [lookup_shipping_cutoff, charge_card]
arguments:
  lookup_shipping_cutoff: {{region: north}}
---
name: agno-team-search
select: {{task: {TASK_TEAM}}}
expected_tools: [search]
arguments: {{search: {{query: parcels}}}}
---
name: agno-team-search-leader
select: {{task: {TASK_TEAM}}}
scope: leader
expected_tools: [search]
---
name: agno-refund
select: {{task: {TASK_REFUND}}}
expected_tools: [refund_order]
arguments: {{refund_order: {{order_id: o-17}}}}
---
name: agno-own-model
select: {{task: {TASK_OWN_MODEL}}}
expected_tools: [lookup_shipping_cutoff]
arguments: {{lookup_shipping_cutoff: {{region: north}}}}
"""

# What a scripted model asks for: (tool name, arguments, call id), one list per model reply.
Turn = list[tuple[str, dict[str, Any], str]]

CHECKOUT_TURN: Turn = [
    ("lookup_shipping_cutoff", {"region": "north"}, "call_cutoff"),
    ("charge_card", {"amount": 12.5, "currency": "EUR"}, "call_charge"),
]
DELEGATE_TURN: Turn = [
    ("delegate_task_to_member", {"member_id": "researcher", "task": "find parcels"}, "call_delegate")
]
SEARCH_TURN: Turn = [("search", {"query": "parcels", "limit": 5}, "call_search")]
REFUND_TURN: Turn = [("refund_order", {"order_id": "o-17"}, "call_refund")]


def scripted_openai(turns: Sequence[Turn]) -> OpenAIChat:
    """Agno's real OpenAI chat model, answered by a script through the client's HTTP transport."""
    queue = deque(turns)

    def reply(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/chat/completions"), request.url
        calls = queue.popleft() if queue else None
        if calls:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                    for n, a, call_id in calls
                ],
            }
        else:
            message = {"role": "assistant", "content": "done"}
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o",
                "choices": [
                    {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    client = httpx.Client(transport=httpx.MockTransport(reply))
    return OpenAIChat(id="gpt-4o", api_key="not-used", http_client=client)


@dataclass
class ScriptedModel(Model):
    """A `Model` subclass of our own: replies with scripted tool calls, then text."""

    id: str = "scripted"
    turns: list[Turn] = field(default_factory=list)

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        if not self.turns:
            return ModelResponse(role="assistant", content="done")
        calls = self.turns.pop(0)
        return ModelResponse(
            role="assistant",
            tool_calls=[
                {"id": call_id, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for n, a, call_id in calls
            ],
        )

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.invoke()

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self.invoke()

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not streamed
        yield self.invoke()

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


# --- the tools: plain Python functions ------------------------------------------------------------


def lookup_shipping_cutoff(region: str) -> str:
    """The last order time for same-day dispatch in a region."""
    return f"{region}: 15:00"


def charge_card(amount: float, currency: str) -> str:
    """Charge the customer's card."""
    raise RuntimeError("card declined")


def search(query: str, limit: int) -> str:
    """Search the parcel database."""
    return f"3 results for {query}"


@tool(requires_confirmation=True)
def refund_order(order_id: str) -> str:
    """Refund an order (a person must confirm)."""
    return f"refunded {order_id}"


# --- helpers --------------------------------------------------------------------------------------


def _parent(span: ReadableSpan) -> str:
    assert span.parent is not None
    return format(span.parent.span_id, "016x")


def _api_verdicts(server: ServeProcess, **query: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{server.http_port}/api/v1/verdicts?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=10) as response:
        return list(json.loads(response.read()))


def _wait_verdict(server: ServeProcess, run_id: str, spec: str, run_version: int) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for verdict in _api_verdicts(server, run=run_id, spec=spec, all_versions="true"):
            if verdict["run_version"] == run_version:
                return verdict
        time.sleep(0.05)
    pytest.fail(f"no verdict {spec} v{run_version} for run {run_id}:\n{server.log()}")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@dataclass
class World:
    server: ServeProcess
    spec_file: Path
    spans: list[ReadableSpan]
    run_ids: dict[str, str]
    paused_status: RunStatus
    paused_verdict: dict[str, Any]
    resumed_verdict: dict[str, Any]

    def one(self, name: str, **attributes: Any) -> ReadableSpan:
        found = [
            s
            for s in self.spans
            if s.name == name and all((s.attributes or {}).get(k) == v for k, v in attributes.items())
        ]
        assert len(found) == 1, (name, attributes, [s.name for s in self.spans])
        return found[0]

    def named(self, name: str) -> list[ReadableSpan]:
        return sorted((s for s in self.spans if s.name == name), key=lambda s: s.start_time or 0)

    @staticmethod
    def attr(span: ReadableSpan, key: str) -> Any:
        return (span.attributes or {})[key]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("agno")
    spec_file = directory / "specs.yaml"
    spec_file.write_text(SPECS)
    server = ServeProcess(directory / "agno.duckdb", extra_args=("--specs", str(spec_file))).start()
    provider = _otel.provider(server, "grpc", service=SERVICE)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = AgnoInstrumentor()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AGNO_TELEMETRY", "false")  # else Agno posts run telemetry to its API
        instrumentor.instrument(tracer_provider=provider)
        try:
            world = _drive(server, spec_file, provider, memory)
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
            server.stop()
    yield world


def _drive(server: ServeProcess, spec_file: Path, provider: Any, memory: InMemorySpanExporter) -> World:
    harness = provider.get_tracer("rollout-harness")

    def rollout(task: str) -> Any:
        return harness.start_as_current_span("rollout", attributes={"tracescore.task.id": task})

    run_ids: dict[str, str] = {}
    shop = Agent(
        name="Shop Agent",
        model=scripted_openai([CHECKOUT_TURN]),
        tools=[lookup_shipping_cutoff, charge_card],
        telemetry=False,
    )
    with rollout(TASK_CHECKOUT):
        output = shop.run("Ship order o-17 north and charge the card.")
    assert output.status == RunStatus.completed and output.content == "done"
    run_ids["checkout"] = str(output.run_id)

    researcher = Agent(
        name="Researcher",
        id="researcher",
        model=scripted_openai([SEARCH_TURN]),
        tools=[search],
        telemetry=False,
    )
    desk = Team(name="Desk", members=[researcher], model=scripted_openai([DELEGATE_TURN]), telemetry=False)
    with rollout(TASK_TEAM):
        team_output = desk.run("Find the parcels.")
    assert team_output.status == RunStatus.completed
    run_ids["team"] = str(team_output.run_id)
    (member_output,) = team_output.member_responses
    run_ids["member"] = str(member_output.run_id)

    refunds = Agent(
        name="Refund Desk",
        model=scripted_openai([REFUND_TURN]),
        tools=[refund_order],
        db=InMemoryDb(),
        telemetry=False,
    )
    with rollout(TASK_REFUND):
        paused = refunds.run("Refund order o-17.")
    paused_status = paused.status
    run_ids["refund"] = str(paused.run_id)
    assert paused_status == RunStatus.paused
    waiting = [r.tool_execution for r in paused.active_requirements]
    assert [(t.tool_name, t.tool_call_id, t.requires_confirmation) for t in waiting if t] == [
        ("refund_order", "call_refund", True)
    ]
    assert provider.force_flush(10_000)
    # Online: the paused run completes (its trace ended) and is scored while nobody has confirmed yet.
    paused_verdict = _wait_verdict(server, run_ids["refund"], "agno-refund", 1)
    for requirement in paused.active_requirements:
        requirement.confirm()
    with rollout(TASK_REFUND):
        resumed = refunds.continue_run(run_response=paused, requirements=paused.requirements)
    assert resumed.status == RunStatus.completed and resumed.run_id == paused.run_id
    assert provider.force_flush(10_000)
    resumed_verdict = _wait_verdict(server, run_ids["refund"], "agno-refund", 2)

    own = Agent(
        name="Own Model Agent",
        model=ScriptedModel(turns=[[("lookup_shipping_cutoff", {"region": "north"}, "call_own")]]),
        tools=[lookup_shipping_cutoff],
        telemetry=False,
    )
    with rollout(TASK_OWN_MODEL):
        own_output = own.run("When is the cutoff in the north?")
    assert own_output.content == "done"
    run_ids["own-model"] = str(own_output.run_id)

    assert provider.force_flush(10_000)
    return World(
        server,
        spec_file,
        list(memory.get_finished_spans()),
        run_ids,
        paused_status,
        paused_verdict,
        resumed_verdict,
    )


EXECUTION_COLUMNS = (
    "run_id, task_id, trace_id, span_id, parent_span_id, tool_name, call_id, call_id_source, arguments, "
    "result, error, error_type, error_message, paused, pause_reason, from_history, epoch_ns(start_time), "
    "epoch_ns(end_time), agent_path, agent_name, session_id, service_name, convention, scope_name"
)


def test_agno_tool_spans_land_as_exact_executions(world: World) -> None:
    agents = {
        "Shop Agent": world.one("Shop_Agent.run"),
        "Desk": world.one("Desk.run"),
        "Researcher": world.one("Researcher.run"),
        "Refund Desk": world.one("Refund_Desk.continue_run"),
        "Own Model Agent": world.one("Own_Model_Agent.run"),
    }
    # The instrumentor's run ids are Agno's own: the member's run is its own, the leader's groups both.
    assert world.attr(agents["Shop Agent"], "agno.run.id") == world.run_ids["checkout"]
    assert world.attr(agents["Desk"], "agno.run.id") == world.run_ids["team"]
    assert world.attr(agents["Researcher"], "agno.run.id") == world.run_ids["member"] != world.run_ids["team"]
    assert world.attr(agents["Refund Desk"], "agno.run.id") == world.run_ids["refund"]
    # The member is linked to its team twice: span parentage and OpenInference's graph node ids.
    desk_node = world.attr(agents["Desk"], "graph.node.id")
    assert world.attr(agents["Researcher"], "graph.node.parent_id") == desk_node
    assert _parent(agents["Researcher"]) == hex_span(agents["Desk"])

    def expected(
        span: ReadableSpan,
        *,
        run: str,
        task: str,
        agent_path: str,
        result: Any,
        call_id: str | None,
        error_message: str | None = None,
    ) -> dict[str, Any]:
        owner = agents[agent_path.rsplit("/", 1)[-1]]
        return {
            "run_id": world.run_ids[run],
            "task_id": task,
            "trace_id": hex_trace(span),
            "span_id": hex_span(span),
            "parent_span_id": hex_span(owner),
            "tool_name": span.name,
            "call_id": call_id,
            # OpenInference tool spans carry no call id: it comes back from the LLM span's request.
            "call_id_source": "request" if call_id else None,
            "arguments": json.loads(world.attr(span, "input.value")),
            "result": result,
            "error": error_message is not None,
            "error_type": None,  # Agno catches the exception: status ERROR, no exception event
            "error_message": error_message,
            "paused": False,
            "pause_reason": None,
            "from_history": False,
            "epoch_ns(start_time)": span.start_time,
            "epoch_ns(end_time)": span.end_time,
            "agent_path": agent_path,
            "agent_name": agent_path.rsplit("/", 1)[-1],
            "session_id": world.attr(agents[agent_path.split("/", maxsplit=1)[0]], "session.id"),
            "service_name": SERVICE,
            "convention": "openinference",
            "scope_name": SCOPE,
        }

    cutoff, own_cutoff = world.named("lookup_shipping_cutoff")
    charge = world.one("charge_card")
    assert charge.status.status_code.name == "ERROR" and charge.status.description == "card declined"
    assert not charge.events
    expected_rows = [
        expected(
            cutoff,
            run="checkout",
            task=TASK_CHECKOUT,
            agent_path="Shop Agent",
            result="north: 15:00",
            call_id="call_cutoff",
        ),
        expected(
            charge,
            run="checkout",
            task=TASK_CHECKOUT,
            agent_path="Shop Agent",
            result="card declined",  # Agno records the error text as the output
            call_id="call_charge",
            error_message="card declined",
        ),
        expected(
            world.one("delegate_task_to_member"),
            run="team",
            task=TASK_TEAM,
            agent_path="Desk",
            result="done",
            call_id="call_delegate",
        ),
        # The member's execution belongs to the leader's run, with its path.
        expected(
            world.one("search"),
            run="team",
            task=TASK_TEAM,
            agent_path="Desk/Researcher",
            result="3 results for parcels",
            call_id="call_search",
        ),
        # The confirmed refund runs in the continued run's trace; its request is in the paused run's
        # trace, so its call id is not recovered (requests are matched within one trace).
        expected(
            world.one("refund_order"),
            run="refund",
            task=TASK_REFUND,
            agent_path="Refund Desk",
            result="refunded o-17",
            call_id=None,
        ),
        # A model class of our own gets no LLM span: no request to recover the call id from.
        expected(
            own_cutoff,
            run="own-model",
            task=TASK_OWN_MODEL,
            agent_path="Own Model Agent",
            result="north: 15:00",
            call_id=None,
        ),
    ]
    rows = stored_rows(world.server, f"SELECT {EXECUTION_COLUMNS} FROM executions ORDER BY start_time")
    for row in rows:
        row["arguments"], row["result"] = json.loads(row["arguments"]), json.loads(row["result"])
    assert rows == expected_rows
    assert rows[1]["arguments"] == {"amount": 12.5, "currency": "EUR"}


def test_agno_requests_and_runs(world: World) -> None:
    chats = world.named("OpenAIChat.invoke")
    asked = "llm.output_messages.0.message.tool_calls.0.tool_call.id"
    requested = [s for s in chats if asked in (s.attributes or {})]
    assert len(chats) == 8 and len(requested) == 4  # each agent: one call turn, one text turn (refund: 1)
    requests = stored_rows(
        world.server,
        "SELECT run_id, span_id, position, tool_name, call_id, arguments, round, agent_path, encoding, "
        "execution_span_id IS NOT NULL AS executed FROM tool_requests ORDER BY requested_at, position",
    )
    for row in requests:
        row["arguments"] = json.loads(row["arguments"])
    checkout_chat, delegate_chat, search_chat, refund_chat = requested
    assert requests == [
        {
            "run_id": world.run_ids[run],
            "span_id": hex_span(chat),
            "position": position,
            "tool_name": name,
            "call_id": call_id,
            "arguments": arguments,
            "round": round_,
            "agent_path": path,
            "encoding": "openinference",
            "executed": executed,
        }
        for run, chat, position, (name, arguments, call_id), round_, path, executed in (
            ("checkout", checkout_chat, 0, CHECKOUT_TURN[0], 1, "Shop Agent", True),
            ("checkout", checkout_chat, 1, CHECKOUT_TURN[1], 1, "Shop Agent", True),
            ("team", delegate_chat, 0, DELEGATE_TURN[0], 1, "Desk", True),
            ("team", search_chat, 0, SEARCH_TURN[0], 2, "Desk/Researcher", True),
            # Paused for confirmation: Agno never reaches FunctionCall.execute, so no TOOL span exists.
            ("refund", refund_chat, 0, REFUND_TURN[0], 1, "Refund Desk", False),
        )
    ]

    runs = stored_rows(
        world.server,
        "SELECT run_id, n_traces, task_id, service_name, agent_name, root_span_id, n_executions, n_requests, "
        "status, version FROM runs ORDER BY start_time",
    )
    paused_root = world.one("Refund_Desk.run")
    assert runs == [
        {
            "run_id": world.run_ids["checkout"],
            "n_traces": 1,
            "task_id": TASK_CHECKOUT,
            "service_name": SERVICE,
            "agent_name": "Shop Agent",
            "root_span_id": hex_span(world.one("Shop_Agent.run")),
            "n_executions": 2,
            "n_requests": 2,
            "status": "complete",
            "version": 1,
        },
        {
            "run_id": world.run_ids["team"],
            "n_traces": 1,
            "task_id": TASK_TEAM,
            "service_name": SERVICE,
            "agent_name": "Desk",
            "root_span_id": hex_span(world.one("Desk.run")),
            "n_executions": 2,
            "n_requests": 2,
            "status": "complete",
            "version": 1,
        },
        # Paused and continued: two traces, one agno.run.id, so one run; recomputed once.
        {
            "run_id": world.run_ids["refund"],
            "n_traces": 2,
            "task_id": TASK_REFUND,
            "service_name": SERVICE,
            "agent_name": "Refund Desk",
            "root_span_id": hex_span(paused_root),
            "n_executions": 1,
            "n_requests": 1,
            "status": "complete",
            "version": 2,
        },
        {
            "run_id": world.run_ids["own-model"],
            "n_traces": 1,
            "task_id": TASK_OWN_MODEL,
            "service_name": SERVICE,
            "agent_name": "Own Model Agent",
            "root_span_id": hex_span(world.one("Own_Model_Agent.run")),
            "n_executions": 1,
            "n_requests": 0,
            "status": "complete",
            "version": 1,
        },
    ]


def _stored_verdicts(world: World) -> dict[tuple[str, str, int], dict[str, Any]]:
    rows = stored_rows(world.server, "SELECT verdict FROM verdicts")
    verdicts = [json.loads(row["verdict"]) for row in rows]
    return {(v["run_id"], v["spec"], v["run_version"]): v for v in verdicts}


def test_agno_runs_are_scored_online_with_the_spec(world: World) -> None:
    verdicts = _stored_verdicts(world)
    run = world.run_ids
    assert sorted((r, s, v) for r, s, v in verdicts) == sorted(
        [
            (run["checkout"], "agno-checkout", 1),
            (run["team"], "agno-team-search", 1),
            (run["team"], "agno-team-search-leader", 1),
            (run["refund"], "agno-refund", 1),
            (run["refund"], "agno-refund", 2),
            (run["own-model"], "agno-own-model", 1),
        ]
    )

    # The raising tool: attempted, errored, so the expected tool is missing; the clean one still counts.
    checkout = verdicts[(run["checkout"], "agno-checkout", 1)]
    assert (checkout["passed"], checkout["value"]) == (False, pytest.approx(2 / 3))
    assert checkout["missing_tools"] == ["charge_card (errored)"]
    assert checkout["failed_argument_checks"] == []
    assert checkout["reason"] == "expected tool charge_card has no clean execution (errored)"
    assert checkout["detail"]["reconciliation"]["counts"] == {
        "clean": 1,
        "errored": 1,
        "paused": 0,
        "requested_never_executed": 0,
        "executed_without_request": 0,
        "from_history": 0,
    }

    # The member's tool counts at any depth, and not under scope: leader.
    everyone = verdicts[(run["team"], "agno-team-search", 1)]
    assert (everyone["passed"], everyone["value"], everyone["reason"]) == (True, 1.0, None)
    leader = verdicts[(run["team"], "agno-team-search-leader", 1)]
    assert (leader["passed"], leader["value"]) == (False, 0.0)
    assert leader["missing_tools"] == ["search"]
    assert leader["reason"] == (
        "expected tool search has no clean execution; 1 member execution(s) left out (scope: leader)"
    )

    # Paused for confirmation (Agno's RunStatus.paused is not exported): only the request is evidence.
    assert world.paused_status == RunStatus.paused
    paused = verdicts[(run["refund"], "agno-refund", 1)]
    # What the API served while the run waited for a person is what was stored.
    assert paused == {k: v for k, v in world.paused_verdict.items() if k != "scored_at"}
    assert (paused["passed"], paused["value"]) == (False, 0.0)
    assert paused["missing_tools"] == ["refund_order (requested but never executed)"]
    assert paused["reason"] == (
        "run has no tool executions; expected tool refund_order has no clean execution "
        "(requested but never executed); "
        'no clean refund_order execution to match arguments {"order_id": "o-17"}'
    )
    # Confirmed and continued: the same run, version 2, now passes.
    resumed = verdicts[(run["refund"], "agno-refund", 2)]
    assert (resumed["passed"], resumed["value"], resumed["reason"]) == (True, 1.0, None)
    assert resumed["label"] == world.resumed_verdict["label"] == "pass"

    own = verdicts[(run["own-model"], "agno-own-model", 1)]
    assert (own["passed"], own["value"]) == (True, 1.0)
    assert own["detail"]["reconciliation"]["requests_captured"] is False


def test_scoring_the_file_offline_agrees_with_the_online_verdicts(world: World) -> None:
    scored = _cli(
        "score",
        "--db",
        str(world.server.db),
        "--spec",
        str(world.spec_file),
        "--format",
        "json",
        "--no-store",
    )
    assert scored.returncode == 1, scored.stderr  # some runs fail
    offline = {(v["run_id"], v["spec"]): (v["label"], v["value"]) for v in json.loads(scored.stdout)}
    latest: dict[tuple[str, str], tuple[int, tuple[str, Any]]] = {}
    for (run_id, spec, version), verdict in _stored_verdicts(world).items():
        if version >= latest.get((run_id, spec), (0, ("", None)))[0]:
            latest[(run_id, spec)] = (version, (verdict["label"], verdict["value"]))
    assert offline == {key: value for key, (_, value) in latest.items()}
