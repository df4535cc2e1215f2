"""Which traces of `otel_traces` to score, chosen inside ClickHouse, and the SQL that reads them.

A trace is chosen when one of its spans could be an agent, a tool execution or a model's request for a
tool in one of the conventions recognition reads (docs/conventions.md): it carries one of the keys
below, or one of the span names. `hasAny(mapKeys(SpanAttributes), …)` and `SpanName IN …` are what the
exporter's bloom-filter index on `mapKeys(SpanAttributes)` and its ordering key serve, so ClickHouse
skips granules of plain HTTP and database spans without reading them. The test that holds this list to
recognition (tests/collector/clickhouse/test_selection.py) checks every span of every convention's
traces that recognition reads something from is matched.

Traces are taken whole (every span, whatever its own time) when their first span starts in
[since, until), in order of that start, and split across scorers by `cityHash64(TraceId) % N`. A trace
is assumed to last less than a day (`TRACE_HORIZON_NS`): that bounds the partitions read.
"""

from __future__ import annotations

from dataclasses import dataclass

from collector.clickhouse.connection import identifier, quote
from collector.recognise.declared import active

# Keys that mark a span recognition reads: execution discriminators (collector/recognise/conventions.py),
# agent and run keys (collector/recognise/_nodes.py), and request carriers (collector/recognise/requests.py).
AGENT_TOOL_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.output.messages",
    "gen_ai.agent.name",
    "gen_ai.workflow.name",
    "openinference.span.kind",
    "traceloop.span.kind",
    "mcp.method.name",
    "ai.operationId",
    "haystack.tool.name",
    "haystack.agent.max_steps",
    "haystack.agent.step.llm.output",
    "haystack.component.output",
    "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.invocation_id",
    "agno.run.id",
    "tracescore.run.id",
    "tracescore.task.id",
    "tracescore.tool.paused",
    "langfuse.observation.type",
    "mlflow.spanType",
)
# A run marked as one by its sender (on a span, above, or on the resource) is chosen even when none of its
# spans is in a convention tracescore reads: its verdict then says so, an `error` naming the scopes
# (scoring/evidence/reading.py), where leaving it out would hide it.
RUN_MARK_KEYS = ("tracescore.run.id", "tracescore.task.id")
# `invocation`: Google ADK's schema v1 workflow span, an agent of its own (named after its root agent).
AGENT_TOOL_SPAN_NAMES = (
    "running tool",
    "agent run",
    "haystack.agent.run",
    "haystack.agent.step.llm",
    "invocation",
    # Pydantic Logfire's tool call and agent of the OpenAI Agents SDK (a span's name is its template).
    "Function: {name}",
    "Agent run: {name!r}",
)
# Flattened message encodings: the keys carry an index (`llm.output_messages.0.message.tool_calls…`).
AGENT_TOOL_KEY_PREFIXES = ("llm.output_messages.", "gen_ai.completion.")


