"""Candidate model outputs for one BFCL entry: its answer and systematic perturbations of it.

Each candidate is `(label, param, output)`: what was changed, the parameter it touched (None for changes
to the calls themselves) and a decoded model output in BFCL's form `[{function: {param: value}}]`.
Whether a candidate is right is not decided here: both checkers say.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

Call = dict[str, dict[str, Any]]
Candidate = tuple[str, str | None, list[Call]]

_PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))
_FULL_WIDTH = str.maketrans(_PRINTABLE, "".join(chr(ord(c) + 0xFEE0) for c in _PRINTABLE))


def _first(acceptable: list[Any]) -> tuple[bool, Any]:
    """(pass it?, value): the first acceptable value, or leave the parameter out when `""` comes first."""
    if not acceptable or acceptable[0] == "":
        return False, None
    return True, _concrete(acceptable[0])


def _concrete(value: Any) -> Any:
    """An acceptable value as a model would pass it: BFCL's objects hold lists of acceptable values."""
    if isinstance(value, dict):
        return {k: _concrete(v[0]) for k, v in value.items() if isinstance(v, list) and v and v[0] != ""}
    if isinstance(value, list):
        return [_concrete(v) if isinstance(v, dict) else v for v in value]
    return value


def answer_call(truth: Call) -> Call:
    (name, params), *_ = truth.items()
    args = {}
    for param, acceptable in params.items():
        passed, value = _first(acceptable)
        if passed:
            args[param] = value
    return {name: args}


def string_variants(text: str) -> Iterator[tuple[str, str]]:
    words = text.split(" ")
    yield "string:spaces removed", text.replace(" ", "")
    if len(text) > 3:
        yield "string:space inside a word", text[:2] + " " + text[2:]
    yield "string:upper case", text.upper()
    yield "string:title case", text.title()
    yield "string:underscores for spaces", text.replace(" ", "_")
    yield "string:hyphens for spaces", text.replace(" ", "-")
    yield "string:tab for spaces", text.replace(" ", "\t") if " " in text else text + "\t"
    yield "string:trailing !", text + "!"
    yield "string:trailing .", text + "."
    yield (
        "string:comma after first word",
        ", ".join([words[0], " ".join(words[1:])]) if len(words) > 1 else text + ",",
    )
    yield "string:parentheses", f"({text})"
    yield "string:apostrophe", text + "'s"
    yield "string:full-width", text.translate(_FULL_WIDTH)
    yield "string:wrong", text + " zq"


def value_variants(value: Any) -> Iterator[tuple[str, Any]]:
    """Wrong values, type changes and look-alikes of one concrete value."""
    if isinstance(value, bool):
        yield "wrong value", not value
        yield "type:bool as int", int(value)
        yield "type:bool as string", str(value).lower()
    elif isinstance(value, int):
        yield "wrong value", value + 7
        yield "type:int as float", float(value)
        yield "type:int as string", str(value)
        yield "type:int as bool", bool(value)
    elif isinstance(value, float):
        yield "wrong value", value + 7.5
        if value.is_integer():
            yield "type:float as int", int(value)
        yield "type:float as string", str(value)
    elif isinstance(value, str):
        yield from string_variants(value)
        if value.strip().lstrip("-").isdigit():
            yield "type:numeric string as int", int(value)
        yield "type:string as list", [value]
    elif isinstance(value, list):
        yield from _list_variants(value)
    elif isinstance(value, dict):
        yield from _dict_variants(value)
    elif value is None:
        yield "wrong value", 0.5


def _list_variants(value: list[Any]) -> Iterator[tuple[str, Any]]:
    yield "list:empty", []
    if len(value) > 1:
        yield "list:reversed", value[::-1]
        yield "list:last dropped", value[:-1]
    if value:
        yield "list:first repeated", [*value, value[0]]
    if any(isinstance(v, int) and not isinstance(v, bool) for v in value):
        yield "list:int items as float", [float(v) if type(v) is int else v for v in value]
    if any(isinstance(v, float) and v.is_integer() for v in value):
        yield "list:float items as int", [int(v) if type(v) is float and v.is_integer() else v for v in value]
    if value and isinstance(value[0], str):
        for label, variant in string_variants(value[0]):
            yield f"list item {label}", [variant, *value[1:]]
    if value and isinstance(value[0], dict):
        for label, variant in _dict_variants(value[0]):
            yield f"list item {label}", [variant, *value[1:]]
    yield "type:list as tuple string", str(tuple(value))


