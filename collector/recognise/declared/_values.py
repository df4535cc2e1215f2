"""Reading one attribute's value as a convention says: a parser (JSON text, a Python repr's literals, or
text as it is), then a JSON pointer (RFC 6901) into what it gave.

A Python repr (OpenLIT writes `{'amount': 100}`) is parsed as Python syntax and only its literals are
read: strings, numbers, booleans, None, and dicts, lists and tuples of them. Nothing is evaluated, no
name is looked up, and the text and its nesting are bounded, so a hostile span costs at most one
bounded parse."""

from __future__ import annotations

import ast
from typing import Any

from collector.recognise._content import strict_loads

MAX_LITERAL_CHARS = 512 * 1024
MAX_LITERAL_DEPTH = 64


class Unreadable(ValueError):
    """A value its parser cannot read; the message says why."""


def _literal(node: ast.expr, depth: int) -> Any:
    if depth > MAX_LITERAL_DEPTH:
        raise Unreadable(f"nested more than {MAX_LITERAL_DEPTH} deep")
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, str | bool | int | float):
            return node.value
        raise Unreadable(f"{type(node.value).__name__} is not a value JSON can hold")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        number = node.operand.value if isinstance(node.operand, ast.Constant) else None
        if isinstance(number, int | float) and not isinstance(number, bool):
            return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise Unreadable("a ** expansion is not a literal")
            name = _literal(key, depth + 1)
            if isinstance(name, list):
                raise Unreadable("a dict key that is a tuple has no JSON form")
            # As json.dumps writes Python keys: True -> "true", None -> "null", 1 -> "1".
            text = name if isinstance(name, str) else strict_dump_key(name)
            result[text] = _literal(value, depth + 1)
        return result
    raise Unreadable(f"{type(node).__name__} is not a literal (only literals are read, nothing is evaluated)")


def strict_dump_key(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return str(value)


def python_literal(text: str) -> Any:
    """The value of a Python literal (a repr of plain data), read without evaluating anything."""
    if len(text) > MAX_LITERAL_CHARS:
        raise Unreadable(
            f"{len(text)} characters is more than the {MAX_LITERAL_CHARS} read as a Python literal"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise Unreadable(f"not a Python literal: {type(exc).__name__}") from None
    return _literal(tree.body, 0)


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
