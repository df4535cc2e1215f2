"""Domain types shared by the decoders, recognition, run tracking and the store.

Nothing here knows protobuf, JSON wire rules or DuckDB: a span is plain Python values. They are
treated as immutable but not declared frozen: a frozen dataclass sets every field through
object.__setattr__, which on the span hot path cost more than the rest of decoding
(bench/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar

from collector.model.jsontext import to_json

_T = TypeVar("_T")


def compact_pickle(cls: type[_T]) -> type[_T]:
    """Pickle as (class, field values): what recognition returns crosses from the decode workers
    (collector/decode/pool.py), and the default for slotted dataclasses (a state dict per object, set
    field by field; Python code for frozen ones) took 19 µs a span to load against 7 this way."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    # attrgetter with two or more names returns the values as a tuple, read in C.
    values = attrgetter(*names) if len(names) > 1 else lambda obj: (getattr(obj, names[0]),)

    def __reduce__(self: _T) -> tuple[type[_T], tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[assignment,method-assign]
    return cls


# The instrumentation scope of what tracescore itself emits (verdict spans and metrics); spans of this
# scope that come back through the user's pipeline are recognised and ignored.
OWN_SCOPE = "tracescore"

# What an execution was (executions.kind): a call of one of the agent's tools, or a handoff of the
# conversation to another agent that the framework runs as a tool call (the model calls
# `transfer_to_…`). Specs see handoffs only where they name them (docs/checks.md).
TOOL = "tool"
HANDOFF = "handoff"

# OTLP status codes (trace.proto Status.StatusCode).
STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class SpanLink:
    trace_id: str
    span_id: str
    attributes: dict[str, Any]


@dataclass(slots=True)
class Resource:
    """One OTLP Resource plus the instrumentation scope that emitted the spans; shared by many spans."""

    attributes: dict[str, Any]
    scope_name: str
    scope_version: str
    # The attributes as JSON text, computed once for all the spans that share this resource.
    attributes_json: str | None = None

    @property
    def service_name(self) -> str | None:
        value = self.attributes.get("service.name")
        return value if isinstance(value, str) else None


@dataclass(slots=True)
class Span:
    """A decoded span: ids are lowercase hex, times are Unix nanoseconds, attributes plain Python."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    events: tuple[SpanEvent, ...]
    links: tuple[SpanLink, ...]
    resource: Resource
    trace_state: str = ""
    flags: int = 0
    dropped_attributes_count: int = 0
    dropped_events_count: int = 0
    dropped_links_count: int = 0

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


@compact_pickle
@dataclass(slots=True)
class Arguments:
    """Tool-call arguments as received: parsed JSON when possible, the raw text kept and flagged otherwise.

    `value` is None when the emitter captured no arguments (content capture is off by default in most
    emitters): absent is not the same as `{}`.
    """

    value: Any = None
    raw: str | None = None
    error: str | None = None
    # False when `value` was derived from `raw` (Traceloop's args/kwargs unwrapped), not parsed as is.
    raw_is_value: bool = True

    @property
    def present(self) -> bool:
        return self.value is not None or self.raw is not None

    def json_text(self) -> str | None:
        """The arguments as JSON text for storage: the text as received when it is the value, so valid
        JSON is never parsed and dumped again."""
        if self.raw is not None and self.error is None and self.raw_is_value:
            return self.raw
        return to_json(self.value)


NO_ARGUMENTS = Arguments()


@compact_pickle
@dataclass(slots=True)
class ToolExecution:
    """What recognition reads off one tool-execution span (run fields are resolved later, per trace)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    tool_name: str
    call_id: str | None
    arguments: Arguments
    result: Any
    error: bool
    error_type: str | None
    error_message: str | None
    paused: bool
    pause_reason: str | None
    from_history: bool
    start_ns: int
    end_ns: int
    convention: str
    service_name: str | None
    scope_name: str
    kind: str = "tool"  # TOOL or HANDOFF (executions.kind)
    # Which of the span's calls this is (executions.call_index): 0 unless one span records several calls
    # (Haystack 2's ToolInvoker runs every call of a model turn inside one component span).
    call_index: int = 0
    # The span is an agent's own run, recorded as the call of that agent as a tool by the agent above it
    # (smolagents' managed agents, which have no tool span): run resolution keeps it only where another
    # agent is above the span, and places it with that caller, not inside the agent it ran.
    agent_call: bool = False

    @property
    def key(self) -> tuple[str, int]:
        """The execution's identity within its trace: its span and its place among that span's calls."""
        return self.span_id, self.call_index


@compact_pickle
@dataclass(slots=True)
class ToolRequest:
    """A tool call the model asked for on a chat span (request-side evidence: never satisfies a check)."""

    trace_id: str
    span_id: str
    position: int
    tool_name: str
    call_id: str | None
    arguments: Arguments
    requested_ns: int
    encoding: str


@compact_pickle
@dataclass(slots=True)
class ToolOutcome:
    """How a tool call ended, as a later span reports it: some instrumentations leave a failed tool's own
    span OK and say so only where the result goes back to the model (the next LLM span's input)."""

    trace_id: str
    span_id: str  # the span that reports it
    call_id: str
    tool_name: str | None
    error: bool
    content: str | None  # what went back to the model: for a failure, the error's message
    reported_ns: int


@compact_pickle
@dataclass(slots=True)
class AgentInfo:
    """What run resolution needs from a span that is an agent invocation."""

    name: str
    run_id: str | None


# The name of an agent span that is a workflow not saying its agent (ADK schema v1's `invocation`): run
# resolution names it after the first agent it runs, its root agent.
UNNAMED_WORKFLOW = ""


@compact_pickle
@dataclass(slots=True)
class SpanNode:
    """The slim per-span facts run tracking keeps in memory for an open trace."""

    span_id: str
    parent_span_id: str | None
    start_ns: int
    end_ns: int
    agent: AgentInfo | None
    explicit_run_id: str | None
    task_id: str | None
    session_id: str | None
    service_name: str | None
    attributes_for_select: dict[str, Any] = field(default_factory=dict)
    # Google ADK writes its invocation (run) id on the LLM spans inside an agent, not on the agent span.
    inner_run_id: str | None = None
    # LangGraph only: how deep in nested graphs the node this span belongs to sits (the segments of its
    # checkpoint namespace; 0 outside any node), and the span's name as an agent. A graph run inside
    # another graph's node (a subgraph, an agent called from a tool) is told by its children.
    graph_depth: int = 0
    graph_name: str | None = None
    # A tool span that runs another agent, which its own arguments name (CrewAI's coworker tools): the
    # spans below it are that agent's (collector/store/_members.py).
    delegates_to: str | None = None
    # A span that only builds an agent (GenAI `create_agent`): a trace of nothing else is no run.
    setup: bool = False
