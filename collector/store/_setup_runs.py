"""Runs that only set an agent up: not runs at all (issue #27).

Compiling a LangGraph agent (`create_react_agent`, LangChain's `create_agent`) with OpenLLMetry's
LangChain instrumentation (0.62.4) or OpenLIT's (1.45) records a `create_agent` span (the OTel GenAI
"Create agent span", `gen_ai.operation.name = create_agent`) in a trace of its own, before anything
runs. Stored as a run it would be one with no task, no agent invocation and no tool: scored, every spec
selecting it would fail "run has no tool executions" about something that never ran.

The rule is the trace's shape, not an emitter's name: a run none of whose spans is an agent, a tool
execution or a model's request, and every one of whose spans is a set-up span (`SpanNode.setup`) or
inside one, only built something. Its spans stay stored; it gets no `runs` row and no verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from collector.model.domain import SpanNode


def only_sets_up(span_ids: Iterable[str], chain: Callable[[str], list[SpanNode]]) -> bool:
    """Whether these spans (one run's, with no execution or request among them) only set an agent up:
    none is an agent, and each is a set-up span or inside one."""
    seen = False
    for span_id in span_ids:
        nodes = chain(span_id)
        if not nodes or nodes[0].agent is not None or not any(n.setup for n in nodes):
            return False
        seen = True
    return seen
