"""The Langfuse SDK's and MLflow Tracing's spans, as their matrix cells recorded them
(tests/frameworks/fixtures/langfuse-*, mlflow-*), and the variants of them the cells' scenario does not
play: a positional call through `@observe`, a failure Langfuse marks only by its level, MLflow's span
type written plainly, and spans of theirs that are no tool."""

from __future__ import annotations

import dataclasses
import json

from collector.decode.from_json import decode_json
from collector.model.domain import STATUS_UNSET, Span
from collector.recognise.conventions import recognise_execution
from collector.recognise.requests import extract_requests
from tests.frameworks.matrix import BY_NAME


def _recorded(cell: str, name: str, *, failed: bool = False) -> Span:
    for line in (BY_NAME[cell].fixture / "otlp.jsonl").read_bytes().splitlines():
        for span in decode_json(line).spans:
            if span.name == name and (span.status_code == 2) is failed:
                return span
    raise AssertionError(f"{cell} recorded no {name} span")


def _with(span: Span, **attributes: object) -> Span:
    return dataclasses.replace(span, attributes={**span.attributes, **attributes})


def test_langfuse_observe_keeps_the_kwargs_of_its_args_and_kwargs_record() -> None:
    span = _recorded("langfuse-observe", "get_weather")
    assert json.loads(span.attributes["langfuse.observation.input"])["args"] == []
    execution = recognise_execution(span)
    assert execution is not None
    assert (execution.convention, execution.arguments.value) == ("langfuse", {"city": "Paris"})
    assert execution.result == "18°C, light rain"


def test_a_positional_value_langfuse_names_no_parameter_of_stays_under_args() -> None:
    span = _with(
        _recorded("langfuse-observe", "get_weather"),
        **{"langfuse.observation.input": '{"args": ["Paris"], "kwargs": {"units": "C"}}'},
    )
    execution = recognise_execution(span)
    assert execution is not None
    assert execution.arguments.value == {"units": "C", "args": ["Paris"]}


def test_the_callback_handler_gives_the_call_id_and_the_tool_message_content() -> None:
    span = _recorded("langfuse-callback", "get_weather")
    quoted = span.attributes["langfuse.observation.metadata.tool_call_id"]
    execution = recognise_execution(span)
    assert execution is not None
    assert quoted == f'"{execution.call_id}"'
    city = execution.arguments.value["city"]
    assert (execution.call_id, execution.result) == (
        f"call_{city.lower()}",
        {"Paris": "18°C, light rain", "Tokyo": "24°C, clear"}[city],
    )


def test_langfuse_level_error_is_a_failure_even_with_the_status_unset() -> None:
    raised = _recorded("langfuse-callback", "book_flight", failed=True)
    span = dataclasses.replace(raised, status_code=STATUS_UNSET, status_message="")
    assert span.attributes["langfuse.observation.level"] == "ERROR"
    execution = recognise_execution(span)
    assert execution is not None
    assert (execution.error, execution.error_message) == (True, "no seats left to Oslo")


def test_a_langfuse_observation_of_another_type_is_no_execution() -> None:
    assert recognise_execution(_recorded("langfuse-observe", "agent")) is None
    assert recognise_execution(_recorded("langfuse-callback", "tools")) is None


def test_mlflow_span_type_is_read_as_json_text_or_plain() -> None:
    span = _recorded("mlflow-trace", "get_weather")
    assert span.attributes["mlflow.spanType"] == '"TOOL"'
    for variant in (span, _with(span, **{"mlflow.spanType": "TOOL"})):
        execution = recognise_execution(variant)
        assert execution is not None
        assert (execution.convention, execution.arguments.value) == ("mlflow", {"city": "Paris"})
    assert recognise_execution(_with(span, **{"mlflow.spanType": '"CHAIN"'})) is None


def test_mlflow_langchain_autolog_gives_the_call_id_and_the_failure() -> None:
    execution = recognise_execution(_recorded("mlflow-langchain", "book_flight", failed=True))
    assert execution is not None
    assert (execution.call_id, execution.error, execution.error_message) == (
        "call_oslo",
        True,
        "no seats left to Oslo",
    )


def test_model_spans_of_both_sdks_give_the_requests_in_either_message_form() -> None:
    """LangChain's `{name, args, id}` (Langfuse's callback), OpenAI's `{id, function}` alone (the
    `@observe`/`@mlflow.trace` loops) and inside a chat completion's `choices` (MLflow's autolog)."""
    for cell, name in (
        ("langfuse-callback", "ScriptedChatModel"),
        ("langfuse-observe", "scripted-model"),
        ("mlflow-trace", "scripted-model"),
        ("mlflow-langchain", "ScriptedChatModel"),
    ):
        requests = extract_requests(_recorded(cell, name))
        assert [(r.tool_name, r.call_id, r.arguments.value) for r in requests] == [
            ("get_weather", "call_paris", {"city": "Paris"}),
            ("get_weather", "call_tokyo", {"city": "Tokyo"}),
        ], cell


# What each SDK recorded for a LangGraph tool that called `interrupt()` (langgraph 1.2.24, langfuse 5.2.0,
# mlflow-tracing 3.17.2, the cells' virtualenvs), applied to the cells' own `book_flight` spans.
_INTERRUPT_TEXT = (
    "(Interrupt(value={'confirm': 'Oslo'}, id='f03c7d3dd70a714a363ad597310157ec', response_schema=None),)"
)


def test_a_langgraph_interrupt_under_langfuse_is_a_paused_call() -> None:
    raised = _recorded("langfuse-callback", "book_flight", failed=True)
    attributes = {
        **raised.attributes,
        "langfuse.observation.level": "DEFAULT",
        "langfuse.observation.status_message": _INTERRUPT_TEXT,
    }
    span = dataclasses.replace(raised, attributes=attributes, status_code=STATUS_UNSET, status_message="")
    execution = recognise_execution(span)
    assert execution is not None
    assert (execution.paused, execution.pause_reason, execution.error) == (True, "user_input", False)
    assert execution.call_id == "call_oslo"


def test_a_langgraph_interrupt_under_mlflow_is_a_paused_call_despite_its_error_status() -> None:
    raised = _recorded("mlflow-langchain", "book_flight", failed=True)
    (event,) = raised.events
    interrupt = dataclasses.replace(
        event,
        attributes={
            **event.attributes,
            "exception.type": "GraphInterrupt",
            "exception.message": _INTERRUPT_TEXT,
        },
    )
    span = dataclasses.replace(raised, events=(interrupt,), status_message=_INTERRUPT_TEXT)
    assert span.status_code == 2
    execution = recognise_execution(span)
    assert execution is not None
    assert (execution.paused, execution.pause_reason, execution.error) == (True, "user_input", False)