def _dict_variants(value: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    yield "dict:extra key", {**value, "zq_extra": 1}
    for key, item in value.items():
        yield "dict:key dropped", {k: v for k, v in value.items() if k != key}
        if isinstance(item, str):
            for label, variant in string_variants(item):
                yield f"dict value {label}", {**value, key: variant}
        elif isinstance(item, bool):
            yield "dict value:bool as int", {**value, key: int(item)}
        elif isinstance(item, int):
            yield "dict value:int as float", {**value, key: float(item)}
            yield "dict value:wrong", {**value, key: item + 7}
        elif isinstance(item, float):
            yield "dict value:wrong", {**value, key: item + 7.5}
        elif isinstance(item, list):
            yield "dict value:list reversed", {**value, key: item[::-1]}
            if item and isinstance(item[0], str):
                yield "dict value:list item upper case", {**value, key: [item[0].upper(), *item[1:]]}


def call_variants(truth: Call, doc: dict[str, Any]) -> Iterator[tuple[str, str | None, Call]]:
    """Every perturbation of one ground-truth call, one change at a time."""
    (name, params), *_ = truth.items()
    base = answer_call(truth)[name]
    for param, acceptable in params.items():
        for alternative in acceptable[1:]:
            if alternative == "":
                yield "alternative:omitted", param, {name: {k: v for k, v in base.items() if k != param}}
            else:
                yield "alternative", param, {name: {**base, param: _concrete(alternative)}}
        if "" in acceptable:
            yield 'explicit ""', param, {name: {**base, param: ""}}
        if param in base:
            yield "dropped", param, {name: {k: v for k, v in base.items() if k != param}}
            for label, variant in value_variants(base[param]):
                yield label, param, {name: {**base, param: variant}}
    yield "extra:unknown parameter", None, {name: {**base, "zq_extra": 1}}
    declared = doc["parameters"]["properties"]
    for param in declared:
        if param not in params:
            yield "extra:declared parameter not in the answer", param, {name: {**base, param: 1}}


def candidates(category: str, functions: list[dict[str, Any]], truth: list[Call]) -> Iterator[Candidate]:
    docs = {f["name"]: f for f in functions}
    answer = [answer_call(t) for t in truth]
    yield "answer", None, answer
    for position, call in enumerate(truth):
        for label, param, variant in call_variants(call, docs[next(iter(call))]):
            yield label, param, [*answer[:position], variant, *answer[position + 1 :]]
    yield "calls:none", None, []
    yield "calls:one repeated", None, [*answer, answer[0]]
    (first_name, first_args), *_ = answer[0].items()
    for other in docs:
        if other != first_name:
            yield "calls:another declared function", None, [{other: first_args}, *answer[1:]]
    yield "calls:unknown function", None, [{first_name + "_zq": first_args}, *answer[1:]]
    if len(answer) > 1:
        yield "calls:last dropped", None, answer[:-1]
        yield from _orders(truth, answer)


def _orders(truth: list[Call], answer: list[Call]) -> Iterator[Candidate]:
    """Parallel calls in other orders, with each call's alternative values too: where acceptable values
    overlap, BFCL's first-fit walk depends on the order."""
    orders = (
        list(itertools.permutations(range(len(answer))))[1:]
        if len(answer) <= 3
        else [tuple(reversed(range(len(answer))))]
    )
    for order in orders:
        yield "order", None, [answer[i] for i in order]
    for position, call in enumerate(truth):
        (name, params), *_ = call.items()
        for param, acceptable in params.items():
            for alternative in (a for a in acceptable[1:] if a != ""):
                varied = [
                    *answer[:position],
                    {name: {**answer[position][name], param: _concrete(alternative)}},
                ]
                varied += answer[position + 1 :]
                for order in orders:
                    yield "order with an alternative", param, [varied[i] for i in order]
