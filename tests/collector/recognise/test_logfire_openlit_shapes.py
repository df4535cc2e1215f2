"""Pydantic Logfire's and OpenLIT's shapes that the framework matrix's recordings do not exercise
(tests/frameworks/fixtures/*-logfire and langgraph-*-openlit hold the ones they do): Logfire's semconv
version 1 `response_data` (OpenAI and Anthropic) and `events`, and OpenLIT's ToolMessage `str()` with
content blocks. Spans are built as the emitters build them (attribute names and JSON from logfire 5.4.0
`llm_providers/openai.py`, `llm_providers/anthropic.py`; openlit 1.45.0 `instrumentation/langchain`)."""

from __future__ import annotations

import json
from typing import Any

from collector.model.domain import Resource, Span
from collector.recognise._openlit import model_call_id, tool_message_content
from collector.recognise.requests import extract_requests


def _span(scope: str, **attributes: Any) -> Span:
    return Span(
        trace_id="0" * 31 + "1",
        span_id="0" * 15 + "1",
        parent_span_id=None,
        name="Chat Completion with {request_data[model]!r}",
        kind=1,
        start_ns=1,
        end_ns=2,
        status_code=0,
        status_message="",
        attributes={"logfire.msg_template": "Chat Completion with {request_data[model]!r}", **attributes},
        events=(),
        links=(),
        resource=Resource({"service.name": "shapes"}, scope, ""),
    )


def _calls(span: Span) -> list[tuple[str, str | None, Any, str]]:
    return [(r.tool_name, r.call_id, r.arguments.value, r.encoding) for r in extract_requests(span)]


def test_openai_response_data_tool_calls() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    span = _span("logfire.openai", response_data=json.dumps({"message": message, "usage": None}))
    assert _calls(span) == [("get_weather", "call_1", {"city": "Paris"}, "logfire")]


def test_anthropic_response_data_arguments_are_the_tool_use_input() -> None:
    call = {"id": "toolu_1", "function": {"arguments": '{"input":{"city":"Paris"}}', "name": "get_weather"}}
    span = _span(
        "logfire.anthropic",
        **{"gen_ai.system": "anthropic", "response_data": json.dumps({"message": {"tool_calls": [call]}})},
    )
    assert _calls(span) == [("get_weather", "toolu_1", {"city": "Paris"}, "logfire")]


def test_events_read_only_the_output_after_the_input() -> None:
    history = {
        "event.name": "gen_ai.assistant.message",
        "role": "assistant",
        "tool_calls": [
            {"id": "call_old", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        ],
    }
    output = {
        "event.name": "gen_ai.assistant.message",
        "role": "assistant",
        "tool_calls": [
            {"id": "call_new", "type": "function", "function": {"name": "book_flight", "arguments": "{}"}}
        ],
    }
    events = [
        {"event.name": "gen_ai.user.message", "role": "user", "content": "hi"},
        history,
        {"event.name": "gen_ai.tool.message", "role": "tool", "id": "call_old", "content": "ok"},
        output,
    ]
    span = _span("logfire.openai", events=json.dumps(events))
    assert _calls(span) == [("book_flight", "call_new", {}, "logfire")]


def test_a_span_without_logfire_template_is_not_read_for_logfire_shapes() -> None:
    span = _span("x")
    span.attributes.pop("logfire.msg_template")
    span.attributes["response"] = json.dumps(
        {"output": [{"type": "function_call", "name": "a", "call_id": "c"}]}
    )
    assert _calls(span) == []


def test_tool_message_str_gives_its_content() -> None:
    assert tool_message_content(
        "content='18°C, light rain' name='get_weather' tool_call_id='call_paris'"
    ) == ("18°C, light rain")
    # A content with what looks like a field inside it: the first boundary that closes a literal wins.
    text = "content='a name=b' name='t' tool_call_id='c'"
    assert tool_message_content(text) == "a name=b"
    blocks = "content=[{'type': 'text', 'text': 'hi'}] name='t' tool_call_id='c'"
    assert tool_message_content(blocks) == [{"type": "text", "text": "hi"}]


def test_anything_else_stays_as_it_came() -> None:
    for text in ("content=__import__('os') tool_call_id='c'", "18°C", "content='x'", 42, None):
        assert tool_message_content(text) == text


def test_only_openlit_langchain_uuid_call_ids_are_dropped() -> None:
    run_id = "01a242c6-35ec-714c-b707-aed010b7995e"
    assert model_call_id(run_id, "openlit.instrumentation.langchain") is None
    assert model_call_id("call_oslo", "openlit.instrumentation.langchain") == "call_oslo"
    assert model_call_id(run_id, "pydantic-ai") == run_id
