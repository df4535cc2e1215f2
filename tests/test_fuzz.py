"""Promise 4, bad input is refused precisely and harms nothing else: fuzzing, bounded in time.

- The OTLP decoders, on random bytes, mutated valid requests and deep nesting, either return a
  DecodedRequest or raise UndecodableRequest (HTTP 400 / INVALID_ARGUMENT), never anything else, and
  quickly. What they return must also go through the writer (rows, commit, recognition, run
  completion) without a failure: a request that decodes but cannot be stored would be answered as
  retryable, and a client would re-send it forever while it marks storage as failing for everyone.
- The spec loader, on random text and bytes, random spec-shaped documents and hostile YAML (deep
  nesting, alias bombs, self-referring aliases, catastrophic regexes, oversized files), either returns
  specs whose canonical form and fingerprint can be computed, or raises SpecError; never anything else,
  and quickly. A spec's regexes, wherever it carries them, are also matched against arguments built to
  make a backtracking engine run for minutes, and any regex against random arguments: quickly too.

Every input that ever broke a rule is kept under tests/fixtures/fuzz/ and replayed first.
TRACESCORE_FUZZ_EXAMPLES raises the number of examples per property (default 200).
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from collector import decode_json, decode_protobuf
from collector.decode.decoded import DecodedRequest, UndecodableRequest
from collector.decode.prepare import prepare_spans
from collector.store.database import open_writer
from collector.store.writer import WriteJob, Writer, WriterSettings
from scoring import Evidence, Execution, Run, Spec, SpecError, ToolDefinition, judge, load_specs

FIXTURES = Path(__file__).parent / "fixtures" / "fuzz"
EXAMPLES = int(os.environ.get("TRACESCORE_FUZZ_EXAMPLES", "200"))
# Hypothesis' own deadline fails on a single slow example on a loaded CI machine; the bound that
# matters (no input takes long) is asserted on every call instead, with room for a busy machine.
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
# Families with a few parameters (a depth, a width): fewer examples cover them.
FUZZ_FAMILY = settings(FUZZ, max_examples=max(20, EXAMPLES // 4))
MAX_SECONDS = 2.0

TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")
ROOT, TOOL, CHAT = (
    bytes.fromhex("eee19b7ec3c1b171"),
    bytes.fromhex("eee19b7ec3c1b172"),
    bytes.fromhex("eee19b7ec3c1b173"),
)
START = 1_700_000_000_000_000_000


def _timed(call: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    try:
        return call()
    finally:
        elapsed = time.perf_counter() - started
        assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s"


# ---- the writer path a decoded request takes --------------------------------------------------------


@pytest.fixture(scope="module")
def writer() -> Iterator[Writer]:
    """A writer driven step by step on this thread: the exact code that stores a request's spans."""
    with tempfile.TemporaryDirectory() as tmp:
        connection = open_writer(Path(tmp) / "fuzz.duckdb")
        try:
            yield Writer(connection, WriterSettings())
        finally:
            connection.close()


def _store(writer: Writer, decoded: DecodedRequest) -> None:
    """Commit the spans and complete their runs, as the writer thread does; nothing may fail."""
    if not decoded.spans:
        return
    answers: list[BaseException | None] = []
    job = WriteJob(prepare_spans(decoded.spans), answers.append)
    writer._write([job])
    writer._complete(time.monotonic(), force=True)
    assert answers == [None], answers
    assert writer.healthy, writer.stats.last_error


def _check_protobuf(writer: Writer, body: bytes) -> None:
    try:
        decoded = _timed(lambda: decode_protobuf(body))
    except UndecodableRequest:
        return
    _timed(lambda: _store(writer, decoded))


def _check_json(writer: Writer, body: bytes) -> None:
    try:
        decoded = _timed(lambda: decode_json(body))
    except UndecodableRequest:
        return
    _timed(lambda: _store(writer, decoded))


# ---- valid requests to start from ----------------------------------------------------------------------


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _text(value: str) -> AnyValue:
    return AnyValue(string_value=value)


