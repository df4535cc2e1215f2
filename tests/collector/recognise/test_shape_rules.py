"""Shapes read wherever they appear, not only under the scope they were first seen in (issue #27).

LangChain's serialised ToolMessage (bare, in OpenInference JS's `{"output": …}` wrapper or in
OpenLLMetry's `{"output", "kwargs"}`), LangChain.js's `message + "\\n\\n" + stack` error text, a
LangChain AIMessage's tool calls, and Mastra's model steps. The recorded JavaScript cells
(tests/frameworks/fixtures/langgraphjs-openinference, mastra-otel, openai-agents-js-openinference) hold
the real spans; these are the same shapes under scopes no recording has.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from collector.model.domain import Resource, Span, SpanEvent
from collector.recognise._langchain_messages import llm_tool_calls, tool_message, without_js_stack
from collector.recognise.conventions import recognise_execution
from collector.recognise.requests import extract_requests

# As @langchain/core 1.4.0 serialises a ToolMessage (recorded by OpenInference JS 4.1.1).
_TOOL_MESSAGE = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain_core", "messages", "ToolMessage"],
    "kwargs": {"status": "success", "content": "18°C, light rain", "tool_call_id": "call_paris"},
}
# As langchain_core's `message_to_dict` writes one (OpenInference Python 0.1.80).
_TOOL_MESSAGE_DICT = {"type": "tool", "data": {"content": "18°C, light rain", "tool_call_id": "call_paris"}}
_STACK = (
    "no seats left to Oslo\n\nError: no seats left to Oslo\n"
    "    at Harness.bookFlight (file:///app/harness.mjs:184:11)\n"
    "    at DynamicStructuredTool._call (file:///app/node_modules/@langchain/core/dist/tools/index.js:256:15)"
)


@pytest.mark.parametrize(
    "value",
    [
        _TOOL_MESSAGE,
        {"output": _TOOL_MESSAGE},
        {"output": _TOOL_MESSAGE, "kwargs": {"name": "get_weather"}},
        _TOOL_MESSAGE_DICT,
        json.dumps({"output": _TOOL_MESSAGE}),
    ],
    ids=["constructor", "output-wrapper", "callback-wrapper", "dict", "json-text"],
)
def test_a_serialised_tool_message_gives_its_content_and_call_id(value: Any) -> None:
    assert tool_message(value) == ("18°C, light rain", "call_paris")


@pytest.mark.parametrize(
    "value",
    [
        "18°C, light rain",
        {"output": "18°C, light rain"},
        {"output": _TOOL_MESSAGE, "other": 1},  # not a wrapper any instrumentation writes
        {**_TOOL_MESSAGE, "id": ["langchain_core", "messages", "AIMessage"]},
        {**_TOOL_MESSAGE, "kwargs": {"content": "x"}},  # no call id: not a ToolMessage
        {"type": "tool", "data": {"content": "x"}},
    ],
)
def test_other_values_are_no_tool_message(value: Any) -> None:
    assert tool_message(value) is None


def test_langchain_js_error_text_loses_its_stack_and_other_text_stays() -> None:
    assert without_js_stack(_STACK) == "no seats left to Oslo"
    assert without_js_stack("TypeError: x") == "TypeError: x"
    assert without_js_stack("first\n\nsecond paragraph") == "first\n\nsecond paragraph"
    # The stack must repeat the message: any other text after a blank line is kept.
    assert without_js_stack("a\n\nError: b\n    at f (x.js:1:1)") == "a\n\nError: b\n    at f (x.js:1:1)"


def test_an_ai_message_lists_its_tool_calls_in_order() -> None:
    output = {
        "generations": [
            [
                {
                    "text": "",
                    "message": {
                        "lc": 1,
                        "type": "constructor",
                        "id": ["langchain_core", "messages", "AIMessage"],
                        "kwargs": {
                            "content": "",
                            "tool_calls": [
                                {"id": "call_paris", "name": "get_weather", "args": {"city": "Paris"}},
                                {"id": "call_tokyo", "name": "get_weather", "args": {"city": "Tokyo"}},
                            ],
                        },
                    },
                }
            ]
        ]
    }
    assert [c["id"] for c in llm_tool_calls(json.dumps(output))] == ["call_paris", "call_tokyo"]
    assert llm_tool_calls(json.dumps({"generations": [[{"text": "hi"}]]})) == []


# --- under scopes no recording has, through both readers ----------------------------------------------

_ELSEWHERE = Resource({"service.name": "shapes"}, "my.company.instrumentation", "1")


def _span(n: int, name: str, attributes: dict[str, Any], *, status: int = 0, message: str = "") -> Span:
    events: tuple[SpanEvent, ...] = ()
    if message:
        events = (SpanEvent("exception", 1, {"exception.message": message}),)
    return Span(
        "cd" * 16,
        f"{n:016x}",
        None,
        name,
        1,
        1_000 * n,
        1_000 * n + 500,
        status,
        message,
        attributes,
        events,
        (),
        _ELSEWHERE,
    )


_OPENINFERENCE_TOOL = _span(
    1,
    "get_weather",
    {
        "openinference.span.kind": "TOOL",
        "tool.name": "get_weather",
        "input.value": "Paris",
        "output.value": json.dumps({"output": _TOOL_MESSAGE}),
    },
)
_TRACELOOP_TOOL = _span(
    2,
    "get_weather.tool",
    {
        "traceloop.span.kind": "tool",
        "traceloop.entity.input": '{"city": "Paris"}',
        "traceloop.entity.output": json.dumps({"output": _TOOL_MESSAGE, "kwargs": {}}),
    },
)
_FAILED_TOOL = _span(
    3,
    "book_flight",
    {"openinference.span.kind": "TOOL", "tool.name": "book_flight", "input.value": '{"destination": "Oslo"}'},
    status=2,
    message=_STACK,
)
_MASTRA_STEP = _span(
    4,
    "agent_step travel_agent",
    {
        "gen_ai.operation.name": "agent_step",
        "mastra.span.type": "model_step",
        "mastra.model_step.output": json.dumps(
            {
                "text": "",
                "toolCalls": [{"toolCallId": "call_oslo", "toolName": "book_flight", "args": {"a": 1}}],
            }
        ),
    },
)
_SPANS = [_OPENINFERENCE_TOOL, _TRACELOOP_TOOL, _FAILED_TOOL, _MASTRA_STEP]


@pytest.mark.parametrize("span", [_OPENINFERENCE_TOOL, _TRACELOOP_TOOL], ids=["openinference", "traceloop"])
def test_a_tool_message_result_is_read_in_any_scope(span: Span) -> None:
    execution = recognise_execution(span)
    assert execution is not None
    assert (execution.result, execution.call_id) == ("18°C, light rain", "call_paris")


def test_a_langchain_js_stack_is_taken_off_the_error_message_in_any_scope() -> None:
    execution = recognise_execution(_FAILED_TOOL)
    assert execution is not None and execution.error
    assert execution.error_message == "no seats left to Oslo"


def test_a_mastra_step_gives_its_requests() -> None:
    (request,) = extract_requests(_MASTRA_STEP)
    assert (request.tool_name, request.call_id, request.arguments.value, request.encoding) == (
        "book_flight",
        "call_oslo",
        {"a": 1},
        "mastra",
    )


def test_these_shapes_give_three_executions_and_one_request_no_more() -> None:
    executions = [e for span in _SPANS if (e := recognise_execution(span)) is not None]
    requests = [r for span in _SPANS for r in extract_requests(span)]
    assert (len(executions), len(requests)) == (3, 1)
