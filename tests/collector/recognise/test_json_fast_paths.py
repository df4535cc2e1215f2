"""orjson reads and writes JSON on the hot path (collector/recognise/_content.py,
collector/model/jsontext.py); the json module is the reference. Whatever orjson gets, the result must be
the json module's: same values, integers exact, the same refusals."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from collector.model.jsontext import _stdlib, to_json
from collector.recognise._content import _DECODER, strict_loads

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # beyond 64 bits too
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    # repr tells -0.0 from 0.0 and 1 from 1.0; NaN equals itself here.
    return repr(a) == repr(b)


def _outcome(read: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", read(text)
    except ValueError as exc:
        return "refused", type(exc).__name__


@settings(max_examples=500, deadline=None)
@given(value=VALUES, ensure_ascii=st.booleans())
def test_reading_valid_json_gives_the_json_module_values(value: Any, ensure_ascii: bool) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    assert _same(_outcome(strict_loads, text), _outcome(_DECODER.decode, text))


@settings(max_examples=500, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=30),
        st.from_regex(r"\A\s*-?\d{1,30}(\.\d{1,25})?([eE][+-]?\d{1,4})?\s*\Z"),
        st.sampled_from(["[NaN]", "Infinity", '"\\ud800"', "[1,]", '{"a":1,"a":2}', "1e400", '"\x01"']),
    )
)
def test_any_text_is_read_or_refused_as_the_json_module_does(text: str) -> None:
    assert _same(_outcome(strict_loads, text), _outcome(_DECODER.decode, text))


@settings(max_examples=500, deadline=None)
@given(value=VALUES)
def test_written_json_reads_back_as_the_json_module_writes_it(value: Any) -> None:
    text = to_json(value)
    if value is None:
        assert text is None
        return
    assert text is not None
    reference = _stdlib(value)
    # Valid JSON whatever the value (DuckDB's JSON type refuses NaN), and the same document.
    assert _same(json.loads(text, parse_constant=_refuse), json.loads(reference, parse_constant=_refuse))


def _refuse(name: str) -> Any:
    raise AssertionError(f"{name} written into JSON")


def test_non_finite_numbers_are_kept_as_text() -> None:
    assert to_json({"a": math.nan, "b": [math.inf]}) == '{"a":"nan","b":["inf"]}'
