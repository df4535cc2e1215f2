"""Reading one attribute's value as a convention says: a parser (JSON text, a Python repr's literals, or
text as it is), then a JSON pointer (RFC 6901) into what it gave.

A Python repr (OpenLIT writes `{'amount': 100}`) is parsed as Python syntax and only its literals are
read: strings, numbers, booleans, None, and dicts (string keys), lists and tuples of them. Nothing is
evaluated, no name is looked up, and the text and its nesting are bounded, so a hostile span costs at
most one bounded parse (collector/recognise/_python_literal.py)."""

from __future__ import annotations

from typing import Any

from collector.recognise._content import strict_loads
from collector.recognise._python_literal import NotALiteral
from collector.recognise._python_literal import python_literal as read_literal


class Unreadable(ValueError):
    """A value its parser cannot read; the message says why."""


def python_literal(text: str) -> Any:
    """The value of a Python literal (a repr of plain data), read without evaluating anything
    (collector/recognise/_python_literal.py, the one reader of them)."""
    try:
        return read_literal(text, containers_only=False)
    except NotALiteral as exc:
        raise Unreadable(f"not a Python literal: {exc}") from None


def parse(value: Any, parser: str) -> Any:
    """An attribute's value read with a parser; a structured OTLP value (kvlist, array) is taken as is."""
    if not isinstance(value, str):
        return value
    if parser == "json":
        try:
            return strict_loads(value)
        except (ValueError, RecursionError) as exc:
            raise Unreadable(f"not valid JSON: {exc}") from None
    if parser == "python-literal":
        return python_literal(value)
    return value


_MISSING = object()


def pointer_tokens(pointer: str) -> tuple[str, ...]:
    """An RFC 6901 pointer's reference tokens, unescaped (`~1` is `/`, `~0` is `~`)."""
    if pointer == "":
        return ()
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


def follow(value: Any, tokens: tuple[str, ...]) -> Any:
    """What the pointer's tokens name inside `value`, or `MISSING`."""
    for token in tokens:
        if isinstance(value, dict):
            if token not in value:
                return MISSING
            value = value[token]
        elif isinstance(value, list):
            if (
                not (token.isascii() and token.isdigit())
                or (token != "0" and token.startswith("0"))
                or int(token) >= len(value)
            ):
                return MISSING
            value = value[int(token)]
        else:
            return MISSING
    return value


MISSING: Any = _MISSING
