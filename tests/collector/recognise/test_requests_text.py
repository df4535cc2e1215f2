"""Fallback parsing of request-side tool calls a model wrote as a fenced JSON block (issue 6): recognised
in the model's own output text, marked `text_json`, and never read from prose."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collector.model.domain import Resource, Span, SpanEvent
from collector.recognise.requests import extract_requests, text_calls


def chat(attributes: dict[str, Any], events: tuple[SpanEvent, ...] = ()) -> Span:
    return Span(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_span_id=None,
        name="chat",
        kind=1,
        start_ns=1_000,
        end_ns=2_000,
        status_code=0,
        status_message="",
        attributes=attributes,
        events=events,
        links=(),
        resource=Resource({"service.name": "t"}, "tests", ""),
    )


def gen_ai_text(text: str, role: str = "assistant") -> dict[str, Any]:
    message = {"role": role, "parts": [{"type": "text", "content": text}]}
    return {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([message])}


WEATHER = 'Let me check.\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\n'


def calls(span: Span) -> list[tuple[str, Any, str | None, str, int]]:
    return [
        (r.tool_name, r.arguments.value, r.call_id, r.encoding, r.position) for r in extract_requests(span)
    ]


def test_a_fenced_call_in_gen_ai_output_text() -> None:
    assert calls(chat(gen_ai_text(WEATHER))) == [("get_weather", {"city": "Paris"}, None, "text_json", 0)]


def test_a_fenced_call_in_openinference_message_content() -> None:
    span = chat(
        {
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": WEATHER,
        }
    )
    assert calls(span) == [("get_weather", {"city": "Paris"}, None, "text_json", 0)]


def test_openinference_contents_and_openllmetry_completions() -> None:
    contents = chat(
        {
            "llm.output_messages.0.message.contents.0.message_content.type": "text",
            "llm.output_messages.0.message.contents.0.message_content.text": WEATHER,
        }
    )
    assert [c[0] for c in calls(contents)] == ["get_weather"]
    completion = chat({"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": WEATHER})
    assert [c[0] for c in calls(completion)] == ["get_weather"]


@pytest.mark.parametrize(
    "block",
    [
        '{"tool": "lookup", "args": {"sku": "A1"}}',
        '{"name": "lookup", "parameters": {"sku": "A1"}}',  # Llama 3.x JSON tool calls
        '{"name": "lookup", "arguments": "{\\"sku\\": \\"A1\\"}"}',  # arguments as JSON text
        '{"type": "function", "name": "lookup", "arguments": {"sku": "A1"}}',
    ],
)
def test_the_accepted_shapes(block: str) -> None:
    [(name, arguments, _, encoding, _)] = calls(chat(gen_ai_text(f"```json\n{block}\n```")))
    assert (name, arguments, encoding) == ("lookup", {"sku": "A1"}, "text_json")


def test_an_array_block_is_several_calls_in_one_round_and_ids_are_kept() -> None:
    text = '```\n[{"name": "a", "arguments": {}, "id": "c1"}, {"name": "b", "arguments": {"x": 1}}]\n```'
    assert calls(chat(gen_ai_text(text))) == [
        ("a", {}, "c1", "text_json", 0),
        ("b", {"x": 1}, None, "text_json", 1),
    ]


@pytest.mark.parametrize(
    "text",
    [
        'I would call {"name": "get_weather", "arguments": {"city": "Paris"}} here.',  # not fenced
        '```python\n{"name": "get_weather", "arguments": {}}\n```',  # another language
        '```json\n{"name": "Paris", "population": 2148000}\n```',  # a JSON answer with a name
        '```json\n{"name": "get_weather", "arguments": {}, "reason": "rain"}\n```',  # extra keys
        '```json\n{"name": "get weather", "arguments": {}}\n```',  # not an identifier
        '```json\n{"name": "get_weather", "arguments": "Paris"}\n```',  # arguments not an object
        '```json\n{"name": "a", "tool": "b", "arguments": {}}\n```',  # two names
        '```json\n{"type": "answer", "name": "a", "arguments": {}}\n```',
        '```json\n[{"name": "a", "arguments": {}}, {"text": "hi"}]\n```',  # one item is not a call
        "```json\n[]\n```",
        '```json\n{"name": "a", "arguments": {}\n```',  # not valid JSON
        'inline ```json {"name": "a", "arguments": {}} ``` fence',  # the fence must be on its own line
    ],
)
def test_prose_and_other_json_are_never_calls(text: str) -> None:
    assert text_calls(text) == []
    assert calls(chat(gen_ai_text(text))) == []


def test_only_the_models_output_is_read() -> None:
    assert calls(chat(gen_ai_text(WEATHER, role="user"))) == []
    history = {
        "gen_ai.input.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": WEATHER}]}]
        )
    }
    assert calls(chat(history)) == []
    span = chat(
        {"llm.input_messages.0.message.role": "assistant", "llm.input_messages.0.message.content": WEATHER}
    )
    assert calls(span) == []
    tool_role = chat(
        {"llm.output_messages.0.message.role": "tool", "llm.output_messages.0.message.content": WEATHER}
    )
    assert calls(tool_role) == []


def test_native_tool_calls_win_and_text_is_not_read_beside_them() -> None:
    message = {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": WEATHER},
            {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        ],
    }
    span = chat({"gen_ai.output.messages": json.dumps([message])})
    assert calls(span) == [("get_weather", {"city": "Paris"}, "call_1", "gen_ai", 0)]


def test_the_inference_details_event_is_read_too() -> None:
    event = SpanEvent(
        "gen_ai.client.inference.operation.details",
        1_500,
        {"gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": WEATHER}]}]},
    )
    assert [c[0] for c in calls(chat({}, (event,)))] == ["get_weather"]


def test_a_tool_span_with_fenced_arguments_is_not_a_request() -> None:
    span = chat({"openinference.span.kind": "TOOL", "tool.name": "x", "input.value": WEATHER})
    assert calls(span) == []
