"""One tool call recorded more than once, or how it ended recorded elsewhere: what run resolution
(collector/store/_resolve.py) folds back into one execution and one request per call."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from collector.model.domain import SpanNode, ToolExecution, ToolOutcome, ToolRequest

# A span and its ancestors inside its trace, nearest first.
Chain = Callable[[str], list[SpanNode]]


def canonical(value: Any) -> str:
    """A value's JSON text with its keys sorted: equal arguments give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _merged(inner: ToolExecution, outer: ToolExecution) -> ToolExecution:
    """One call that two instrumentations recorded, one span inside the other: the inner span (the call
    itself) with what only the outer one captured: arguments, result, call id, how it failed."""
    arguments = inner.arguments
    if not isinstance(arguments.value, dict) and (
        isinstance(outer.arguments.value, dict) or not arguments.present
    ):
        arguments = outer.arguments
    failed = inner if inner.error else outer
    return replace(
        inner,
        arguments=arguments,
        result=inner.result if inner.result is not None else outer.result,
        call_id=inner.call_id or outer.call_id,
        error=inner.error or outer.error,
        error_type=failed.error_type,
        error_message=failed.error_message if failed.error else None,
    )


def drop_transport_duplicates(chain: Chain, executions: list[ToolExecution]) -> list[ToolExecution]:
    """One call recorded by two nested execution spans of the same tool is stored once.

    An MCP `tools/call` span is the transport: the framework's execution span is kept; an MCP client span
    above the server's span of the same call: the server's is kept, it saw how the tool ended. Two spans
    of other conventions (two instrumentations of one framework, e.g. OpenInference's AutoGen tool span
    above AutoGen's own `execute_tool`) are merged into the inner one (`_merged`). Spans of one convention
    nested under the same tool name are left alone: a tool may call itself.
    """
    by_span: dict[str, list[ToolExecution]] = {}
    for e in executions:
        by_span.setdefault(e.span_id, []).append(e)
    dropped: set[tuple[str, int]] = set()
    merged: dict[tuple[str, int], ToolExecution] = {}
    for execution in executions:
        for ancestor in chain(execution.span_id)[1:]:
            outer = _same_tool(by_span.get(ancestor.span_id, ()), execution)
            if outer is not None:
                if execution.convention == "mcp" and outer.convention == "mcp":
                    dropped.add(outer.key)  # the client's span above the server's: one call
                elif execution.convention == "mcp":
                    dropped.add(execution.key)
                elif outer.convention == "mcp":
                    dropped.add(outer.key)
                elif outer.convention != execution.convention and outer.key not in merged:
                    merged[execution.key] = _merged(execution, outer)
                    dropped.add(outer.key)
                break
    if not dropped:
        return executions
    return [merged.get(e.key, e) for e in executions if e.key not in dropped]


def _same_tool(outers: Sequence[ToolExecution], inner: ToolExecution) -> ToolExecution | None:
    """The execution of an enclosing span that records the same call as `inner`: the one of that tool;
    where the span records several calls of it, the one with inner's call id, else its arguments."""
    named = [o for o in outers if o.tool_name == inner.tool_name]
    if len(named) <= 1:
        return named[0] if named else None
    wanted = canonical(inner.arguments.value)
    return next(
        (o for o in named if inner.call_id and o.call_id == inner.call_id),
        next((o for o in named if canonical(o.arguments.value) == wanted), None),
    )


def drop_nested_duplicates(chain: Chain, requests: list[ToolRequest]) -> list[ToolRequest]:
    """A model call recorded by two nested LLM spans asks for its tool calls once, not twice.

    LlamaIndex's `CustomLLM.achat` calls `chat`, and OpenInference instruments both (issue #16): the
    outer span repeats the inner one's calls exactly. The innermost span is kept; only spans on one
    ancestor chain are compared, so the same calls asked again in another turn are never merged."""
    by_span: dict[str, list[ToolRequest]] = {}
    for request in requests:
        by_span.setdefault(request.span_id, []).append(request)
    if len(by_span) < 2:
        return requests
    signatures: dict[str, tuple[tuple[str | None, str, str], ...]] = {}

    def signature(span_id: str) -> tuple[tuple[str | None, str, str], ...]:
        if span_id not in signatures:  # computed only for chat spans nested in one another: rare
            signatures[span_id] = tuple(
                (r.call_id, r.tool_name, canonical(r.arguments.value)) for r in by_span[span_id]
            )
        return signatures[span_id]

    repeated: set[str] = set()
    for span_id in by_span:
        for ancestor in chain(span_id)[1:]:
            if ancestor.span_id in by_span and signature(ancestor.span_id) == signature(span_id):
                repeated.add(ancestor.span_id)
    return [r for r in requests if r.span_id not in repeated]


def reported_failure(execution: ToolExecution, outcome: ToolOutcome | None) -> ToolExecution:
    """The execution as it ended: failed, when a later span reported its call id as an error although its
    own span did not (collector/recognise/outcomes.py)."""
    if (
        outcome is None
        or execution.error
        or outcome.reported_ns < execution.start_ns
        or (outcome.tool_name is not None and outcome.tool_name != execution.tool_name)
    ):
        return execution
    return replace(execution, error=True, error_message=outcome.content)
