"""Stored histories for the scoring benchmarks: tracescore databases of complete runs, written by SQL
straight into the collector's schema (three executions and one request a run, in completion order with
growing ingest_seq, as the writer stores them). Each table is two partitions (collector/store/schema.py,
PARTITIONED) and the writer turns to the other one at every checkpoint: runs go to them in alternating
blocks of `_BLOCK_RUNS`, as a minute of completions would, and scoring reads their union. Each insert
names the columns it fills: the others take their defaults, so a column added later breaks nothing.

`varied` adds what real histories hold, so that verdicts fail for every reason a spec can give:
errored and paused calls, member agents' calls, arguments that differ or are not JSON, slow calls.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from collector.store.database import open_writer
from collector.store.schema import partitions
from scoring import Spec
from scoring.evidence.run_keys import keys_of

# The spec both benchmarks judge: expected tools, an argument spec, strict mode and a latency bound.
SPEC = Spec.model_validate(
    {
        "name": "bench",
        "expected_tools": ["lookup", "quote"],
        "arguments": {"quote": {"region": "north"}},
        "allow_additional": False,
        "latency": {"max_ms": {"*": 1000}},
    }
)

_ARGUMENTS = """'{"region":"north","service":"priority","padding":"' || repeat('x', 120) || '"}'"""

# Per execution j of run i: (plain, varied) SQL for the columns that vary.
_COLUMNS = {
    "arguments": (
        _ARGUMENTS,
        f"""CASE WHEN i % 11 = 0 AND j = 1 THEN '{{"region": "south"}}'
            WHEN i % 19 = 0 AND j = 1 THEN NULL ELSE {_ARGUMENTS} END""",
    ),
    "arguments_raw": ("NULL", "CASE WHEN i % 19 = 0 AND j = 1 THEN 'region=north' END"),
    "error": ("false", "i % 10 = 3 AND j = 1"),
    "paused": ("false", "i % 17 = 5 AND j = 2"),
    "duration_ms": ("20.0", "CASE WHEN i % 13 = 0 AND j = 0 THEN 1500.25 ELSE 20.0 + (i % 50) / 10.0 END"),
    "agent_path": ("'agent'", "CASE WHEN i % 7 = 0 AND j = 2 THEN 'agent/member' ELSE 'agent' END"),
}


# About a minute of completions at the bench's rates: what one partition takes between checkpoints.
_BLOCK_RUNS = 25_000


def _insert(
    connection: duckdb.DuckDBPyConnection, table: str, select: str, params: list[object], order: str = ""
) -> None:
    """`select` (over `range(?) t(i)`, ending in its FROM clause) into the partitions by block of runs."""
    for number, partition in enumerate(partitions(table)):
        connection.execute(
            f"INSERT INTO {partition} {select} WHERE (i // {_BLOCK_RUNS}) % 2 = {number} {order}", params
        )


def build(path: Path, runs: int, *, varied: bool = False, tasks: int = 100) -> None:
    """`runs` complete runs of `tasks` tasks (run i is task `task-{i % tasks}`)."""
    column = {name: sql[1] if varied else sql[0] for name, sql in _COLUMNS.items()}
    connection = open_writer(path)
    # One trace per run, one group commit per 50 runs: ids are random like real trace ids.
    _insert(
        connection,
        "run_traces",
        """
        (run_id, trace_id, root_span_id, task_id, service_name, agent_name, session_id, start_time,
            end_time, n_spans, n_executions, n_requests, attributes, status, version, completed_at, min_seq,
            max_seq)
        SELECT md5('run' || i) AS run_id, md5('trace' || i) AS trace_id, substr(md5('root' || i), 1, 16),
               'task-' || (i % ?), 'bench', 'agent', NULL,
               make_timestamp_ns(1700000000000000000 + i * 1000000000),
               make_timestamp_ns(1700000000000000000 + i * 1000000000 + 500000000),
               5, 3, 1, '{}', 'complete', 1, now()::TIMESTAMP, i // 50, i // 50
        FROM range(?) t(i)
        """,
        [tasks, runs],
    )
    for keys, traces in zip(partitions("run_keys"), partitions("run_traces"), strict=True):  # as the writer
        connection.execute(f"INSERT INTO {keys} {keys_of(traces)}")
    _insert(
        connection,
        "executions",
        f"""
        (run_id, task_id, trace_id, span_id, parent_span_id, tool_name, call_id, call_id_source,
            arguments, arguments_raw, arguments_error, arguments_source, result, error, error_type,
            error_message, paused, pause_reason, from_history, start_time, end_time, duration_ms,
            agent_path, agent_name, session_id, service_name, convention, scope_name, ingest_seq, kind)
        SELECT md5('run' || i), 'task-' || (i % ?), md5('trace' || i),
               substr(md5('span' || i || '-' || j), 1, 16),
               substr(md5('root' || i), 1, 16), ['lookup', 'quote', 'notify'][j + 1], NULL, NULL,
               {column["arguments"]}, {column["arguments_raw"]}, NULL,
               CASE WHEN ({column["arguments"]}) IS NOT NULL THEN 'span' END,
               '"ok"', {column["error"]}, NULL, NULL, {column["paused"]}, NULL, false,
               make_timestamp_ns(1700000000000000000 + i * 1000000000 + j * 1000000),
               make_timestamp_ns(1700000000000000000 + i * 1000000000 + j * 1000000 + 20000000),
               {column["duration_ms"]}, {column["agent_path"]}, 'agent', NULL, 'bench', 'gen_ai', 'bench',
               i // 50, 'tool'
        FROM range(?) t(i), range(3) s(j)
        """,
        [tasks, runs],
        order="ORDER BY i, j",
    )
    _insert(
        connection,
        "tool_requests",
        """
        (run_id, task_id, trace_id, span_id, position, tool_name, call_id, arguments, arguments_raw,
            arguments_error, round, requested_at, agent_path, encoding, execution_span_id,
            execution_call_index, ingest_seq)
        SELECT md5('run' || i), 'task-' || (i % ?), md5('trace' || i), substr(md5('chat' || i), 1, 16), 0,
               'lookup', NULL, '{"region":"north"}', NULL, NULL, 1,
               make_timestamp_ns(1700000000000000000 + i * 1000000000), 'agent', 'gen_ai',
               substr(md5('span' || i || '-0'), 1, 16), 0, i // 50
        FROM range(?) t(i)
        """,
        [tasks, runs],
    )
    connection.execute("CHECKPOINT")
    connection.close()
