"""Tool definitions captured in a run's traces, for `schema: from_trace`.

Read from the stored raw spans (the `spans` table), never from OTLP, and only when a spec asks for
them: the first call loads the definitions of every run of the batch in one query, the rest are free.
Two encodings (../shared/reference/tool-span-conventions.md):

- OTel GenAI `gen_ai.tool.definitions`: a JSON array of definitions;
- OpenInference `llm.tools.<i>.tool.json_schema`: one definition per index, as JSON text.

A definition may be the semconv shape `{name, parameters}`, OpenAI's `{type: function, function:
{name, parameters}}`, Anthropic's `{name, input_schema}`, MCP's `{name, inputSchema}` or pydantic-ai's
`{name, parameters_json_schema}`; `parameters` may itself be JSON text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb

GEN_AI_KEY = "gen_ai.tool.definitions"
_OPENINFERENCE = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")
_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema", "parameters_json_schema", "json_schema")


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    tool: str
    schema: Any  # the JSON Schema of the tool's arguments, as captured (validated only when used)
    span_id: str
    source: str  # the attribute it came from


DefinitionSource = Callable[[], Mapping[str, ToolDefinition]]


def no_definitions() -> Mapping[str, ToolDefinition]:
    return {}


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    return value


def _definition(item: Any) -> tuple[str, Any] | None:
    """(tool name, argument schema) of one definition in any of the shapes above."""
    item = _json(item)
    if not isinstance(item, dict):
        return None
    function = _json(item.get("function"))
    if isinstance(function, dict) and "name" in function:
        item = function
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return None
    for key in _SCHEMA_KEYS:
        if key in item:
            return name, _json(item[key])
    return None


def definitions_in(attributes: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """(tool, schema, source attribute) for every definition on one span, in order."""
    found: list[tuple[str, Any, str]] = []
    listed = _json(attributes.get(GEN_AI_KEY))
    for item in listed if isinstance(listed, list) else []:
        parsed = _definition(item)
        if parsed:
            found.append((*parsed, GEN_AI_KEY))
    indexed = sorted(
        (int(m.group(1)), key)
        for key in attributes
        if key.startswith("llm.tools.") and (m := _OPENINFERENCE.match(key))
    )
    for _, key in indexed:
        parsed = _definition(attributes[key])
        if parsed:
            found.append((*parsed, "llm.tools.*.tool.json_schema"))
    return found


class DefinitionLoader:
    """Definitions for the runs of one evidence batch, loaded on first use (a spec asked for them)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, runs: Mapping[str, tuple[list[str], int, int]]):
        self._connection = connection
        self._runs = runs  # run id → (trace ids, lowest ingest_seq, highest ingest_seq)
        self._by_run: dict[str, dict[str, ToolDefinition]] | None = None

    def for_run(self, run_id: str) -> Mapping[str, ToolDefinition]:
        if self._by_run is None:
            self._by_run = self._load()
        return self._by_run.get(run_id, {})

    def source(self, run_id: str) -> DefinitionSource:
        return lambda: self.for_run(run_id)

    def _load(self) -> dict[str, dict[str, ToolDefinition]]:
        by_run: dict[str, dict[str, ToolDefinition]] = {run_id: {} for run_id in self._runs}
        if not self._runs:
            return by_run
        trace_ids = sorted({t for traces, _, _ in self._runs.values() for t in traces})
        low = min(lo for _, lo, _ in self._runs.values())
        high = max(hi for _, _, hi in self._runs.values())
        # The text filter keeps the JSON parsing to the few spans that carry definitions.
        rows = self._connection.execute(
            "SELECT trace_id, span_id, ingest_seq, attributes::VARCHAR FROM spans "
            "WHERE ingest_seq BETWEEN ? AND ? AND trace_id IN (SELECT unnest(?::VARCHAR[])) "
            "AND (contains(attributes::VARCHAR, ?) OR contains(attributes::VARCHAR, ?)) "
            "ORDER BY start_time, span_id",
            [low, high, trace_ids, f'"{GEN_AI_KEY}"', '"llm.tools.'],
        ).fetchall()
        runs_of_trace: dict[str, list[str]] = {}
        for run_id, (traces, _, _) in self._runs.items():
            for trace in traces:
                runs_of_trace.setdefault(trace, []).append(run_id)
        for trace_id, span_id, seq, text in rows:
            attributes = _json(text)
            if not isinstance(attributes, dict):
                continue
            definitions = definitions_in(attributes)
            for run_id in runs_of_trace.get(trace_id, []):
                _, lo, hi = self._runs[run_id]
                if lo <= seq <= hi:
                    for tool, schema, source in definitions:  # the earliest definition of a tool wins
                        by_run[run_id].setdefault(tool, ToolDefinition(tool, schema, span_id, source))
        return by_run