@dataclass(frozen=True, slots=True)
class Shard:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/N` with 0 <= I < N."""
        index, slash, count = text.partition("/")
        try:
            shard = cls(int(index), int(count))
        except ValueError:
            shard = None
        if not slash or shard is None or shard.count < 1 or not 0 <= shard.index < shard.count:
            raise ValueError(f"--shard {text!r}: expected I/N with 0 <= I < N, e.g. 0/4")
        return shard


@dataclass(frozen=True, slots=True)
class Selection:
    database: str = "otel"
    table: str = "otel_traces"
    since_ns: int | None = None
    until_ns: int | None = None
    shard: Shard | None = None

    @property
    def source(self) -> str:
        return f"{identifier(self.database)}.{identifier(self.table)}"


def candidate_predicate() -> str:
    """True for a span recognition could read an agent, execution or request from (a user's declared
    conventions in force included: an attribute key, span name or span-name pattern each needs)."""
    declared = active.current()
    extra_keys = declared.attribute_keys() if declared is not None else ()
    extra_names = declared.span_names() if declared is not None else ()
    patterns = declared.span_name_patterns() if declared is not None else ()
    keys = ", ".join(quote(k) for k in (*AGENT_TOOL_KEYS, *extra_keys))
    names = ", ".join(quote(n) for n in (*AGENT_TOOL_SPAN_NAMES, *extra_names))
    prefixes = " OR ".join(f"startsWith(k, {quote(p)})" for p in AGENT_TOOL_KEY_PREFIXES)
    # ClickHouse's match() is RE2 too, searching: anchored here, as recognition matches the whole name.
    matched = "".join(f" OR match(SpanName, {quote(f'^(?:{p})$')})" for p in patterns)
    marks = ", ".join(quote(k) for k in RUN_MARK_KEYS)
    return (
        f"(hasAny(mapKeys(SpanAttributes), [{keys}]) OR SpanName IN ({names}) "
        f"OR startsWith(SpanName, 'execute_tool') OR arrayExists(k -> {prefixes}, mapKeys(SpanAttributes)) "
        f"OR hasAny(mapKeys(ResourceAttributes), [{marks}]){matched})"
    )


# How long a trace may last, for pruning partitions: spans are read from this long before `since` (so a
# trace that began before the window is seen to have, and left out) to this long after `until`.
TRACE_HORIZON_NS = 24 * 3600 * 1_000_000_000


def _time_and_shard(selection: Selection) -> list[str]:
    where = []
    if selection.since_ns is not None:
        low = selection.since_ns - TRACE_HORIZON_NS
        where.append(f"Timestamp >= fromUnixTimestamp64Nano(toInt64({low}))")
    if selection.until_ns is not None:
        high = selection.until_ns + TRACE_HORIZON_NS
        where.append(f"Timestamp < fromUnixTimestamp64Nano(toInt64({high}))")
    if selection.shard is not None and selection.shard.count > 1:
        where.append(f"cityHash64(TraceId) % {selection.shard.count} = {selection.shard.index}")
    return where


def traces_sql(
    selection: Selection,
    *,
    after: tuple[int, str] | None = None,
    settled_before_ns: int | None = None,
    limit: int,
) -> str:
    """The next `limit` chosen traces as (TraceId, first span start ns, last span end ns), in order of
    (first start, TraceId), strictly after `after`; with `settled_before_ns`, only traces whose every
    span ended before it (--follow takes a trace once it has gone quiet)."""
    where = ["TraceId != ''", *_time_and_shard(selection)]
    having = [f"countIf({candidate_predicate()}) > 0"]
    if selection.since_ns is not None:
        having.append(f"first_ns >= {selection.since_ns}")
    if selection.until_ns is not None:
        having.append(f"first_ns < {selection.until_ns}")
    if after is not None:
        having.append(f"(first_ns, TraceId) > ({after[0]}, {quote(after[1])})")
    if settled_before_ns is not None:
        having.append(f"last_ns < {settled_before_ns}")
    return (
        "SELECT TraceId, min(toUnixTimestamp64Nano(Timestamp)) AS first_ns, "
        "max(toUnixTimestamp64Nano(Timestamp) + toInt64(Duration)) AS last_ns "
        f"FROM {selection.source} WHERE {' AND '.join(where)} GROUP BY TraceId "
        f"HAVING {' AND '.join(having)} ORDER BY first_ns, TraceId LIMIT {int(limit)}"
    )


def first_unsettled_sql(selection: Selection, after: tuple[int, str] | None, settled_before_ns: int) -> str:
    """The earliest chosen trace after `after` that has not gone quiet yet: --follow stops before it, so
    a long run is never skipped by the watermark."""
    where = ["TraceId != ''", *_time_and_shard(selection)]
    having = [f"countIf({candidate_predicate()}) > 0", f"last_ns >= {settled_before_ns}"]
    if selection.since_ns is not None:
        having.append(f"first_ns >= {selection.since_ns}")
    if after is not None:
        having.append(f"(first_ns, TraceId) > ({after[0]}, {quote(after[1])})")
    if selection.until_ns is not None:
        having.append(f"first_ns < {selection.until_ns}")
    return (
        "SELECT min(first_ns) FROM (SELECT TraceId, min(toUnixTimestamp64Nano(Timestamp)) AS first_ns, "
        "max(toUnixTimestamp64Nano(Timestamp) + toInt64(Duration)) AS last_ns "
        f"FROM {selection.source} WHERE {' AND '.join(where)} GROUP BY TraceId "
        f"HAVING {' AND '.join(having)})"
    )


SPAN_COLUMNS = (
    "TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ResourceAttributes, ScopeName, "
    "ScopeVersion, SpanAttributes, toUnixTimestamp64Nano(Timestamp), Duration, StatusCode, StatusMessage, "
    "arrayMap(t -> toUnixTimestamp64Nano(t), `Events.Timestamp`), `Events.Name`, `Events.Attributes`, "
    "`Links.TraceId`, `Links.SpanId`, `Links.TraceState`, `Links.Attributes`"
)


def spans_sql(selection: Selection, trace_ids: list[str], first_ns: int) -> str:
    """Every span of these traces (none starts before the earliest trace's first span, which lets
    ClickHouse skip older partitions)."""
    ids = ", ".join(quote(t) for t in trace_ids)
    return (
        f"SELECT {SPAN_COLUMNS} FROM {selection.source} "
        f"WHERE Timestamp >= fromUnixTimestamp64Nano(toInt64({first_ns})) AND TraceId IN ({ids})"
    )
