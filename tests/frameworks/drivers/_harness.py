"""What every framework driver shares: the OTLP export (and its recording), the ledger of tool calls, and
the scenario each driver plays.

A driver runs inside its framework's own virtualenv (their pins conflict), so this module needs only
`opentelemetry-sdk` and `opentelemetry-exporter-otlp-proto-http`, never tracescore. It exports over
real OTLP/HTTP to `--endpoint` and, with `--record DIR`, also writes:

- `DIR/otlp.jsonl`: every export request exactly as sent, one OTLP/JSON request per line (the OTLP
  spec's JSON encoding: lowerCamelCase keys, hex ids, enums as integers);
- `DIR/calls.json`: the ground truth: per invocation of the agent, its task and every call its tools
  really received (arguments as the tool got them, and the message of what it raised), plus the
  versions of the framework packages that produced the spans.

The scenario (what the scripted model asks for) is the same in every driver, so one set of specs and
one set of checks judge them all (tests/frameworks/test_recorded.py, tests/frameworks/test_live.py):

- task `weather`: `get_weather(city)` (one string parameter) twice, for Paris and Tokyo, in one model
  turn where the framework runs parallel calls, else in two; then a final answer.
- task `booking`: `book_flight(destination, passengers)` raises `ValueError("no seats left to Oslo")`;
  the model then answers without it.

Where a framework has a multi-agent facility, its `-multiagent-` cells play the delegation scenario
instead (`DELEGATION`, one invocation):

- task `delegation`: the leader agent `coordinator` hands the question to the member agent
  `weather_agent` through the framework's own facility (agent as a tool, sub-agent, managed agent, crew
  delegation, subgraph, team); the member calls `get_weather(city="Paris")` and answers; the leader then
  answers. The ledger records which agent made each call (`agent`), and the truth names the leader and
  the member (`agents`), so the checks can hold each execution's `agent_path` to the agent that ran it.
"""

from __future__ import annotations

import argparse
import base64
import importlib.metadata
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

WEATHER = {"Paris": "18°C, light rain", "Tokyo": "24°C, clear"}
NO_SEATS = "no seats left to Oslo"
WEATHER_PROMPT = "What is the weather in Paris and in Tokyo?"
BOOKING_PROMPT = "Book a flight to Oslo for two people."
WEATHER_ANSWER = "Paris: 18°C, light rain. Tokyo: 24°C, clear."
BOOKING_ANSWER = "Sorry, there are no seats left to Oslo."

# The calls the scripted model makes, in order, with the call ids it gives them.
WEATHER_CALLS = (
    ("call_paris", "get_weather", {"city": "Paris"}),
    ("call_tokyo", "get_weather", {"city": "Tokyo"}),
)
BOOKING_CALLS = (("call_oslo", "book_flight", {"destination": "Oslo", "passengers": 2}),)
# The two invocations every driver plays: (task, prompt, the model's calls, its final answer).
SCENARIO = (
    ("weather", WEATHER_PROMPT, WEATHER_CALLS, WEATHER_ANSWER),
    ("booking", BOOKING_PROMPT, BOOKING_CALLS, BOOKING_ANSWER),
)

# The delegation scenario: the leader's model delegates (how is the framework's own business), the
# member's model calls `MEMBER_CALLS`, then each answers.
LEADER = "coordinator"
MEMBER = "weather_agent"
DELEGATION_TASK = "delegation"
DELEGATION_PROMPT = "What is the weather in Paris? Ask the weather agent."
MEMBER_REQUEST = "What is the weather in Paris?"
MEMBER_CALLS = (("call_member_paris", "get_weather", {"city": "Paris"}),)
MEMBER_ANSWER = "Paris: 18°C, light rain."
LEADER_ANSWER = "The weather agent says: Paris: 18°C, light rain."


def _hex(value: str) -> str:
    return base64.b64decode(value).hex()


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The export request the OTLP exporter sends for these spans, in OTLP/JSON."""
    request: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = _hex(span[key])
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = _hex(link[key])
    return request


class RecordingExporter(SpanExporter):
    """The real OTLP/HTTP exporter, and a line of OTLP/JSON per request it is handed."""

    def __init__(self, endpoint: str, record: Path | None) -> None:
        self._exporter = OTLPSpanExporter(endpoint=endpoint)
        self._record = record.open("a") if record is not None else None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._record is not None:
            with self._lock:
                self._record.write(json.dumps(otlp_json(spans), ensure_ascii=False) + "\n")
                self._record.flush()
        return self._exporter.export(spans)

    def shutdown(self) -> None:
        self._exporter.shutdown()
        if self._record is not None:
            self._record.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def arguments(description: str | None) -> argparse.ArgumentParser:
    """The arguments every driver takes; a driver adds its own (`--shape`, `--instrumentation`, …)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--endpoint", default="http://127.0.0.1:4318/v1/traces", help="OTLP/HTTP traces URL")
    parser.add_argument("--record", type=Path, default=None, help="directory for otlp.jsonl and calls.json")
    return parser


