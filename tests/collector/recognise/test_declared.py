"""Conventions files (collector/recognise/declared/): each mistake one line with the file, the line and
the key path; Python literals read without evaluating anything; pointers as RFC 6901 says; a user's
convention tried before the built-in adapters, and one that fails never stops the others."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collector.model.domain import STATUS_ERROR, Resource, Span
from collector.recognise.conventions import recognise_execution
from collector.recognise.declared import active
from collector.recognise.declared._values import (
    MISSING,
    Unreadable,
    follow,
    pointer_tokens,
    python_literal,
)
from collector.recognise.declared.errors import ConventionsError
from collector.recognise.declared.files import compile_sources, load_conventions

GOOD = """\
tools:
  - name: acme
    match:
      span_name_pattern: "tool:.+"
      attributes: {acme.kind: tool}
    tool_name: {span_name: true, strip_prefix: "tool:"}
    arguments: {attribute: acme.call, pointer: /args}
    call_id: {attribute: acme.call, pointer: /id}
    result: {attribute: acme.output, parser: python-literal}
    error: {attribute: acme.error}
"""


@pytest.fixture(autouse=True)
def _none_in_force() -> Any:
    active.install(None)
    yield
    active.install(None)


def _span(name: str, attributes: dict[str, Any], *, scope: str = "acme.agent", status: int = 0) -> Span:
    return Span(
        "t" * 32, "s" * 16, None, name, 1, 0, 10, status, "", attributes, (), (), Resource({}, scope, "1")
    )


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "conventions.yaml"
    path.write_text(text)
    with pytest.raises(ConventionsError) as raised:
        load_conventions([path])
    message = str(raised.value)
    assert "\n" not in message
    return message.replace(str(path), "FILE")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace("span_name_pattern", "span_name_patern"),
            "FILE:4: tools.0.match.span_name_patern: unknown key; did you mean 'span_name_pattern'? known "
            "keys are span_name, span_name_pattern, scope, attributes",
        ),
        (
            GOOD.replace("parser: python-literal", "parser: yaml"),
            "FILE:9: tools.0.result.parser: Input should be 'json', 'python-literal' or 'text'",
        ),
        (
            GOOD.replace('"tool:.+"', '"tool:(?!x).+"'),
            "FILE:4: tools.0.match.span_name_pattern: 'tool:(?!x).+': negative lookahead (?!…) is not "
            "supported: list the accepted forms with | instead",
        ),
        (
            GOOD.replace("name: acme", "name: gen_ai"),
            "FILE:2: tools.0: name 'gen_ai' is a built-in convention's (executions.convention tells them "
            "apart): choose a name of your own",
        ),
        (
            GOOD + GOOD.removeprefix("tools:\n"),
            "FILE:11: tools.1.name: convention 'acme' is named already (FILE:2); give each convention its "
            "own name",
        ),
        (
            GOOD.replace(
                'tool_name: {span_name: true, strip_prefix: "tool:"}',
                "tool_name: {attribute: a, span_name: true}",
            ),
            "FILE:6: tools.0.tool_name: give attribute: KEY or span_name: true (one of them)",
        ),
        (
            GOOD.replace("pointer: /args", "pointer: args"),
            "FILE:7: tools.0.arguments: pointer 'args': a JSON pointer (RFC 6901) is empty or starts with /",
        ),
        (
            "tools:\n  - name: x\n    match: {scope: acme}\n    tool_name: {attribute: a}\n",
            "FILE:3: tools.0.match: a match needs span_name, span_name_pattern or attributes (a scope alone "
            "would claim every span of it, agents and model calls too)",
        ),
        (
            "tools:\n  - name: x\n    match: {span_name: a}\n",
            "FILE:2: tools.0.tool_name: Field required",
        ),
        (
            "tools:\n  - name: x\n    match: {attributes: {acme.kind: [a, b]}}\n    tool_name: 5\n"
            "  - name: y\n    match: {span_name: x}\n    tool_name: {attribute: a, parsr: json}\n",
            "FILE:3: tools.0.match.attributes.acme.kind: expected a text, a number, true or false, or "
            "{equals: VALUE, parser: json}; FILE:4: tools.0.tool_name: expected a source ({attribute: KEY, "
            "…} or {span_name: true}) or a list of them; FILE:7: tools.1.tool_name.parsr: unknown key; did "
            "you mean 'parser'? known keys are attribute, span_name, strip_prefix, pointer, parser",
        ),
        ("tools: [\n", "FILE:2: not valid YAML: expected the node content, but found '<stream end>'"),
        ("", "FILE: holds no conventions: write tools: [ … ] (docs/conventions.md)"),
        (
            "a: &x {span_name: a}\ntools:\n  - name: x\n    match: *x\n    tool_name: {attribute: a}\n",
            "FILE:4: anchors and aliases are not accepted: write the values out",
        ),
    ],
)
def test_each_mistake_is_one_line_naming_the_file_line_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert _error(tmp_path, text) == expected


def test_every_mistake_of_a_file_is_on_its_one_line(tmp_path: Path) -> None:
    text = GOOD.replace("span_name_pattern", "span_name_patern").replace(
        "parser: python-literal", "parser: x"
    )
    message = _error(tmp_path, text)
    assert message.startswith("FILE:4: tools.0.match.span_name_patern: unknown key")
    assert "; FILE:9: tools.0.result.parser:" in message


def test_a_users_convention_reads_the_documented_span() -> None:
    active.install(compile_sources([("acme.yaml", GOOD)]))
    span = _span(
        "tool:get_weather",
        {
            "acme.kind": "tool",
            "acme.call": '{"id": "call-1", "args": {"city": "Paris"}}',
            "acme.output": "{'temp_c': 21, 'sky': 'clear', 'rain': None, 'ok': True}",
        },
    )
    execution = recognise_execution(span)
    assert execution is not None
    assert (execution.convention, execution.tool_name, execution.call_id) == ("acme", "get_weather", "call-1")
    assert execution.arguments.value == {"city": "Paris"} and execution.arguments.error is None
    assert execution.result == {"temp_c": 21, "sky": "clear", "rain": None, "ok": True}
    assert execution.error is False
    # Not claimed: another name, or the attribute not equal.
    assert recognise_execution(_span("tool:x", {"acme.kind": "agent"})) is None
    assert recognise_execution(_span("step:x", {"acme.kind": "tool"})) is None


def test_unreadable_arguments_are_kept_raw_and_flagged() -> None:
    active.install(compile_sources([("acme.yaml", GOOD)]))
    broken = recognise_execution(_span("tool:a", {"acme.kind": "tool", "acme.call": "{'id': 1}"}))
    assert broken is not None and broken.arguments.value is None
    assert broken.arguments.raw == "{'id': 1}" and (broken.arguments.error or "").startswith("not valid JSON")
    missing = recognise_execution(_span("tool:a", {"acme.kind": "tool", "acme.call": '{"id": 1}'}))
    assert missing is not None and missing.arguments.error == "pointer /args names nothing in it"
    assert missing.call_id == "1"


@pytest.mark.parametrize(
    ("value", "status", "error", "message"),
    [
        ("city not found", 0, True, "city not found"),
        ("false", 0, False, None),
        (False, 0, False, None),
        (True, 0, True, None),
        (None, STATUS_ERROR, True, None),
    ],
)
def test_the_error_attribute_and_the_status(
    value: Any, status: int, error: bool, message: str | None
) -> None:
    active.install(compile_sources([("acme.yaml", GOOD)]))
    attributes = {"acme.kind": "tool"} if value is None else {"acme.kind": "tool", "acme.error": value}
    execution = recognise_execution(_span("tool:a", attributes, status=status))
    assert execution is not None
    assert (execution.error, execution.error_message) == (error, message)


def test_attribute_equals_reads_json_text_and_keeps_json_equality() -> None:
    # An attribute written as JSON text, as MLflow writes `mlflow.spanType` (under a key of the user's own:
    # MLflow's is read by the built-in adapter whatever the file says).
    text = """\
