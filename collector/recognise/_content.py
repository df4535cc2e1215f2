"""Reading captured content (arguments, results) that emitters send as JSON strings or structured values."""

from __future__ import annotations

import json
from typing import Any

import orjson

from collector.model.domain import NO_ARGUMENTS, Arguments
from collector.recognise._python_literal import NotALiteral, python_literal


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# One decoder for every call: json.loads with any keyword argument builds a new decoder each time.
_DECODER = json.JSONDecoder(parse_constant=_no_constants)


# orjson reads integers beyond 64 bits as floats (inexact): text with a run of 19 digits or more is
# read by the json module, which keeps every integer exact. Found by mapping every digit to 0 and
# looking for 19 zeros: ~1 us for a chat message, where a regex search took longer than the parse.
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def strict_loads(text: str) -> Any:
    """json.loads without Python's NaN/Infinity extension: what it accepts, DuckDB's JSON type accepts.

    orjson reads it ~3x faster (arguments and chat messages on every span); what orjson refuses (lone
    surrogates, numbers beyond a double) and long numbers are left to the json module, which decides."""
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: orjson refuses those
        return _DECODER.decode(text)
    if _LONG_NUMBER not in data.translate(_DIGITS_TO_ZERO):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return _DECODER.decode(text)


def parse_arguments(value: Any) -> Arguments:
    """Arguments from an attribute value: a JSON string, or an already structured OTLP kvlist/array.

    A string that is not valid JSON but is a Python repr of a dict or list (`{'city': 'Paris'}`) is
    read as literal syntax, never evaluated (`_python_literal`), the text kept in `raw`; anything else
    is kept raw and flagged, never dropped.
    """
    if value is None:
        return NO_ARGUMENTS
    if isinstance(value, str):
        try:
            return Arguments(value=strict_loads(value), raw=value)
        except (ValueError, RecursionError) as exc:
            error = f"not valid JSON: {exc}"
        try:
            return Arguments(value=python_literal(value), raw=value, raw_is_value=False)
        except NotALiteral:
            return Arguments(value=None, raw=value, error=error)
    return Arguments(value=value, raw=None)


def parse_result(value: Any) -> Any:
    """A result as received: text stays text (whether it is JSON is decided by DuckDB when the row is
    written, see collector/store/rows.py), a structured value stays structured."""
    return value


def unwrap_bound_call(
    arguments: Arguments, wrapper_keys: frozenset[str], *, lone_dict_is_kwargs: bool = False
) -> Arguments:
    """The call's keyword arguments out of a record of a bound Python call, `{"args": [...], "kwargs":
    {...}}` plus the wrapper's own keys (`wrapper_keys` is every key it may hold). Positional values
    have no names on the wire, so they are kept under `args` beside the kwargs. `lone_dict_is_kwargs`:
    the callee itself takes one positional dict as its keyword arguments (smolagents' `Tool.__call__`)."""
    value = arguments.value
    if not (isinstance(value, dict) and "kwargs" in value and set(value) <= wrapper_keys):
        return arguments
    kwargs, args = value["kwargs"], value.get("args", [])
    if not isinstance(kwargs, dict) or not isinstance(args, list):
        return arguments
    if lone_dict_is_kwargs and not kwargs and len(args) == 1 and isinstance(args[0], dict):
        kwargs, args = args[0], []
    merged = {**kwargs, "args": args} if args else dict(kwargs)
    return Arguments(value=merged, raw=arguments.raw, raw_is_value=False)


_ARGS_AND_KWARGS = frozenset({"args", "kwargs"})


def unwrap_traceloop(arguments: Arguments) -> Arguments:
    """Traceloop decorators record `{"args": [...], "kwargs": {...}}`; the call's arguments are the kwargs."""
    return unwrap_bound_call(arguments, _ARGS_AND_KWARGS)


def load_json_text(value: Any) -> Any:
    """A JSON document that may arrive as text (Python SDKs) or structured (events, other SDKs)."""
    if isinstance(value, str):
        try:
            return strict_loads(value)
        except (ValueError, RecursionError):
            return None
    return value
