"""Haystack 2's ToolInvoker: one span, every call of a model turn, read as one execution per call.

The spans are the recorded ones (tests/frameworks/fixtures/haystack2-*), some with their output altered
the ways a sender could: a repr that is no Python, a result that is no literal, a `<`/`>` inside a
result's text."""

from __future__ import annotations

import json
from dataclasses import replace

from collector.decode.from_json import decode_json
from collector.model.domain import Span
from collector.recognise.span import recognise
from tests.frameworks.matrix import BY_NAME


def _tool_invokers(cell: str) -> list[Span]:
    names = {"haystack.component.run", "ToolInvoker.run"}
    spans = [
        span
        for line in (BY_NAME[cell].fixture / "otlp.jsonl").read_bytes().splitlines()
        for span in decode_json(line).spans
        if span.name in names
        and (
            span.name == "ToolInvoker.run" or span.attributes.get("haystack.component.type") == "ToolInvoker"
        )
    ]
    assert spans, f"{cell} recorded no ToolInvoker span"
    return spans


def _calls(span: Span) -> list[tuple[int, str, object, object, str | None, bool, str | None]]:
    return [
        (e.call_index, e.tool_name, e.arguments.value, e.result, e.call_id, e.error, e.error_message)
        for e in recognise(span).executions
    ]


WEATHER = [
    (0, "get_weather", {"city": "Paris"}, "18°C, light rain", "call_paris", False, None),
    (1, "get_weather", {"city": "Tokyo"}, "24°C, clear", "call_tokyo", False, None),
]
BOOKING = [
    (
        0,
        "book_flight",
        {"destination": "Oslo", "passengers": 2},
        None,
        "call_oslo",
        True,
        "no seats left to Oslo",
    )
]


def test_each_call_of_the_span_is_one_execution_natively_and_through_openinference() -> None:
    for cell in ("haystack2-native", "haystack2-openinference"):
        weather, booking = _tool_invokers(cell)
        assert _calls(weather) == WEATHER, cell
        assert _calls(booking) == BOOKING, cell
        assert {e.span_id for e in recognise(weather).executions} == {weather.span_id}
        assert [e.key for e in recognise(weather).executions] == [(weather.span_id, 0), (weather.span_id, 1)]


def _with_output(span: Span, output: object) -> Span:
    return replace(span, attributes={**span.attributes, "output.value": json.dumps(output)})


def test_a_repr_that_is_no_python_or_no_literal_is_left_unread_not_guessed() -> None:
    weather, _ = _tool_invokers("haystack2-openinference")
    good = json.loads(weather.attributes["output.value"])["tool_messages"]
    broken = good[0].replace("ToolCallResult(", "ToolCallResult((", 1)
    not_literal = good[1].replace("result='24°C, clear'", "result=[TextContent(text='24°C')]")
    executions = recognise(_with_output(weather, {"tool_messages": [broken, not_literal]})).executions
    # The first message does not parse: no call is read from it. The second's result is no literal:
    # the call is read, its result is not.
    assert [(e.call_index, e.call_id, e.result) for e in executions] == [(0, "call_tokyo", None)]


def test_text_that_looks_like_syntax_inside_a_result_is_the_result() -> None:
    weather, _ = _tool_invokers("haystack2-openinference")
    good = json.loads(weather.attributes["output.value"])["tool_messages"]
    tricky = "<ChatRole.TOOL: 'tool'>), error=True)] # '''"
    message = good[0].replace("result='18°C, light rain'", f"result={tricky!r}")
    executions = recognise(_with_output(weather, {"tool_messages": [message]})).executions
    assert [(e.result, e.error) for e in executions] == [(tricky, False)]


def test_a_tool_invoker_span_without_output_records_no_execution() -> None:
    for cell, key in (
        ("haystack2-native", "haystack.component.output"),
        ("haystack2-openinference", "output.value"),
    ):
        weather, _ = _tool_invokers(cell)
        attributes = {k: v for k, v in weather.attributes.items() if k != key}
        assert recognise(replace(weather, attributes=attributes)).executions == ()
