"""Validation errors as a person reads them: where in the spec, and for an unknown key, the keys known
there and the closest one (a typo is the usual cause)."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Union

from pydantic import BaseModel

_TAG = "\x00"  # scoring/spec/multiturn_models.py UNION_TAG: a union branch's tag, not a place in the spec


def location(error: Any) -> str:
    return ".".join(str(part) for part in error["loc"] if not str(part).startswith(_TAG)) or "(spec)"


def _keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _members(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [m for a in typing.get_args(annotation) if a is not type(None) for m in _members(a)]
    return [annotation]


def _step(annotation: Any, part: Any) -> Any:
    """The type found one step (a key, an index) inside a value of this type, or None."""
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for name, field in member.model_fields.items():
                if (field.alias or name) == part:
                    return field.annotation
        origin = typing.get_origin(member)
        if origin is dict:
            return typing.get_args(member)[1]
        if origin in (list, tuple):
            return typing.get_args(member)[0]
    return None


def unknown_key(root: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """An unknown key, and the keys known where it was found (argument_rules.T.values.K nests models)."""
    annotation: Any = root
    for part in loc[:-1]:
        if not str(part).startswith(_TAG):
            annotation = _step(annotation, part)
    models = [m for m in _members(annotation) if isinstance(m, type) and issubclass(m, BaseModel)]
    known = _keys(models[0] if models else root)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown key; {hint}known keys are {', '.join(known)}"
