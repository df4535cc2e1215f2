"""Content that an emitter wrote as a Python repr instead of JSON: read as literal syntax, never run.

Some instrumentations write a tool's arguments with `str()` of the dict the framework holds: OpenLIT's
LangChain instrumentation (openlit 1.45, `gen_ai.tool.call.arguments`) records `{'amount': 100,
'currency': 'XYZ'}`. That is not JSON (single quotes, `True`, `None`, tuples), but it is Python's
literal syntax, which `ast` can parse without evaluating anything. A shape rule, not a scope rule:
any convention's argument text that is not JSON is tried here.

Bounded on purpose, since the text comes off the wire: at most `MAX_TEXT` characters, nesting at most
`MAX_DEPTH` deep, and only literal nodes (strings, numbers, booleans, None, dicts, lists, tuples, a
sign before a number). Anything else (a name, a call, an operator, `...`, bytes, a set, a complex or
non-finite number, a key that JSON cannot hold) makes the whole text unread. Read as arguments, only a
dict or a list is accepted: a bare word such as `Paris` stays what it was, text. The one reader of Python
literals: a declared convention's `python-literal` parser and OpenLIT's ToolMessage text use it too,
taking any literal (`containers_only=False`).
"""

from __future__ import annotations

import ast
import math
from typing import Any

# Arguments are a few hundred characters; the bound keeps ast's time and memory small for any sender.
MAX_TEXT = 256 * 1024
MAX_DEPTH = 32

_CONTAINERS = (ast.Dict, ast.List, ast.Tuple)


class NotALiteral(ValueError):
    """The text is not a Python literal this reader accepts."""


def _check(node: ast.expr, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise NotALiteral(f"nested deeper than {MAX_DEPTH}")
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
            return
        if isinstance(value, float) and math.isfinite(value):
            return
        raise NotALiteral(f"{type(value).__name__} is not a JSON value")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
            _check(operand, depth + 1)
            return
        raise NotALiteral("a sign before something other than a number")
    if isinstance(node, ast.Dict):
        for key in node.keys:
            if key is None:  # `{**other}`
                raise NotALiteral("a dict unpacking")
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise NotALiteral("a dict key that is not a string")
        for item in node.values:
            _check(item, depth + 1)
        return
    if isinstance(node, (ast.List, ast.Tuple)):
        for element in node.elts:
            if isinstance(element, ast.Starred):
                raise NotALiteral("a starred element")
            _check(element, depth + 1)
        return
    raise NotALiteral(f"{type(node).__name__} is not a literal")


def _as_json(value: Any) -> Any:
    """Tuples become lists, as `json.dumps` writes them."""
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_json(item) for item in value]
    return value


def python_literal(text: str, *, containers_only: bool = True) -> Any:
    """The dict or list a Python repr writes (any literal, unless `containers_only`), as JSON-compatible
    values; `NotALiteral` otherwise."""
    if len(text) > MAX_TEXT:
        raise NotALiteral(f"longer than {MAX_TEXT} characters")
    stripped = text.strip()
    if containers_only and not stripped.startswith(("{", "[", "(")):
        raise NotALiteral("not a dict, list or tuple")
    try:
        tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise NotALiteral(f"not Python syntax: {type(exc).__name__}") from None
    if containers_only and not isinstance(tree.body, _CONTAINERS):
        raise NotALiteral("not a dict, list or tuple")
    _check(tree.body, 0)
    try:
        return _as_json(ast.literal_eval(tree.body))
    except (ValueError, TypeError, MemoryError, RecursionError) as exc:
        raise NotALiteral(str(exc)) from None
