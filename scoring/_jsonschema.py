"""JSON Schema (Draft 2020-12) validation of tool-call arguments, with errors a person can act on.

A real validator (`jsonschema`), not a hand-rolled subset: type, enum, const, pattern, minimum/maximum,
required, additionalProperties, nested objects and arrays, $defs/$ref within the schema. `$ref` to
anything outside the schema is never fetched (no network from a scorer): it fails the check instead.
`format` is an annotation only, as Draft 2020-12 specifies by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

_MAX_ERRORS = 5  # per call: enough to fix the call, short enough to read


@dataclass(frozen=True, slots=True)
class Violation:
    pointer: str  # JSON pointer into the arguments ("" is the whole object)
    rule: str  # the keyword broken: type, required, enum, pattern, minimum, additionalProperties, …
    schema_pointer: str  # where that keyword sits in the schema
    message: str


def pointer(parts: Any) -> str:
    """RFC 6901 JSON pointer of a path."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def schema_problem(schema: Any) -> str | None:
    """Why a schema is not a valid Draft 2020-12 schema, or None."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = pointer(exc.absolute_path) or "/"
        return f"not a valid JSON Schema (Draft 2020-12) at {where}: {exc.message}"
    return None


def violations(schema: Any, instance: Any) -> list[Violation]:
    """Every rule the instance breaks, most specific first, at most a handful."""
    try:
        errors = sorted(
            Draft202012Validator(schema).iter_errors(instance),
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
