"""What the OpenTelemetry Collector's ClickHouse exporter writes, done here for tests.

The table is created with the exporter's own DDL: its template
`exporter/clickhouseexporter/internal/sqltemplates/traces_table.sql` (open-telemetry/
opentelemetry-collector-contrib) rendered with its defaults (database `otel`, table `otel_traces`, no
cluster, engine `MergeTree()`, no TTL, no full-text search). Rows are made from OTLP/JSON requests the
way its Go code makes them (`exporter_traces.go` `pushTraceData`, `internal.AttributesToMap`):

- every attribute value is `pcommon.Value.AsString()` (pdata/pcommon/value.go): strings as they are,
  bools `true`/`false`, ints in decimal, doubles as Go's `float64AsString` (ES6 number formatting),
  arrays and kvlists as `json.Marshal` of their raw value (keys sorted, compact, `<>&` escaped), bytes
  base64, an empty value as '';
- `ServiceName` is the resource's `service.name` (`internal.GetServiceName`), `SpanKind` and
  `StatusCode` are `Kind().String()` / `Code().String()` (`Internal`, `Error`, …), `Duration` is end
  minus start in nanoseconds, ids lowercase hex ('' when absent), events and links as Nested columns.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

# The template rendered: `{{ident .Database}}.{{ident .TableName}}` as `otel`.`otel_traces`, the rest as said.
TRACES_TABLE_SQL = (Path(__file__).parent / "traces_table.sql").read_text()

_KINDS = ["Unspecified", "Internal", "Server", "Client", "Producer", "Consumer"]
_STATUS = ["Unset", "Ok", "Error"]
_KIND_NAMES = {f"SPAN_KIND_{k.upper()}": i for i, k in enumerate(_KINDS)}
_STATUS_NAMES = {f"STATUS_CODE_{s.upper()}": i for i, s in enumerate(_STATUS)}


def go_float(value: float) -> str:
    """pcommon's float64AsString: Go's 'f' format with the fewest digits, 'e' below 1e-6 and from 1e21."""
    if math.isinf(value) or math.isnan(value):
        return f"json: unsupported value: {'NaN' if math.isnan(value) else ('+Inf' if value > 0 else '-Inf')}"
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # Python's shortest repr uses e-07 / e+21 the way Go's 'e', -1 does
        mantissa, _, exponent = text.partition("e")
        sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
        return f"{mantissa}e{sign}{digits.zfill(2) if sign == '+' else digits}"
    text = format(Decimal(repr(value)).normalize(), "f")
    return "0" if text in ("-0", "0") and value == 0 and math.copysign(1, value) > 0 else text


def _go_json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or ch in "<>&" or code in (0x2028, 0x2029):
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(raw: Any) -> str:
    """encoding/json.Marshal of a pcommon AsRaw() value."""
    if raw is None:
        return "null"
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        return go_float(raw)
    if isinstance(raw, str):
        return _go_json_string(raw)
    if isinstance(raw, bytes):
        return _go_json_string(base64.b64encode(raw).decode())
    if isinstance(raw, list):
        return "[" + ",".join(go_json(v) for v in raw) + "]"
    return "{" + ",".join(f"{_go_json_string(k)}:{go_json(raw[k])}" for k in sorted(raw)) + "}"


def raw_value(value: dict[str, Any]) -> Any:
    """pcommon.Value.AsRaw() of an OTLP/JSON AnyValue."""
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    if "arrayValue" in value:
        return [raw_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: raw_value(kv.get("value", {})) for kv in value["kvlistValue"].get("values", [])}
    return None


def as_string(value: dict[str, Any]) -> str:
    """pcommon.Value.AsString() of an OTLP/JSON AnyValue."""
    raw = raw_value(value)
    if raw is None:
        return ""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, float):
        return go_float(raw)
    if isinstance(raw, bytes):
        return base64.b64encode(raw).decode()
    if isinstance(raw, dict | list):
        return go_json(raw)
    return str(raw)


def attributes_to_map(attributes: Iterable[dict[str, Any]]) -> dict[str, str]:
    return {kv["key"]: as_string(kv.get("value", {})) for kv in attributes}


def _time(ns: int) -> str:
    seconds, fraction = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:09d}Z"


def _enum(value: Any, names: dict[str, int]) -> int:
    return names.get(value, 0) if isinstance(value, str) else int(value or 0)


def rows_of_request(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows `pushTraceData` inserts for one OTLP/JSON ExportTraceServiceRequest."""
    rows = []
    for resource_spans in request.get("resourceSpans", []):
        resource = resource_spans.get("resource", {}).get("attributes", [])
        resource_map = attributes_to_map(resource)
        service = next((as_string(kv.get("value", {})) for kv in resource if kv["key"] == "service.name"), "")
        for scope_spans in resource_spans.get("scopeSpans", []):
            scope = scope_spans.get("scope", {})
            for span in scope_spans.get("spans", []):
                start, end = int(span.get("startTimeUnixNano", 0)), int(span.get("endTimeUnixNano", 0))
                status = span.get("status", {})
                events = span.get("events", [])
                links = span.get("links", [])
                rows.append(
                    {
                        "Timestamp": _time(start),
                        "TraceId": span.get("traceId", "").lower(),
                        "SpanId": span.get("spanId", "").lower(),
                        "ParentSpanId": span.get("parentSpanId", "").lower(),
                        "TraceState": span.get("traceState", ""),
                        "SpanName": span.get("name", ""),
                        "SpanKind": _KINDS[_enum(span.get("kind"), _KIND_NAMES)],
                        "ServiceName": service,
                        "ResourceAttributes": resource_map,
                        "ScopeName": scope.get("name", ""),
                        "ScopeVersion": scope.get("version", ""),
                        "SpanAttributes": attributes_to_map(span.get("attributes", [])),
                        "Duration": end - start,
                        "StatusCode": _STATUS[_enum(status.get("code"), _STATUS_NAMES)],
                        "StatusMessage": status.get("message", ""),
                        "Events.Timestamp": [_time(int(e.get("timeUnixNano", 0))) for e in events],
                        "Events.Name": [e.get("name", "") for e in events],
                        "Events.Attributes": [attributes_to_map(e.get("attributes", [])) for e in events],
                        "Links.TraceId": [k.get("traceId", "").lower() for k in links],
                        "Links.SpanId": [k.get("spanId", "").lower() for k in links],
                        "Links.TraceState": [k.get("traceState", "") for k in links],
                        "Links.Attributes": [attributes_to_map(k.get("attributes", [])) for k in links],
                    }
                )
    return rows