def _pb_base() -> bytes:
    """An agent run with a tool call and the chat that asked for it: recognition has work to do."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.append(_kv("service.name", _text("fuzz")))
    scope = resource.scope_spans.add()
    scope.scope.name = "fuzz"
    root = PbSpan(trace_id=TRACE, span_id=ROOT, name="invoke_agent a", start_time_unix_nano=START)
    root.end_time_unix_nano = START + 10_000
    root.attributes.extend(
        [_kv("gen_ai.operation.name", _text("invoke_agent")), _kv("gen_ai.agent.name", _text("a"))]
    )
    chat = PbSpan(
        trace_id=TRACE, span_id=CHAT, parent_span_id=ROOT, name="chat m", start_time_unix_nano=START
    )
    chat.end_time_unix_nano = START + 1_000
    messages = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "t", "arguments": {"q": 1}}],
        }
    ]
    chat.attributes.extend(
        [
            _kv("gen_ai.operation.name", _text("chat")),
            _kv("gen_ai.output.messages", _text(json.dumps(messages))),
        ]
    )
    tool = PbSpan(
        trace_id=TRACE, span_id=TOOL, parent_span_id=ROOT, name="execute_tool t", start_time_unix_nano=START
    )
    tool.end_time_unix_nano = START + 2_000
    nested = AnyValue()
    nested.kvlist_value.values.append(
        _kv("deep", AnyValue(array_value={"values": [_text("x"), AnyValue(int_value=7)]}))
    )
    tool.attributes.extend(
        [
            _kv("gen_ai.operation.name", _text("execute_tool")),
            _kv("gen_ai.tool.name", _text("t")),
            _kv("gen_ai.tool.call.id", _text("c1")),
            _kv("gen_ai.tool.call.arguments", _text('{"q": 1}')),
            _kv("gen_ai.tool.call.result", _text('{"ok": true}')),
            _kv("structured", nested),
            _kv("raw", AnyValue(bytes_value=b"\x00\xff")),
            _kv("ratio", AnyValue(double_value=0.5)),
        ]
    )
    event = tool.events.add()
    event.name, event.time_unix_nano = "exception", START + 1_500
    event.attributes.append(_kv("exception.message", _text("boom")))
    link = tool.links.add()
    link.trace_id, link.span_id = TRACE, CHAT
    scope.spans.extend([root, chat, tool])
    return bytes(request.SerializeToString())


def _json_base() -> dict[str, Any]:
    def attr(key: str, value: Any) -> dict[str, Any]:
        return {"key": key, "value": value}

    def span(
        span_id: bytes, name: str, parent: bytes | None, attributes: list[dict[str, Any]]
    ) -> dict[str, Any]:
        document: dict[str, Any] = {
            "traceId": TRACE.hex(),
            "spanId": span_id.hex(),
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(START),
            "endTimeUnixNano": str(START + 1_000),
            "attributes": attributes,
            "status": {"code": 0},
        }
        if parent:
            document["parentSpanId"] = parent.hex()
        return document

    messages = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "t", "arguments": {"q": 1}}],
        }
    ]
    spans = [
        span(ROOT, "invoke_agent a", None, [attr("gen_ai.operation.name", {"stringValue": "invoke_agent"})]),
        span(
            CHAT,
            "chat m",
            ROOT,
            [
                attr("gen_ai.operation.name", {"stringValue": "chat"}),
                attr("gen_ai.output.messages", {"stringValue": json.dumps(messages)}),
            ],
        ),
        span(
            TOOL,
            "execute_tool t",
            ROOT,
            [
                attr("gen_ai.operation.name", {"stringValue": "execute_tool"}),
                attr("gen_ai.tool.name", {"stringValue": "t"}),
                attr(
                    "gen_ai.tool.call.arguments", {"kvlistValue": {"values": [attr("q", {"intValue": "1"})]}}
                ),
                attr("list", {"arrayValue": {"values": [{"doubleValue": "NaN"}, {"boolValue": True}]}}),
                attr("raw", {"bytesValue": base64.b64encode(b"\x00\xff").decode()}),
            ],
        ),
    ]
    spans[2]["events"] = [{"name": "exception", "timeUnixNano": str(START), "attributes": []}]
    spans[2]["links"] = [{"traceId": TRACE.hex(), "spanId": CHAT.hex()}]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", {"stringValue": "fuzz"})]},
                "scopeSpans": [{"scope": {"name": "fuzz"}, "spans": spans}],
            }
        ]
    }


# Attribute keys recognition reads, so generated values land where they matter.
GENAI_KEYS = [
    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result", "gen_ai.output.messages", "gen_ai.input.messages", "gen_ai.agent.name",
    "openinference.span.kind", "tool.name", "input.value", "output.value", "tracescore.run.id",
    "tracescore.task.id", "session.id", "error.type", "traceloop.span.kind", "traceloop.entity.name",
    "traceloop.entity.input", "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
]  # fmt: skip
PB_BASE = _pb_base()
JSON_BASE = _json_base()


# ---- mutations ---------------------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """A valid body after a few byte-level edits: flips, insertions, deletions, truncation, repeats."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        edit = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "repeat"]))
        if edit == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif edit == "set":
            data[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x12, 0x22, 0x5C]))
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif edit == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif edit == "truncate":
            del data[at:]
        else:
            end = min(len(data), at + draw(st.integers(1, 64)))
            data[at:at] = data[at:end] * draw(st.integers(1, 8))
    return bytes(data)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