tools:
  - name: json_text_like
    match: {attributes: {acme.spanType: {equals: TOOL, parser: json}, version: 1}}
    tool_name: {attribute: name}
"""
    active.install(compile_sources([("m.yaml", text)]))
    assert recognise_execution(_span("x", {"acme.spanType": '"TOOL"', "version": 1, "name": "a"})) is not None
    assert recognise_execution(_span("x", {"acme.spanType": "TOOL", "version": 1, "name": "a"})) is None
    assert recognise_execution(_span("x", {"acme.spanType": '"TOOL"', "version": True, "name": "a"})) is None


def test_a_users_convention_comes_before_the_built_in_adapters() -> None:
    span = _span(
        "execute_tool get_weather",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "acme.tool": "forecast"},
    )
    built_in = recognise_execution(span)
    assert built_in is not None and (built_in.convention, built_in.tool_name) == ("gen_ai", "get_weather")
    text = (
        "tools:\n  - name: acme\n    match: {attributes: {gen_ai.operation.name: execute_tool}}\n"
        "    tool_name: {attribute: acme.tool}\n"
    )
    active.install(compile_sources([("a.yaml", text)]))
    declared = recognise_execution(span)
    assert declared is not None and (declared.convention, declared.tool_name) == ("acme", "forecast")


def test_a_convention_that_fails_on_a_span_stops_nothing_else(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        GOOD
        + """\
  - name: second
    match: {span_name_pattern: "tool:.+"}
    tool_name: {span_name: true}
