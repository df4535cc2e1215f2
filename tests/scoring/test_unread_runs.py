"""Unread runs (issue #27) on the scoring paths the server test does not take: `store_history` with every
spec in its set-based SQL, conversations, and the definition of a read span. Spans come from the real
OpenTelemetry SDK and go through the decode stage and the writer (`collector.testing.Recording`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.recognise.reading import is_read
from collector.testing import Recording
from collector.testing.otlp_input import spans_from_sdk
from scoring import ensure_verdict_schema, store_history
from scoring.batch import score
from scoring.spec.files import load_spec_text

UNREAD = (
    "spans from scope acme.agent.tracing 1.2 (2 spans) are in no convention tracescore reads: "
    "see docs/conventions.md"
)


def _spans() -> InMemorySpanExporter:
    captured = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(captured))
    acme = provider.get_tracer("acme.agent.tracing", "1.2")
    for turn in (1, 2):  # a conversation of two unread turns
        marks = {
            "tracescore.task.id": "talk",
            "tracescore.conversation.id": "c1",
            "tracescore.turn.index": turn,
        }
        with (
            acme.start_as_current_span("acme.step", attributes=marks),
            acme.start_as_current_span("acme.tool", attributes={"acme.tool": "lookup_order"}),
        ):
            pass
    chat = {"tracescore.task.id": "chat", "gen_ai.operation.name": "chat"}
    with provider.get_tracer("my.agent").start_as_current_span("chat gpt-4o", attributes=chat):
        pass
    provider.shutdown()
    return captured


@pytest.fixture
def recording() -> Iterator[Recording]:
    with Recording(_spans().get_finished_spans()) as loaded:
        yield loaded


def test_store_history_in_sql_stores_the_error_of_an_unread_run(
    recording: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(score, "SQL_FROM_RUNS", 0)  # the spec is judged by its set-based SQL
    connection = recording.connection
    ensure_verdict_schema(connection)
    assert store_history(connection, load_spec_text("name: lookup\nexpected_tools: [lookup_order]\n")) == 3
    rows = connection.execute("SELECT task_id, verdict FROM verdicts ORDER BY task_id").fetchall()
    stored = [(task, json.loads(text)["label"], json.loads(text)["reason"]) for task, text in rows]
    assert stored == [
        ("chat", "fail", "run has no tool executions; expected tool lookup_order has no clean execution"),
        ("talk", "error", UNREAD),
        ("talk", "error", UNREAD),
    ]


@pytest.mark.parametrize("path", ["score_records", "store_history"])
def test_a_family_of_compiled_specs_leaves_unread_runs_to_the_python_judge(
    recording: Recording, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    # Specs differing only in name and select are judged by one query (scoring/batch/_family.py); that
    # query must leave the unread runs out as a single spec's does, or they would fail "no executions".
    monkeypatch.setattr(score, "SQL_FROM_RUNS", 0)
    connection = recording.connection
    ensure_verdict_schema(connection)
    specs = load_spec_text(
        "name: talk-lookup\nselect: {task: talk}\nexpected_tools: [lookup_order]\n---\n"
        "name: chat-lookup\nselect: {task: chat}\nexpected_tools: [lookup_order]\n"
    )
    if path == "score_records":
        found = [(s.spec, s.label) for s in score.score_records(connection, specs)]
    else:
        assert store_history(connection, specs) == 3
        rows = connection.execute("SELECT verdict FROM verdicts ORDER BY spec, run_id").fetchall()
        found = [(json.loads(text)["spec"], json.loads(text)["label"]) for (text,) in rows]
    assert sorted(found) == [("chat-lookup", "fail"), ("talk-lookup", "error"), ("talk-lookup", "error")]


def test_a_conversation_with_an_unread_turn_is_an_error(recording: Recording) -> None:
    turn = "  - expected_tools: [lookup_order]\n"
    spec = f"name: talk\nselect: {{task: talk}}\nturns:\n{turn}{turn}"
    [verdict] = recording.score(spec).verdicts
    assert (verdict.label, verdict.passed, verdict.reason) == ("error", None, f"turn 1: {UNREAD}")


def test_a_span_is_read_by_what_recognition_makes_of_it_not_by_its_scope() -> None:
    captured = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(captured))
    known = provider.get_tracer("openinference.instrumentation.langchain")
    with known.start_as_current_span("RunnableSequence", attributes={"openinference.span.kind": "CHAIN"}):
        pass
    nameless = provider.get_tracer("")
    with nameless.start_as_current_span("chat", attributes={"openinference.span.kind": "LLM"}):
        pass
    with nameless.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        pass
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"}
    with nameless.start_as_current_span("execute_tool lookup_order", attributes=tool):
        pass
    provider.shutdown()
    read = {span.name: is_read(span) for span in spans_from_sdk(captured.get_finished_spans())}
    assert read == {
        "RunnableSequence": False,
        "chat": True,
        "invoke_agent a": True,
        "execute_tool lookup_order": True,
    }