class Harness:
    """One driver's run: its tracer provider, the invocation in progress, and what the tools received."""

    def __init__(self, cell: str, packages: Sequence[str], endpoint: str, record: Path | None) -> None:
        self.cell = cell
        self.packages = packages
        self.record = record
        if self.record is not None:
            self.record.mkdir(parents=True, exist_ok=True)
            (self.record / "otlp.jsonl").unlink(missing_ok=True)
        self.provider = TracerProvider(resource=Resource.create({"service.name": cell}))
        self.provider.add_span_processor(
            BatchSpanProcessor(
                RecordingExporter(endpoint, self.record / "otlp.jsonl" if self.record else None)
            )
        )
        self._tracer = self.provider.get_tracer("tracescore.frameworks.harness")
        self.invocations: list[dict[str, Any]] = []

    @contextmanager
    def invocation(self, task: str) -> Iterator[None]:
        """One invocation of the agent, under a span naming its task, as docs/integrations.md advises.

        Some frameworks let a tool's exception end the whole invocation (LangGraph's `ToolNode` does by
        default): that is recorded as what the invocation `raised`, and the driver goes on."""
        invocation: dict[str, Any] = {"task": task, "calls": [], "raised": None}
        self.invocations.append(invocation)
        with self._tracer.start_as_current_span("rollout", attributes={"tracescore.task.id": task}):
            try:
                yield
            except Exception as exc:  # the framework's own answer to the tool's error
                invocation["raised"] = f"{type(exc).__name__}: {exc}"

    def called(
        self, tool: str, arguments: dict[str, Any], returned: Any = None, agent: str | None = None
    ) -> dict[str, Any]:
        """What a tool received (and will return), recorded by the tool itself before it does anything;
        `agent`: which agent of a multi-agent scenario the tool belongs to.

        One append per call: parallel calls run in threads in some frameworks (smolagents, Strands)."""
        call = {"tool": tool, "arguments": arguments, "error": None, "returned": returned}
        if agent is not None:
            call["agent"] = agent
        self.invocations[-1]["calls"].append(call)
        return call

    def get_weather(self, city: str, agent: str | None = None) -> str:
        return str(
            self.called("get_weather", {"city": city}, returned=WEATHER[city], agent=agent)["returned"]
        )

    def member_get_weather(self) -> Callable[[str], str]:
        """The member's `get_weather` of the delegation scenario, as a plain typed function."""

        def get_weather(city: str) -> str:
            """The current weather in a city."""
            return self.get_weather(city, agent=MEMBER)

        return get_weather

    def book_flight(self, destination: str, passengers: int) -> str:
        call = self.called("book_flight", {"destination": destination, "passengers": passengers})
        call["error"] = NO_SEATS
        raise ValueError(NO_SEATS)

    def tools(self) -> tuple[Callable[[str], str], Callable[[str, int], str]]:
        """The scenario's tools as plain typed functions with docstrings, as most frameworks take them."""

        def get_weather(city: str) -> str:
            """The current weather in a city."""
            return self.get_weather(city)

        def book_flight(destination: str, passengers: int) -> str:
            """Book a flight for some passengers."""
            return self.book_flight(destination, passengers)

        return get_weather, book_flight

    def finish(
        self,
        *,
        requests: bool,
        arguments: bool = True,
        error_messages: bool = True,
        internal_tools: Sequence[str] = (),
        delegation_tools: Sequence[str] = (),
        agent_names: dict[str, str] | None = None,
        **facts: Any,
    ) -> None:
        """Flush every span, and write the ground truth beside the recording.

        `requests`: the instrumentation shows the calls the model asked for (chat/LLM spans), so every
        execution must be joined to its request. `arguments`: it captures tool arguments at all (some
        instrumentations capture no content by default). `error_messages`: the spans carry the text of a
        tool's exception anywhere. `internal_tools`: tools the framework itself runs beside the agent's
        own (smolagents' `final_answer`): real executions the ledger lacks.

        For the delegation scenario: `delegation_tools` are the tools through which the framework has the
        leader hand work to the member (an agent used as a tool, ADK's `transfer_to_agent`): real
        executions of the leader the ledger lacks. `agent_names`: the name the framework's spans give
        each agent of the scenario (`LEADER`, `MEMBER`), where it is not the agent's own name."""
        self.provider.force_flush()
        self.provider.shutdown()
        if self.record is None:
            return
        versions = {name: importlib.metadata.version(name) for name in self.packages}
        truth = {
            "cell": self.cell,
            "versions": versions,
            "requests": requests,
            "arguments": arguments,
            "error_messages": error_messages,
            "internal_tools": list(internal_tools),
            "invocations": self.invocations,
            **facts,
        }
        if any(call.get("agent") for invocation in self.invocations for call in invocation["calls"]):
            names = {LEADER: LEADER, MEMBER: MEMBER, **(agent_names or {})}
            truth["agents"] = {"leader": names[LEADER], "member": names[MEMBER]}
            truth["delegation_tools"] = list(delegation_tools)
        (self.record / "calls.json").write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n")