"""
    )
    declared = compile_sources([("acme.yaml", text)])
    first = declared.tools[0].matcher
    matches = type(first).matches

    def failing_first(self: Any, span: Span) -> bool:
        if self is first:
            raise RuntimeError("a defect")
        return matches(self, span)

    monkeypatch.setattr(type(first), "matches", failing_first)
    active.install(declared)
    with caplog.at_level(logging.ERROR, "tracescore.conventions"):
        for _ in range(3):
            execution = recognise_execution(_span("tool:a", {"acme.kind": "tool"}))
            assert execution is not None and execution.convention == "second"
        gen_ai = recognise_execution(
            _span("x", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "b"})
        )
    assert gen_ai is not None and gen_ai.convention == "gen_ai"
    assert [r.getMessage() for r in caplog.records].count(
        "conventions file: convention 'acme' failed on a span; it is skipped for such spans"
    ) == 1


def test_python_literals_are_read_never_evaluated() -> None:
    assert python_literal("{'a': (1, -2.5), 'b': [None, True]}") == {"a": [1, -2.5], "b": [None, True]}
    assert python_literal("'Paris'") == "Paris"  # any literal, not only containers
    for text in (
        "__import__('os').system('false')",
        "{'a': x}",
        "[1] * 10**9",
        "{1, 2}",
        "b'x'",
        "{**a}",
        "{3: 'x'}",  # a key JSON would not hold as given
    ):
        with pytest.raises(Unreadable):
            python_literal(text)
    with pytest.raises(Unreadable):
        python_literal("[" * 100 + "]" * 100)
    with pytest.raises(Unreadable):
        python_literal("'" + "x" * (300 * 1024) + "'")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_a_python_repr_of_plain_data_reads_back_as_that_data(value: Any) -> None:
    assert python_literal(repr(value)) == value


def test_pointers_as_rfc_6901_writes_them() -> None:
    document = {"a/b": [{"~k": 1}], "": 2, "0": 3}
    assert follow(document, pointer_tokens("/a~1b/0/~0k")) == 1
    assert follow(document, pointer_tokens("/")) == 2
    assert follow(document, pointer_tokens("")) is document
    assert follow(document, pointer_tokens("/0")) == 3
    for missing in ("/a~1b/1", "/a~1b/01", "/a~1b/-", "/nope", "/0/x"):
        assert follow(document, pointer_tokens(missing)) is MISSING


def test_an_agent_convention_makes_its_span_an_agent_before_the_built_in_ones() -> None:
    from collector.recognise._nodes import span_node

    text = """\
agents:
  - name: acme_agent
    match: {span_name: agent.run}
    agent_name: [{attribute: acme.agent}, {span_name: true}]
    run_id: {attribute: acme.run}
"""
    plain = _span("agent.run", {"acme.agent": "support", "acme.run": 7})
    plain.parent_span_id = "p" * 16
    assert span_node(plain).agent is None
    active.install(compile_sources([("a.yaml", text)]))
    node = span_node(plain)
    assert node.agent is not None and (node.agent.name, node.agent.run_id) == ("support", "7")
    unnamed = span_node(_span("agent.run", {}))
    assert unnamed.agent is not None and unnamed.agent.name == "agent.run"
    # Declared first: a built-in agent span of the same name is read as the file says.
    built_in = _span(
        "agent.run", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "x", "acme.agent": "y"}
    )
    declared = span_node(built_in).agent
    assert declared is not None and declared.name == "y"
    assert recognise_execution(plain) is None  # an agent convention claims no tool call


def test_a_file_without_tools_or_agents_is_refused(tmp_path: Path) -> None:
    assert _error(tmp_path, "version: 1\ntools: []\n") == (
        "FILE:1: (file): a conventions file declares tools: [ … ] or agents: [ … ] (docs/conventions.md)"
    )


def test_a_paused_call_is_read_from_the_field() -> None:
    text = GOOD + "    paused: {attribute: acme.waiting}\n"
    active.install(compile_sources([("acme.yaml", text)]))
    waiting = recognise_execution(_span("tool:a", {"acme.kind": "tool", "acme.waiting": True}))
    assert waiting is not None and waiting.paused and not waiting.error
    running = recognise_execution(_span("tool:a", {"acme.kind": "tool", "acme.waiting": False}))
    assert running is not None and not running.paused
