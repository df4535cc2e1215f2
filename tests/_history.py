"""Stored histories built through the real ingest path (recognition, the writer, run completion), from a
short description of each run: which tools ran, how, at which agent depth, and what the model asked for."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collector.decode.prepare import prepare_spans
from collector.model.domain import STATUS_ERROR, Resource, Span
from collector.store.database import open_writer
from collector.store.writer import CompletedTrace, WriteJob, Writer, WriterSettings

START_NS = 1_700_000_000_000_000_000
AGENTS = ("lead", "member", "helper")  # depth 0, 1, 2: agent paths lead, lead/member, lead/member/helper


@dataclass(frozen=True)
class Call:
    """A tool span. `arguments` is the attribute text as sent (None: not captured)."""

    tool: str  # "" records an execution without a name
    arguments: str | None = "{}"
    error: bool = False
    paused: bool = False
    from_history: bool = False
    depth: int = 0
    duration_ms: float = 10.0
    call_id: str | None = None
    requested: bool = False  # a chat span asked for it first (with the same call id)
    result: str | None = None  # `gen_ai.tool.call.result` as sent (None: not captured)


@dataclass(frozen=True)
class Ask:
    """A tool call the model asked for that no span carried out."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    depth: int = 0


@dataclass(frozen=True)
class Handoff:
    """A handoff to `agent` as OpenInference's OpenAI Agents processor records it, after the model asked
    for `transfer_to_{agent}` (stored as an execution of that tool of kind `handoff`)."""

    agent: str
    call_id: str | None = None
    depth: int = 0


@dataclass(frozen=True)
class RunPlan:
    items: tuple[Call | Ask | Handoff, ...]
    task: str | None = "task-a"
    service: str = "shop"
    attributes: dict[str, Any] = field(default_factory=dict)  # on the root span


def _span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start_ns: int,
    duration_ms: float,
    attributes: dict[str, Any],
    resource: Resource,
    status: int = 0,
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=1,
        start_ns=start_ns,
        end_ns=start_ns + int(duration_ms * 1_000_000),
        status_code=status,
        status_message="boom" if status == STATUS_ERROR else "",
        attributes=attributes,
        events=(),
        links=(),
        resource=resource,
    )


def run_spans(index: int, plan: RunPlan) -> list[Span]:
    trace_id = f"{index + 1:032x}"
    resource = Resource({"service.name": plan.service}, "tests", "")
    start = START_NS + index * 10_000_000_000
    ids = iter(f"{index + 1:08x}{n:08x}" for n in range(1, 10_000))
    root = next(ids)
    root_attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENTS[0],
    }
    if plan.task is not None:
        root_attributes["tracescore.task.id"] = plan.task
    root_attributes.update(plan.attributes)
    spans = [_span(trace_id, root, None, "invoke_agent lead", start, 5_000, root_attributes, resource)]
    agents = [root]
    for depth in (1, 2):
        agent = next(ids)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENTS[depth],
        }
        spans.append(
            _span(
                trace_id,
                agent,
                agents[-1],
                f"invoke_agent {AGENTS[depth]}",
                start + depth,
                4_000,
                attributes,
                resource,
            )
        )
        agents.append(agent)
    at = start + 1_000_000
    for item in plan.items:
        at += 1_000_000
        if isinstance(item, Handoff):
            spans.extend(_handoff(trace_id, ids, agents[item.depth], at, item, resource))
            at += 1_000_000
            continue
        if isinstance(item, Ask) or item.requested:
            arguments = item.arguments if isinstance(item, Ask) else _loads(item.arguments)
            part: dict[str, Any] = {"type": "tool_call", "name": item.tool, "arguments": arguments}
            if item.call_id is not None:
                part["id"] = item.call_id
            messages = [{"role": "assistant", "parts": [part]}]
            attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(messages)}
            spans.append(
                _span(trace_id, next(ids), agents[item.depth], "chat", at, 0.5, attributes, resource)
            )
            at += 1_000_000
        if isinstance(item, Call):
            attributes = {"gen_ai.operation.name": "execute_tool"}
            if item.tool:
                attributes["gen_ai.tool.name"] = item.tool
            if item.arguments is not None:
                attributes["gen_ai.tool.call.arguments"] = item.arguments
            if item.call_id is not None:
                attributes["gen_ai.tool.call.id"] = item.call_id
            if item.result is not None:
                attributes["gen_ai.tool.call.result"] = item.result
            if item.paused:
                attributes["tracescore.tool.paused"] = True
            if item.from_history:
                attributes["tracescore.tool.from_history"] = True
            status = STATUS_ERROR if item.error else 0
            name = f"execute_tool {item.tool}"
            spans.append(
                _span(
                    trace_id,
                    next(ids),
                    agents[item.depth],
                    name,
                    at,
                    item.duration_ms,
                    attributes,
                    resource,
                    status,
                )
            )
    return spans


def _handoff(
    trace_id: str, ids: Iterator[str], parent: str, at: int, item: Handoff, resource: Resource
) -> list[Span]:
    part: dict[str, Any] = {"type": "tool_call", "name": f"transfer_to_{item.agent}", "arguments": {}}
    if item.call_id is not None:
        part["id"] = item.call_id
    ask = {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [part]}]),
    }
    handoff = {
        "openinference.span.kind": "TOOL",
        "input.value": AGENTS[item.depth],
        "output.value": item.agent,
    }
    scope = Resource(resource.attributes, "openinference.instrumentation.openai_agents", "")
    return [
        _span(trace_id, next(ids), parent, "chat", at, 0.5, ask, resource),
        _span(trace_id, next(ids), parent, f"handoff to {item.agent}", at + 1_000_000, 1.0, handoff, scope),
    ]


def _loads(text: str | None) -> Any:
    try:
        return json.loads(text) if text is not None else {}
    except ValueError:
        return text


def build_history(
    path: Path, plans: list[RunPlan], on_complete: Callable[[list[CompletedTrace]], None] | None = None
) -> None:
    """A tracescore database holding these runs, every one complete."""
    connection = open_writer(path)
    try:
        writer = Writer(connection, WriterSettings(grace_s=3600), on_complete)
        answers: list[BaseException | None] = []
        writer.start()
        for index, plan in enumerate(plans):
            spans = run_spans(index, plan)
            writer.submit(WriteJob(prepare_spans(spans), answers.append))
        writer.stop()  # completes every open run
        assert answers == [None] * len(plans), answers
    finally:
        connection.close()
