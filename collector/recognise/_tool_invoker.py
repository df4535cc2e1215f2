"""Haystack 2's ToolInvoker: one component span that records every tool call of a model turn.

Haystack 2's Agent runs a step's tool calls through its `ToolInvoker` component (haystack-ai 2.31.0,
`components/tools/tool_invoker.py`), and tracing opens one span for the component, not one per call. The
span's output keeps each call's outcome, with the call it answers: `tool_messages`, one `ChatMessage` per
call whose content is a `ToolCallResult(result, origin=ToolCall(tool_name, arguments, id), error)`.

- Haystack's own tracing (`core/pipeline/base.py`, content tracing on): a `haystack.component.run` span
  with `haystack.component.type` `ToolInvoker` and the output as JSON in `haystack.component.output`:
  `{"tool_messages": [{"content": [{"tool_call_result": {"result", "origin": {"tool_name", "arguments",
  "id"}, "error"}}]}]}` (`ChatMessage.to_dict`).
- OpenInference (openinference-instrumentation-haystack 0.1.46): a `ToolInvoker.run` CHAIN span whose
  `output.value` is JSON with each message as its Python repr: `"ChatMessage(_role=<ChatRole.TOOL:
  'tool'>, _content=[ToolCallResult(result='…', origin=ToolCall(tool_name='…', arguments={…},
  id='…', extra=None), error=False)], _name=None, _meta={})"`. The repr is parsed as Python syntax
  (`ast`, never evaluated) and only its literals are read (`ast.literal_eval` of one value at a time).
  A result that is not a literal (a list of `TextContent`) is left unread.

A failed call's result is Haystack's notice `Failed to invoke Tool `NAME` with parameters {…}. Error:
MESSAGE`: the call is flagged errored, with the exception's message, and no result (as for Haystack 3).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from collector.model.domain import Arguments, Span, ToolExecution
from collector.recognise._content import load_json_text
from collector.recognise._shapes import haystack_failure_message

_NATIVE_SPAN = "haystack.component.run"
_OPENINFERENCE_SPAN = "ToolInvoker.run"
_OPENINFERENCE_SCOPE = "openinference.instrumentation.haystack"
_TOOL_INVOKER = "ToolInvoker"
# A repr longer than this is not parsed: a tool message is a few hundred characters, and ast's cost
# (and recursion) grows with what a sender puts there.
_MAX_REPR = 1_000_000
# The one part of a ChatMessage repr that is not Python syntax: its role enum's repr.
_ROLE = re.compile(r"^ChatMessage\(_role=<ChatRole\.[A-Z_]+: '[a-z_]+'>")


@dataclass(frozen=True, slots=True)
class InvokedCall:
    """One call as the ToolInvoker span reports it."""

    tool_name: str
    arguments: Arguments
    result: Any
    call_id: str | None
    error: bool
    error_message: str | None


def tool_invoker_calls(span: Span) -> list[InvokedCall] | None:
    """The calls a Haystack 2 ToolInvoker span ran, in order; None when the span is no ToolInvoker's (an
    empty list when it is one whose output was not captured, or ran no call)."""
    attrs = span.attributes
    if span.name == _NATIVE_SPAN and attrs.get("haystack.component.type") == _TOOL_INVOKER:
        return _native(attrs.get("haystack.component.output"))
    if span.name == _OPENINFERENCE_SPAN and span.resource.scope_name == _OPENINFERENCE_SCOPE:
        return _openinference(attrs.get("output.value"))
    return None


def tool_invoker_executions(span: Span) -> tuple[ToolExecution, ...] | None:
    """One execution per call of a ToolInvoker span (`call_index` its place in the output), sharing the
    span's times; None when the span is no ToolInvoker's."""
    calls = tool_invoker_calls(span)
    if calls is None:
        return None
    return tuple(
        ToolExecution(
            trace_id=span.trace_id,
            span_id=span.span_id,
            parent_span_id=span.parent_span_id,
            tool_name=call.tool_name,
            call_id=call.call_id,
            arguments=call.arguments,
            result=call.result,
            error=call.error,
            error_type=None,
            error_message=call.error_message,
            paused=False,
            pause_reason=None,
            from_history=False,
            start_ns=span.start_ns,
            end_ns=span.end_ns,
            convention=_CONVENTIONS[span.name],
            service_name=span.resource.service_name,
            scope_name=span.resource.scope_name,
            call_index=index,
        )
        for index, call in enumerate(calls)
    )


_CONVENTIONS = {_NATIVE_SPAN: "haystack", _OPENINFERENCE_SPAN: "openinference"}


def _messages(output: Any) -> list[Any]:
    loaded = load_json_text(output)
    messages = loaded.get("tool_messages") if isinstance(loaded, dict) else None
    return messages if isinstance(messages, list) else []


def _call(name: Any, arguments: Any, call_id: Any, result: Any, error: Any) -> InvokedCall | None:
    if not isinstance(name, str) or not name:
        return None
    failed = error is True
    message = haystack_failure_message(result) if failed and isinstance(result, str) else None
    return InvokedCall(
        tool_name=name,
        arguments=Arguments(value=arguments, raw=None) if arguments is not None else Arguments(),
        result=None if failed else result,
        call_id=call_id if isinstance(call_id, str) and call_id else None,
        error=failed,
        error_message=message,
    )


def _native(output: Any) -> list[InvokedCall]:
    calls = []
    for message in _messages(output):
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            outcome = block.get("tool_call_result") if isinstance(block, dict) else None
            if not isinstance(outcome, dict) or not isinstance(origin := outcome.get("origin"), dict):
                continue
            call = _call(
                origin.get("tool_name"),
                origin.get("arguments"),
                origin.get("id"),
                outcome.get("result"),
                outcome.get("error"),
            )
            if call is not None:
                calls.append(call)
    return calls


def _openinference(output: Any) -> list[InvokedCall]:
    calls = []
    for message in _messages(output):
        if not isinstance(message, str) or len(message) > _MAX_REPR or not _ROLE.match(message):
            continue
        try:
            tree = ast.parse(_ROLE.sub("ChatMessage(_role=None", message, count=1), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        content = _keywords(tree.body, "ChatMessage").get("_content")
        for node in content.elts if isinstance(content, ast.List) else []:
            outcome = _keywords(node, "ToolCallResult")
            origin = _keywords(outcome.get("origin"), "ToolCall")
            if not origin:
                continue
            call = _call(
                _literal(origin.get("tool_name")),
                _literal(origin.get("arguments")),
                _literal(origin.get("id")),
                _literal(outcome.get("result")),
                _literal(outcome.get("error")),
            )
            if call is not None:
                calls.append(call)
    return calls


def _keywords(node: ast.expr | None, callee: str) -> dict[str, ast.expr]:
    """The keyword arguments of a repr `callee(key=value, …)`, by name; empty for anything else."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == callee):
        return {}
    return {k.arg: k.value for k in node.keywords if k.arg is not None}


def _literal(node: ast.expr | None) -> Any:
    """A Python literal's value (a string, number, bool, None, or a dict/list of them); None otherwise."""
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