# Keys the decoder looks for, so replaced values land where they matter.
OTLP_KEYS = [
    "resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "parentSpanId", "name", "kind",
    "startTimeUnixNano", "endTimeUnixNano", "attributes", "key", "value", "stringValue", "intValue",
    "doubleValue", "boolValue", "bytesValue", "arrayValue", "kvlistValue", "values", "events", "links",
    "status", "code", "message", "flags", "traceState", "droppedAttributesCount", "scope", "resource",
]  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


@st.composite
def mutated_json(draw: st.DrawFn) -> bytes:
    """The valid document with values replaced by random JSON, keys added or dropped."""
    document = json.loads(json.dumps(JSON_BASE))
    paths = list(_paths(document))[1:]
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths))
        parent: Any = document
        try:
            for part in path[:-1]:
                parent = parent[part]
            edit = draw(st.sampled_from(["replace", "drop", "add"]))
            if edit == "replace":
                parent[path[-1]] = draw(json_values)
            elif edit == "drop" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif isinstance(parent, dict):
                parent[draw(st.sampled_from(OTLP_KEYS))] = draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path
    return json.dumps(document).encode()


any_values = st.deferred(
    lambda: (
        st.builds(AnyValue, string_value=st.text(max_size=30))
        | st.builds(AnyValue, int_value=st.integers(-(2**63), 2**63 - 1))
        | st.builds(AnyValue, double_value=st.floats())
        | st.builds(AnyValue, bool_value=st.booleans())
        | st.builds(AnyValue, bytes_value=st.binary(max_size=20))
        | st.builds(lambda vs: AnyValue(array_value={"values": vs}), st.lists(any_values, max_size=3))
        | st.builds(lambda kvs: AnyValue(kvlist_value={"values": kvs}), st.lists(key_values, max_size=3))
        | st.just(AnyValue())
    )
)
key_values = st.builds(KeyValue, key=st.text(max_size=12) | st.sampled_from(GENAI_KEYS), value=any_values)
ids = st.binary(max_size=20) | st.sampled_from([TRACE, ROOT, TOOL, CHAT, bytes(8), bytes(16), b""])
u64 = st.integers(0, 2**64 - 1)


