"""JSON Schema (Draft 2020-12) validation of tool-call arguments, with errors a person can act on.

A real validator (`jsonschema`), not a hand-rolled subset: type, enum, const, pattern, minimum/maximum,
required, additionalProperties, nested objects and arrays, $defs/$ref within the schema. `$ref` to
anything outside the schema is never fetched (no network from a scorer): it fails the check instead.
`format` is an annotation only, as Draft 2020-12 specifies by default.

`pattern` and `patternProperties` are matched with RE2 (scoring/spec/regex.py), not Python's `re` as the
library would: a schema captured in a trace and the arguments beside it are both untrusted, and one
catastrophic pattern would stall the scorer (and, holding the GIL, the receivers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from referencing.exceptions import Unresolvable

from scoring.spec.regex import pattern_problem, search

_MAX_ERRORS = 5  # per call: enough to fix the call, short enough to read
# Values, not schemas: a `pattern` key inside them is data (unless a $ref points there, which the
# keywords below still match with RE2).
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


@dataclass(frozen=True, slots=True)
class Violation:
    pointer: str  # JSON pointer into the arguments ("" is the whole object)
    rule: str  # the keyword broken: type, required, enum, pattern, minimum, additionalProperties, …
    schema_pointer: str  # where that keyword sits in the schema
    message: str


def pointer(parts: Any) -> str:
    """RFC 6901 JSON pointer of a path."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _patterns(schema: Any) -> Iterator[tuple[str, str]]:
    """(pointer, pattern) of every `pattern` and `patternProperties` key, at any depth."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(schema, ())]
    while stack:  # no recursion: a captured schema may be nested deeper than Python's stack
        node, path = stack.pop()
        if isinstance(node, list):
            stack.extend((item, (*path, i)) for i, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if key in _DATA_KEYWORDS:
                continue
            if key == "pattern" and isinstance(value, str):
                yield pointer((*path, key)), value
            if key == "patternProperties" and isinstance(value, dict):
                yield from ((pointer((*path, key, k)), k) for k in value)
            stack.append((value, (*path, key)))


def _keys_anywhere(schema: Any, wanted: frozenset[str]) -> set[str]:
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found |= wanted & node.keys()
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


_UNEVALUATED = frozenset({"unevaluatedProperties", "patternProperties"})
# The library evaluates patternProperties for unevaluatedProperties with Python's re itself.
_UNEVALUATED_PROBLEM = (
    "unevaluatedProperties beside patternProperties is not supported (its patterns would be matched by "
    "a backtracking engine): use additionalProperties"
)


def _regex_problem(schema: Any) -> str | None:
    for where, pattern in _patterns(schema):
        problem = pattern_problem(pattern)
        if problem is not None:
            return f"a regex RE2 cannot run at {where} ({pattern[:60]!r}): {problem}"
    if _keys_anywhere(schema, _UNEVALUATED) == _UNEVALUATED:
        return _UNEVALUATED_PROBLEM
    return None


def schema_problem(schema: Any) -> str | None:
    """Why a schema is not a valid Draft 2020-12 schema, or cannot be checked in bounded time, or None."""
    problem = _regex_problem(schema)  # first: the library compiles patterns with Python's re
    if problem is not None:
        return problem
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = pointer(exc.absolute_path) or "/"
        return f"not a valid JSON Schema (Draft 2020-12) at {where}: {exc.message}"
    return None


def _unrunnable(pattern: str) -> ValidationError | None:
    problem = pattern_problem(pattern)
    if problem is None:
        return None
    return ValidationError(f"regex {pattern!r} cannot be matched in linear time (RE2): {problem}")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    error = _unrunnable(pattern)
    if error is not None:
        yield error
    elif not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        error = _unrunnable(pattern)
        if error is not None:
            yield error
            continue
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = [p for p in schema.get("patternProperties", {}) if pattern_problem(p) is None]
    extras = sorted(
        (k for k in instance if k not in properties and not any(search(p, k) for p in patterns)), key=str
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(each) for each in extras)
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            regexes = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} unexpected)")


# The library's validator, with every keyword that matches a regex on instance data running on RE2.
_Validator = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


def violations(schema: Any, instance: Any) -> list[Violation]:
    """Every rule the instance breaks, most specific first, at most a handful."""
    if _keys_anywhere(schema, _UNEVALUATED) == _UNEVALUATED:
        return [Violation("", "unevaluatedProperties", "", _UNEVALUATED_PROBLEM)]
    try:
        errors = sorted(
            _Validator(schema).iter_errors(instance),
            key=lambda e: (list(map(str, e.absolute_path)), e.validator),
        )
    except Unresolvable as exc:
        return [
            Violation("", "$ref", "", f"cannot resolve {exc} (references outside the schema are not fetched)")
        ]
    return [
        Violation(pointer(e.absolute_path), str(e.validator), pointer(e.absolute_schema_path), e.message)
        for e in errors[:_MAX_ERRORS]
    ]
