"""Recognition both ways on the same spans: the Python adapters (the oracle) against the SQL adapters
of collector/recognise/in_sql.py with the Python ones for the spans the SQL leaves them."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from collector.model.domain import Span
from collector.recognise.conventions import recognise_execution
from collector.recognise.in_sql import (
    EXECUTION_FIELDS,
    EXECUTIONS,
    REQUEST_FIELDS,
    REQUESTS,
    execution_fields,
    recognise_in_sql,
    request_fields,
)
from collector.recognise.requests import extract_requests
from collector.store.rows import spans_table

_JSON_FIELDS = ("arguments", "result")
Key = tuple[str, str]


def _comparable(fields: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    """A row with its JSON text columns read as JSON: the two sides may space or order the text of one
    value differently (DuckDB writes JSON its own way); a text that is not JSON stays text, as the
    executions table stores it."""
    values = dict(zip(fields, row, strict=True))
    for name in _JSON_FIELDS:
        if isinstance(values.get(name), str):
            with contextlib.suppress(ValueError, RecursionError):
                values[name] = json.loads(values[name])
    return values


@dataclass
class Readings:
    executions: dict[Key, dict[str, Any]] = field(default_factory=dict)
    requests: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)
    # How many spans' executions and requests the SQL read itself, by convention / encoding.
    in_sql: Counter[str] = field(default_factory=Counter)


def python_readings(spans: Sequence[Span]) -> Readings:
    readings = Readings()
    for span in spans:
        _python(span, readings, {EXECUTIONS, REQUESTS})
    return readings


def _python(span: Span, readings: Readings, parts: set[str]) -> None:
    if EXECUTIONS in parts:
        execution = recognise_execution(span)
        if execution is not None:
            readings.executions[(span.trace_id, span.span_id)] = _comparable(
                EXECUTION_FIELDS, execution_fields(execution)
            )
    if REQUESTS in parts:
        for request in extract_requests(span):
            readings.requests[(span.trace_id, span.span_id, request.position)] = _comparable(
                REQUEST_FIELDS, request_fields(request)
            )


def sql_readings(spans: Sequence[Span], connection: duckdb.DuckDBPyConnection, relation: str) -> Readings:
    """The SQL's reading of `relation` (rows of exactly these spans), Python's for what it leaves."""
    recognition = recognise_in_sql(connection, relation)
    readings = Readings()
    for row in recognition.executions:
        values = _comparable(EXECUTION_FIELDS, row)
        readings.executions[(values["trace_id"], values["span_id"])] = values
        readings.in_sql[f"execution {values['convention']}"] += 1
    for row in recognition.requests:
        values = _comparable(REQUEST_FIELDS, row)
        readings.requests[(values["trace_id"], values["span_id"], values["position"])] = values
        readings.in_sql[f"request {values['encoding']}"] += 1
    by_key = {(s.trace_id, s.span_id): s for s in spans}
    for key, parts in recognition.to_python.items():
        _python(by_key[key], readings, parts)
    return readings


def batch_readings(spans: Sequence[Span]) -> Readings:
    """The SQL's reading of these spans as the writer would hold them: their Arrow rows."""
    connection = duckdb.connect(config={"threads": 1})
    try:
        rows: pa.Table = spans_table(spans, 1, 0)
        connection.register("batch", rows)
        return sql_readings(spans, connection, "batch")
    finally:
        connection.close()


def differences(expected: Readings, actual: Readings) -> list[str]:
    """Every execution or request the two readings do not hold alike, one line each."""
    found = []
    for key in sorted(set(expected.executions) | set(actual.executions)):
        python, sql = expected.executions.get(key), actual.executions.get(key)
        if python != sql:
            found.append(f"execution {key}: python {python} != sql {sql}")
    for request in sorted(set(expected.requests) | set(actual.requests)):
        python, sql = expected.requests.get(request), actual.requests.get(request)
        if python != sql:
            found.append(f"request {request}: python {python} != sql {sql}")
    return found
