"""The Python-literal reader of argument text (collector/recognise/_python_literal.py): what it reads,
and everything it refuses without evaluating it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collector.recognise._content import parse_arguments
from collector.recognise._python_literal import MAX_DEPTH, MAX_TEXT, NotALiteral, python_literal


def test_a_dict_repr_is_read_as_its_values() -> None:
    text = "{'amount': 100, 'currency': 'XYZ', 'ok': True, 'note': None, 'pair': (1, -2.5), 'é': 'ü'}"
    assert python_literal(text) == {
        "amount": 100,
        "currency": "XYZ",
        "ok": True,
        "note": None,
        "pair": [1, -2.5],
        "é": "ü",
    }


def test_parse_arguments_keeps_the_text_and_reports_no_error() -> None:
    arguments = parse_arguments("{'amount': 100, 'currency': 'XYZ'}")
    assert arguments.value == {"amount": 100, "currency": "XYZ"}
    assert arguments.raw == "{'amount': 100, 'currency': 'XYZ'}"
    assert arguments.error is None
    assert arguments.json_text() == '{"amount":100,"currency":"XYZ"}'


def test_json_is_still_read_as_json() -> None:
    arguments = parse_arguments('{"city": "Paris"}')
    assert (arguments.value, arguments.raw_is_value) == ({"city": "Paris"}, True)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "{'a': __import__('os')}",
        "{'a': open('/etc/passwd').read()}",
        "{'a': 1 + 2}",
        "{'a': 2 ** 1000000}",
        "{'a': x}",
        "{'a': ...}",
        "{'a': b'bytes'}",
        "{'a': {1, 2}}",
        "{'a': 1j}",
        "{'a': float('nan')}",
        "{'a': 1e999}",
        "{1: 'int key'}",
        "{**{'a': 1}}",
        "[*range(3)]",
        "{'a': [i for i in range(3)]}",
        "{'a': lambda: 1}",
        "{'a': -'x'}",
        "'just a string'",
        "Paris",
        "{'unclosed': 1",
    ],
)
def test_anything_but_a_literal_dict_or_list_is_refused(text: str) -> None:
    with pytest.raises(NotALiteral):
        python_literal(text)
    arguments = parse_arguments(text)
    assert arguments.value is None and arguments.raw == text
    assert arguments.error is not None and arguments.error.startswith("not valid JSON")


def test_nesting_and_size_are_bounded() -> None:
    assert python_literal("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(NotALiteral, match="nested deeper"):
        python_literal("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2))
    with pytest.raises(NotALiteral):
        python_literal("[" * 100_000 + "]" * 100_000)  # the parser's own limit, no RecursionError
    with pytest.raises(NotALiteral, match="longer than"):
        python_literal("{'a': '" + "x" * MAX_TEXT + "'}")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_the_repr_of_any_json_object_reads_back_as_it(value: dict[str, object]) -> None:
    assert python_literal(repr(value)) == value
