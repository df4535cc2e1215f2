"""Attribute values nested too deeply: both decoders drop the same attributes, and only them.

Each place an attribute can be (resource, span, event, link), nested through arrays or key-value lists,
at depths around the limit and far past python protobuf's parse limit (100 message levels): the
protobuf and JSON decoders keep the same spans and attributes, drop the same ones, count a span's own
in its `dropped_attributes_count`, and report them in the partial-success message.
"""

from __future__ import annotations

import os

import pytest

from collector.decode.decoded import DecodedRequest, UndecodableRequest
from collector.decode.from_json import decode_json
from collector.decode.from_protobuf import decode_protobuf
from collector.decode.nesting import MAX_VALUE_DEPTH, strip_deep_values
from collector.decode.prepare import prepare_request
from tests._nested import json_request, pb_request

IDS = (os.urandom(8), os.urandom(8))


def _seen(decoded: DecodedRequest, place: str) -> tuple[object, ...]:
    """What a decoder made of the request, in terms both encodings share."""
    carrier, plain = decoded.spans
    holder: dict[str, object]
    if place == "resource":
        holder = carrier.resource.attributes
    elif place == "span":
        holder = carrier.attributes
    elif place == "event":
        holder = carrier.events[0].attributes
    else:
        holder = carrier.links[0].attributes
    return (
        decoded.rejected,
        [s.name for s in decoded.spans],
        sorted(holder),
        carrier.dropped_attributes_count,
        plain.attributes,
        decoded.dropped_values.count,
    )


@pytest.mark.parametrize("kind", ["array", "kvlist"])
@pytest.mark.parametrize("place", ["resource", "span", "event", "link"])
@pytest.mark.parametrize("depth", [1, MAX_VALUE_DEPTH, MAX_VALUE_DEPTH + 1, 48, 90, 200])
def test_both_encodings_drop_the_same_attributes_and_keep_the_rest(place: str, kind: str, depth: int) -> None:
    from_pb = decode_protobuf(pb_request(place, depth, kind, IDS))
    from_json = decode_json(json_request(place, depth, kind, IDS))
    assert _seen(from_pb, place) == _seen(from_json, place)
    kept = depth <= MAX_VALUE_DEPTH
    rejected, names, keys, span_dropped, plain, dropped = _seen(from_pb, place)
    assert (rejected, names, plain) == (0, ["carrier", "plain"], {"ok": "kept"})
    assert keys == (["deep", "ok"] if kept else ["ok"])
    assert dropped == (0 if kept else 1)
    assert span_dropped == (1 if place == "span" and not kept else 0)
    message = prepare_request(pb_request(place, depth, kind, IDS), "protobuf").error_message
    assert ("'deep'" in message and f"deeper than {MAX_VALUE_DEPTH}" in message) == (not kept)


def test_protobuf_nested_thousands_deep_loses_only_that_attribute() -> None:
    # JSON that deep cannot be parsed at all (Python's parser stops near 1,000 levels); protobuf can be
    # walked, and the walk stops reading a value once it is past the limit.
    decoded = decode_protobuf(pb_request("event", 5000, "kvlist", IDS))
    assert [s.name for s in decoded.spans] == ["carrier", "plain"]
    assert decoded.spans[0].events[0].attributes == {"ok": "kept"}
    assert decoded.dropped_values.count == 1


def test_what_the_walk_cannot_read_keeps_the_parse_error() -> None:
    assert strip_deep_values(b"\xff" * 100) is None
    assert strip_deep_values(pb_request("span", 10, "array", IDS)) is None  # nothing too deep in it
    deep = pb_request("span", 90, "array", IDS)
    with pytest.raises(UndecodableRequest, match="not a valid OTLP ExportTraceServiceRequest"):
        decode_protobuf(deep[:-5])  # truncated: neither the parse nor the walk can read it