@st.composite
def generated_protobuf(draw: st.DrawFn) -> bytes:
    """Well-formed protobuf with hostile content: any ids, times, enums, names and attribute values."""
    request = ExportTraceServiceRequest()
    for _ in range(draw(st.integers(1, 2))):
        resource = request.resource_spans.add()
        resource.resource.attributes.extend(draw(st.lists(key_values, max_size=3)))
        scope = resource.scope_spans.add()
        scope.scope.name = draw(st.text(max_size=10))
        for _ in range(draw(st.integers(0, 4))):
            span = scope.spans.add()
            span.trace_id, span.span_id, span.parent_span_id = draw(ids), draw(ids), draw(ids)
            span.name = draw(st.text(max_size=20))
            span.kind = draw(st.integers(-(2**31), 2**31 - 1))
            span.start_time_unix_nano, span.end_time_unix_nano = draw(u64), draw(u64)
            span.flags = draw(st.integers(0, 2**32 - 1))
            span.status.code = draw(st.integers(-(2**31), 2**31 - 1))
            span.status.message = draw(st.text(max_size=10))
            span.attributes.extend(draw(st.lists(key_values, max_size=6)))
            for _ in range(draw(st.integers(0, 2))):
                event = span.events.add()
                event.name, event.time_unix_nano = draw(st.text(max_size=8)), draw(u64)
                event.attributes.extend(draw(st.lists(key_values, max_size=2)))
            for _ in range(draw(st.integers(0, 2))):
                link = span.links.add()
                link.trace_id, link.span_id = draw(ids), draw(ids)
            span.dropped_attributes_count = draw(st.integers(0, 2**32 - 1))
    return bytes(request.SerializeToString())


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, by hand: no protobuf library builds a message this deep."""
    length, size = b"", len(payload)
    while True:
        byte, size = size & 0x7F, size >> 7
        length += bytes([byte | (0x80 if size else 0)])
        if not size:
            break
    key = (number << 3) | 2
    return bytes([key]) + length + payload


def _deep_protobuf(depth: int, kvlist: bool) -> bytes:
    value = _field(1, b"x")  # AnyValue.string_value
    for _ in range(depth):
        if kvlist:  # AnyValue.kvlist_value -> KeyValueList.values -> KeyValue{key, value}
            value = _field(6, _field(1, _field(1, b"k") + _field(2, value)))
        else:  # AnyValue.array_value -> ArrayValue.values
            value = _field(5, _field(1, value))
    span = PbSpan(
        trace_id=TRACE, span_id=ROOT, name="deep", start_time_unix_nano=START, end_time_unix_nano=START
    )
    span_bytes = bytes(span.SerializeToString()) + _field(9, _field(1, b"deep") + _field(2, value))
    return _field(1, _field(2, _field(2, span_bytes)))  # request.resource_spans.scope_spans.spans


def _deep_json(depth: int, kvlist: bool) -> bytes:
    if kvlist:
        opening, closing = '{"kvlistValue":{"values":[{"key":"k","value":', "}]}}"
    else:
        opening, closing = '{"arrayValue":{"values":[', "]}}"
    value = opening * depth + '{"stringValue":"x"}' + closing * depth
    span = (
        f'{{"traceId":"{TRACE.hex()}","spanId":"{ROOT.hex()}","name":"deep",'
        f'"attributes":[{{"key":"deep","value":{value}}}]}}'
    )
    return f'{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{span}]}}]}}]}}'.encode()


# ---- kept crash inputs --------------------------------------------------------------------------


def _kept() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*") if p.is_file())


@pytest.mark.parametrize("path", _kept(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_crash_inputs(writer: Writer, path: Path) -> None:
    """tests/fixtures/fuzz/{protobuf,json,spec}/: inputs that once broke a rule."""
    if path.parent.name == "protobuf":
        _check_protobuf(writer, path.read_bytes())
    elif path.parent.name == "json":
        _check_json(writer, path.read_bytes())
    else:
        _check_spec(path)


# ---- the decoders ------------------------------------------------------------------------------------


def test_the_valid_bases_store_whole(writer: Writer) -> None:
    assert len(decode_protobuf(PB_BASE).spans) == 3
    assert len(decode_json(json.dumps(JSON_BASE).encode()).spans) == 3
    _check_protobuf(writer, PB_BASE)
    _check_json(writer, json.dumps(JSON_BASE).encode())


@FUZZ
@given(body=st.binary(max_size=4096))
def test_protobuf_random_bytes(writer: Writer, body: bytes) -> None:
    _check_protobuf(writer, body)


@FUZZ
@given(body=mutated(PB_BASE))
def test_protobuf_mutated_requests(writer: Writer, body: bytes) -> None:
    _check_protobuf(writer, body)


@FUZZ
@given(body=generated_protobuf())
def test_protobuf_hostile_content(writer: Writer, body: bytes) -> None:
    _check_protobuf(writer, body)


@FUZZ_FAMILY
@given(depth=st.integers(1, 3000), kvlist=st.booleans())
def test_protobuf_deep_nesting(writer: Writer, depth: int, kvlist: bool) -> None:
    _check_protobuf(writer, _deep_protobuf(depth, kvlist))


@FUZZ
@given(body=st.binary(max_size=4096) | st.text(max_size=2000).map(str.encode))
def test_json_random_input(writer: Writer, body: bytes) -> None:
    _check_json(writer, body)


@FUZZ
@given(body=mutated_json() | mutated(json.dumps(JSON_BASE).encode()))
def test_json_mutated_requests(writer: Writer, body: bytes) -> None:
    _check_json(writer, body)


@FUZZ_FAMILY
@given(depth=st.integers(1, 20_000), kvlist=st.booleans())
def test_json_deep_nesting(writer: Writer, depth: int, kvlist: bool) -> None:
    _check_json(writer, _deep_json(depth, kvlist))
    _check_json(writer, b"[" * depth + b"]" * depth)


# ---- the spec loader ----------------------------------------------------------------------------------


def _check_spec(path: Path) -> None:
    def load() -> None:
        try:
            specs = load_specs([path])
        except SpecError:
            return
        for spec in specs:  # what serve, the APIs and every verdict compute from a loaded spec
            spec.canonical()
            assert len(spec.fingerprint) == 64

    _timed(load)


def _write(text: str | bytes, suffix: str = ".yaml") -> Path:
    handle, name = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(handle, "wb") as file:
        file.write(text.encode() if isinstance(text, str) else text)
    return Path(name)


def _check_spec_text(text: str | bytes, suffix: str = ".yaml") -> None:
    path = _write(text, suffix)
    try:
        _check_spec(path)
    finally:
        path.unlink()


SPEC_KEYS = [
    "name", "select", "scope", "expected_tools", "arguments", "allow_additional", "strict_counts",
    "latency", "profile", "schema", "argument_rules", "calls", "forbidden_tools", "trajectory", "before",
    "parallel", "expect_no_tool_calls", "expect_tool_call", "require_executions_for_requests", "max_ms",
    "values", "mode", "regex", "any_of", "tools", "min", "max", "exactly", "p95_ms", "window",
]  # fmt: skip
spec_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.sampled_from(SPEC_KEYS),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(SPEC_KEYS) | st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@FUZZ
@given(text=st.text(max_size=600) | st.binary(max_size=600))
def test_spec_random_text(text: str | bytes) -> None:
    _check_spec_text(text)


@FUZZ
@given(
    document=st.fixed_dictionaries({"name": st.text(min_size=1, max_size=8)}, optional={}).flatmap(
        lambda base: st.dictionaries(st.sampled_from(SPEC_KEYS), spec_like, max_size=5).map(
            lambda d: {**base, **d}
        )
    ),
    as_json=st.booleans(),
)
def test_spec_random_documents(document: dict[str, Any], as_json: bool) -> None:
    import yaml

    try:
        text = json.dumps(document) if as_json else yaml.safe_dump(document)
    except ValueError:
        return
    _check_spec_text(text, ".json" if as_json else ".yaml")


def _alias_bomb(levels: int, width: int, where: str) -> str:
    lines = [f'l0: &l0 ["{"x" * 8}"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    anchors = "\n".join("    " + line for line in lines)
    return f"name: bomb\nexpected_tools: [t]\n{where}:\n  t:\n{anchors}\n"


@FUZZ_FAMILY
@given(
    levels=st.integers(1, 12),
    width=st.integers(2, 10),
    where=st.sampled_from(["arguments", "select", "argument_rules", "calls"]),
)
def test_spec_alias_bombs(levels: int, width: int, where: str) -> None:
    _check_spec_text(_alias_bomb(levels, width, where))


@FUZZ_FAMILY
@given(depth=st.integers(1, 5000), kind=st.sampled_from(["flow-list", "flow-map", "block"]))
def test_spec_deep_nesting(depth: int, kind: str) -> None:
    if kind == "flow-list":
        value = "[" * depth + "1" + "]" * depth
    elif kind == "flow-map":
        value = "{a: " * depth + "1" + "}" * depth
    else:
        value = "".join(f"\n{'  ' * (i + 2)}k{i}:" for i in range(min(depth, 300))) + " 1"
    _check_spec_text(f"name: deep\nexpected_tools: [t]\narguments:\n  t: {value}\n")


def test_a_self_referring_alias_is_refused() -> None:
    _check_spec_text("name: loop\nexpected_tools: [t]\narguments:\n  t: &a {k: *a}\n")
    _check_spec_text("name: loop\nselect: &a {k: [*a]}\n")


def test_an_oversized_spec_file_is_refused_before_it_is_read() -> None:
    path = _write("name: big\nexpected_tools: [t]\n# " + "x" * (5 * 1024 * 1024) + "\n")
    try:
        with pytest.raises(SpecError, match="too large"):
            _timed(lambda: load_specs([path]))
    finally:
        path.unlink()


# What makes each pattern backtrack for ever in Python's `re`: (a+)+$ on 32 a's and a "!" doubles its
# work with each "a" (0.2 s at 22, so about 4 minutes at 32, uninterruptible, holding the GIL).
CATASTROPHIC = ["(a+)+$", "(a|aa)+$", "(.*a){20}", "([a-z]+)*[0-9]", "(x+x+)+y", "(\\w+\\s?)+$"]
HOSTILE_VALUES = ["a" * 32 + "!", "x" * 32, "a" * 5_000, "word " * 200 + "!"]


def _hostile_schema(regex: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"q": {"type": "string", "pattern": regex}},
        "patternProperties": {regex: {}},
        "additionalProperties": False,
    }


def _hostile_spec(regex: str) -> str:
    """The regex everywhere a spec carries one: argument rules, trajectory values, a JSON Schema's
    pattern and patternProperties (matched against the hostile values and keys)."""
    pattern, schema = json.dumps(regex), _hostile_schema(regex)
    return (
        f"name: redos\nargument_rules:\n  t:\n    values:\n      q: {{regex: {pattern}}}\n"
        f"trajectory:\n  mode: subset\n  tools: [{{tool: t, values: {{q: {{regex: {pattern}}}}}}}]\n"
        f"schema:\n  t: {json.dumps(schema)}\n"
    )


def _hostile_evidence(values: list[str]) -> Evidence:
    calls = tuple(
        Execution(f"span-{i}", "t", {"q": value, value: 1}, True, False, False, False, 1.0, None, None)
        for i, value in enumerate(values)
    )
    return Evidence(Run("run", "trace", None, None, None, None, 1, {}), calls, ())


@pytest.mark.parametrize("regex", CATASTROPHIC)
def test_a_catastrophic_regex_loads_and_scores_quickly(regex: str) -> None:
    # Loaded, then matched against arguments built to make it backtrack: RE2 (scoring/spec/regex.py)
    # answers in time linear in the value, so each call here stays under MAX_SECONDS.
    path = _write(_hostile_spec(regex))
    try:
        (spec,) = _timed(lambda: load_specs([path]))
    finally:
        path.unlink()
    verdict = _timed(lambda: judge(spec, _hostile_evidence(HOSTILE_VALUES)))
    assert verdict.label != "error", verdict.reason
    (rules,) = [c for c in verdict.checks if c.kind == "argument_rules"]
    broken = {o["span_id"]: o["broken"] for o in rules.observed}
    assert all(f"does not match regex {regex!r}" in b for found in broken.values() for b in found)
    if regex == "(a+)+$":  # the case that made `re` hang: answered, and answered right
        assert broken["span-0"] and not broken["span-2"]


def test_a_catastrophic_pattern_captured_in_a_trace_is_matched_quickly() -> None:
    # schema: from_trace takes the pattern from the traffic itself: hostile pattern, hostile value.
    spec = Spec.model_validate({"name": "from-trace", "schema": "from_trace"})
    schema = _hostile_schema("(a+)+$")
    evidence = _hostile_evidence(HOSTILE_VALUES)
    evidence = Evidence(
        evidence.run,
        evidence.executions,
        (),
        lambda: {"t": ToolDefinition("t", schema, "chat", "gen_ai.tool.definitions")},
    )
    verdict = _timed(lambda: judge(spec, evidence))
    (check,) = verdict.checks
    assert not check.satisfied
    assert any(f["rule"] == "pattern" for f in check.observed)


REGEX_TEXT = st.text(alphabet="ax!()|+*?{}[]^$.\\,0123-sw", max_size=24)


@FUZZ
@given(regex=REGEX_TEXT, values=st.lists(st.text(alphabet="ax! ", max_size=64), min_size=1, max_size=4))
def test_any_spec_regex_is_refused_at_load_or_matched_quickly(regex: str, values: list[str]) -> None:
    path = _write(_hostile_spec(regex))
    try:
        try:
            (spec,) = _timed(lambda: load_specs([path]))
        except SpecError as exc:
            assert "\n" not in str(exc)  # one line: file, spec, key and the fix
            return
    finally:
        path.unlink()
    verdict = _timed(lambda: judge(spec, _hostile_evidence(values)))
    assert verdict.label != "error", verdict.reason
