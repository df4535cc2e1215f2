"""Attribute values nested too deeply: each such attribute is dropped alone, the rest of its span and
of the request kept, and the answer says so (OTLP `partial_success`, `rejected_spans` 0, as a warning).

The rule, the same for both encodings: an attribute whose value nests more than `MAX_VALUE_DEPTH`
`AnyValue`s (a scalar is 1 deep, `[x]` 2, `{"k": [x]}` 3) is dropped and counted in its span's
`dropped_attributes_count`. 32 is what protobuf can always carry: python protobuf (upb) refuses to
parse a message nested deeper than 100 levels, and an event's attribute value starts at level 7
(request, resource spans, scope spans, span, event, key-value, value), each array nesting adding two
levels and each key-value list three; 6 + 3 × 32 − 2 = 100.

A protobuf request holding a deeper value fails to parse as a whole (upb stops at the limit, with no
way to skip the one field), which used to lose every good span with it. `strip_deep_values` walks the
request's wire format where attribute values can be (resource, scope, span, event and link
attributes), copies everything else as it is, and leaves out each attribute too deep to keep; the
request is parsed again from that. It runs only after a failed parse, and what it cannot read is left
to the parse's own error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

MAX_VALUE_DEPTH = 32


class ValueTooDeep(ValueError):
    """An attribute value nests more than MAX_VALUE_DEPTH levels."""


@dataclass(slots=True)
class DroppedValues:
    """Attributes dropped for their depth in one request: how many, and the first few keys."""

    count: int = 0
    keys: list[str] = field(default_factory=list)

    def add(self, key: str) -> None:
        self.count += 1
        if len(self.keys) < 3 and key not in self.keys:
            self.keys.append(key)

    def merge(self, other: DroppedValues) -> None:
        self.count += other.count
        for key in other.keys:
            if len(self.keys) < 3 and key not in self.keys:
                self.keys.append(key)

    def message(self) -> str:
        named = ", ".join(repr(k) for k in self.keys)
        return (
            f"{self.count} attribute(s) dropped, their values nested deeper than {MAX_VALUE_DEPTH} "
            f"levels ({named}); the rest of their spans kept"
        )


# ---- the wire format, where attribute values can be ------------------------------------------------
# Read through memoryviews: a slice is a view, not a copy, however deep the walk goes.

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_Rewrite = Callable[[memoryview, DroppedValues], bytes]


class _Unreadable(ValueError):
    pass


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Unreadable
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: memoryview) -> Iterator[tuple[int, int, memoryview, memoryview]]:
    """(field number, wire type, the whole field, its payload) for each field of a message."""
    at = 0
    while at < len(data):
        start = at
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            _, at = _varint(data, at)
            payload = at
        elif wire == _LEN:
            size, payload = _varint(data, at)
            at = payload + size
        elif wire in (_I64, _I32):
            payload, at = at, at + (8 if wire == _I64 else 4)
        else:  # groups: not in OTLP
            raise _Unreadable
        if at > len(data):
            raise _Unreadable
        yield number, wire, data[start:at], data[payload:at]


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def _field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _LEN) + _encode_varint(len(payload)) + payload


def _too_deep(value: memoryview, level: int) -> bool:
    """Whether an AnyValue at this level nests deeper than the limit (reads no deeper than that)."""
    if level > MAX_VALUE_DEPTH:
        return True
    for number, wire, _, payload in _fields(value):
        if wire != _LEN or number not in (5, 6):  # array_value, kvlist_value
            continue
        for item_number, item_wire, _, item in _fields(payload):
            if item_number != 1 or item_wire != _LEN:
                continue
            if number == 5 and _too_deep(item, level + 1):  # ArrayValue.values: AnyValue
                return True
            if number == 6:  # KeyValueList.values: KeyValue, whose value (2) is an AnyValue
                for kv_number, kv_wire, _, kv_value in _fields(item):
                    if kv_number == 2 and kv_wire == _LEN and _too_deep(kv_value, level + 1):
                        return True
    return False


def _without_deep_attributes(attributes_field: int) -> _Rewrite:
    """A message with each of its attributes (KeyValue, at `attributes_field`) too deep left out."""

    def rewrite(message: memoryview, dropped: DroppedValues) -> bytes:
        kept = []
        for number, wire, whole, pair in _fields(message):
            if number == attributes_field and wire == _LEN:
                key, value = "", memoryview(b"")
                for kv_number, kv_wire, _, kv_payload in _fields(pair):
                    if kv_number == 1 and kv_wire == _LEN:
                        key = bytes(kv_payload).decode("utf-8", "replace")
                    elif kv_number == 2 and kv_wire == _LEN:
                        value = kv_payload
                if _too_deep(value, 1):
                    dropped.add(key)
                    continue
            kept.append(whole)
        return b"".join(kept)

    return rewrite


def _descending(into: dict[int, _Rewrite], attributes_field: int | None = None) -> _Rewrite:
    """A message rewritten field by field: its own attributes, and the messages it holds in `into`."""
    own = _without_deep_attributes(attributes_field) if attributes_field is not None else None

    def rewrite(message: memoryview, dropped: DroppedValues) -> bytes:
        if own is not None:
            message = memoryview(own(message, dropped))
        out: list[bytes | memoryview] = []
        for number, wire, whole, payload in _fields(message):
            inner = into.get(number)
            out.append(whole if inner is None or wire != _LEN else _field(number, inner(payload, dropped)))
        return b"".join(out)

    return rewrite


# The messages that hold attributes, by field number (opentelemetry/proto/trace/v1/trace.proto,
# resource.proto, common.proto).
_SPAN_ATTRIBUTES = _without_deep_attributes(9)
_SPAN_DROPPED_ATTRIBUTES = 10
_SPAN_EVENTS_AND_LINKS = _descending({11: _without_deep_attributes(3), 13: _without_deep_attributes(4)})


def _span(span: memoryview, dropped: DroppedValues) -> bytes:
    """A span without its attributes too deep, counted in its `dropped_attributes_count` as OTLP asks."""
    before = dropped.count
    rewritten = _SPAN_ATTRIBUTES(span, dropped)
    if dropped.count > before:
        rewritten = _with_more_dropped(memoryview(rewritten), dropped.count - before)
    return _SPAN_EVENTS_AND_LINKS(memoryview(rewritten), dropped)


def _with_more_dropped(span: memoryview, more: int) -> bytes:
    count, kept = 0, []
    for number, wire, whole, payload in _fields(span):
        if number == _SPAN_DROPPED_ATTRIBUTES and wire == _VARINT:
            count, _ = _varint(payload, 0)  # the last one counts, as in any proto3 parse
            continue
        kept.append(bytes(whole))
    tag = _encode_varint(_SPAN_DROPPED_ATTRIBUTES << 3 | _VARINT)
    return b"".join(kept) + tag + _encode_varint(min(count + more, 2**32 - 1))


_SCOPE_SPANS = _descending({1: _without_deep_attributes(3), 2: _span})  # scope, spans
_RESOURCE_SPANS = _descending({1: _without_deep_attributes(1), 2: _SCOPE_SPANS})  # resource, scope spans
_REQUEST = _descending({1: _RESOURCE_SPANS})


def strip_deep_values(body: bytes) -> tuple[bytes, DroppedValues] | None:
    """The request without its attributes nested too deeply, and which they were; None when it holds
    none (or is not a request this walk can read): its parse error stands."""
    dropped = DroppedValues()
    try:
        stripped = _REQUEST(memoryview(body), dropped)
    except (_Unreadable, RecursionError):
        return None
    return (stripped, dropped) if dropped.count else None
