"""OTLP requests carrying attribute values nested to a chosen depth, in protobuf and in JSON.

Protobuf is written field by field: python protobuf cannot build (nor parse) a message nested past 100
levels. JSON is written as text: `json.dumps` would recurse as deep as the value.
"""

from __future__ import annotations

TRACE_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c")
START_NS, END_NS, EVENT_NS = 1_700_000_000_000_000_000, 1_700_000_000_100_000_000, 1_700_000_000_050_000_000


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def fixed64(number: int, value: int) -> bytes:
    return varint(number << 3 | 1) + value.to_bytes(8, "little")


def pb_value(depth: int, kind: str) -> bytes:
    """An AnyValue `depth` levels deep: a string wrapped in arrays or in key-value lists."""
    value = field(1, b"leaf")
    for _ in range(depth - 1):
        if kind == "array":
            value = field(5, field(1, value))
        else:
            value = field(6, field(1, field(1, b"k") + field(2, value)))
    return value


def pb_attribute(key: str, value: bytes) -> bytes:
    return field(1, key.encode()) + field(2, value)


def json_value(depth: int, kind: str) -> str:
    value = '{"stringValue":"leaf"}'
    for _ in range(depth - 1):
        if kind == "array":
            value = '{"arrayValue":{"values":[' + value + "]}}"
        else:
            value = '{"kvlistValue":{"values":[{"key":"k","value":' + value + "}]}}"
    return value


def pb_request(place: str, depth: int, kind: str, span_ids: tuple[bytes, bytes]) -> bytes:
    """Two spans; the first carries `deep` (`depth` levels) in `place` (resource, span, event or link)
    beside `ok`; the second is plain."""
    deep = pb_attribute("deep", pb_value(depth, kind))
    ok = pb_attribute("ok", field(1, b"kept"))

    def span(span_id: bytes, name: bytes, carrier: bool) -> bytes:
        out = field(1, TRACE_ID) + field(2, span_id) + field(5, name)
        out += fixed64(7, START_NS) + fixed64(8, END_NS) + field(9, ok)
        if carrier and place == "span":
            out += field(9, deep)
        if carrier and place == "event":
            out += field(11, fixed64(1, EVENT_NS) + field(2, b"event") + field(3, ok) + field(3, deep))
        if carrier and place == "link":
            out += field(13, field(1, TRACE_ID) + field(2, span_ids[1]) + field(4, ok) + field(4, deep))
        return out

    resource = field(1, ok) + (field(1, deep) if place == "resource" else b"")
    spans = field(2, span(span_ids[0], b"carrier", True)) + field(2, span(span_ids[1], b"plain", False))
    return field(1, field(1, resource) + field(2, spans))


def json_request(place: str, depth: int, kind: str, span_ids: tuple[bytes, bytes]) -> bytes:
    """The same request as `pb_request`, in OTLP/JSON."""
    deep = f'{{"key":"deep","value":{json_value(depth, kind)}}}'
    ok = '{"key":"ok","value":{"stringValue":"kept"}}'

    def span(span_id: bytes, name: str, carrier: bool) -> str:
        attributes = ok + ("," + deep if carrier and place == "span" else "")
        events = (
            f'{{"name":"event","timeUnixNano":"{EVENT_NS}","attributes":[{ok},{deep}]}}'
            if carrier and place == "event"
            else ""
        )
        links = (
            f'{{"traceId":"{TRACE_ID.hex()}","spanId":"{span_ids[1].hex()}","attributes":[{ok},{deep}]}}'
            if carrier and place == "link"
            else ""
        )
        return (
            f'{{"traceId":"{TRACE_ID.hex()}","spanId":"{span_id.hex()}","name":"{name}",'
            f'"startTimeUnixNano":"{START_NS}","endTimeUnixNano":"{END_NS}","attributes":[{attributes}],'
            f'"events":[{events}],"links":[{links}]}}'
        )

    resource = ok + ("," + deep if place == "resource" else "")
    spans = span(span_ids[0], "carrier", True) + "," + span(span_ids[1], "plain", False)
    return (
        f'{{"resourceSpans":[{{"resource":{{"attributes":[{resource}]}},'
        f'"scopeSpans":[{{"spans":[{spans}]}}]}}]}}'
    ).encode()
