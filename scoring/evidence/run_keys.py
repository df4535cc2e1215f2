"""Where runs' and traces' rows are in `run_traces`, found without an index.

No table that grows with the history has a DuckDB index (collector/store/schema.py, KEYLESS): DuckDB
holds one in its memory whole, and past the budget's share a checkpoint invalidated the file. An id is
found by reading a column instead, and `run_keys` makes that column small: for each `run_traces` row,
md5's low 64 bits of its run id and of its trace id, and its `max_seq`. Reading those 8-byte keys costs
~1.5 ms a million runs where `run_traces`' 32-character ids cost ~20; the `max_seq` range they give
lets DuckDB skip every row group of `run_traces` outside it (rows are appended in completion order).

The writer writes and deletes a `run_keys` row with its `run_traces` row. Where the two tables do not
hold as many rows (rows that SQL wrote into `run_traces` itself, or a file read without upgrade, which
has no `run_keys`), or no key matches, there is no range, and the caller reads `run_traces` whole:
slower, never wrong. A key two ids share only widens the range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import duckdb

# md5's low 64 bits: the same in every DuckDB version (`hash` is not promised to be). `{}` is the id's
# SQL expression.
RUN_KEY = "md5_number_lower({})"

SeqRange = tuple[int, int]


def keys_of(source: str) -> str:
    """The `run_keys` rows (run_key, trace_key, max_seq) of the run_traces rows in `source`, as a SELECT:
    the writer's, the migration's and the benchmarks' one definition of a key."""
    return f"SELECT {RUN_KEY.format('run_id')}, {RUN_KEY.format('trace_id')}, max_seq FROM {source}"


# Counted partition by partition: DuckDB counts a table's rows from its row groups (~0.4 ms a million),
# a view's union by reading them (~18-30 ms).
_KEYS = ("run_keys_p0", "run_keys_p1")
_RUNS = ("run_traces_p0", "run_traces_p1")
_COUNT = "((SELECT count(*) FROM {0}) + (SELECT count(*) FROM {1}))"


def seq_range(
    connection: duckdb.DuckDBPyConnection, ids: Sequence[str], column: Literal["run_key", "trace_key"]
) -> SeqRange | None:
    """The least and greatest `max_seq` of the `run_traces` rows of these run ids (`run_key`) or trace
    ids (`trace_key`), or None when `run_keys` cannot say (see above)."""
    if not ids:
        return None
    ((present,),) = connection.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' "
        f"AND table_name IN ({', '.join(repr(p) for p in (*_KEYS, *_RUNS))})"
    ).fetchall()
    if present < len(_KEYS) + len(_RUNS):
        return None
    ((whole, (low, high)),) = connection.execute(
        f"SELECT {_COUNT.format(*_KEYS)} = {_COUNT.format(*_RUNS)}, "
        f"(SELECT [min(max_seq), max(max_seq)] FROM run_keys WHERE {column} IN "
        f"(SELECT {RUN_KEY.format('unnest(?::VARCHAR[])')}))",
        [list(ids)],
    ).fetchall()
    if not whole or low is None:
        return None
    return int(low), int(high)


def within(seqs: SeqRange | None, column: str = "max_seq") -> tuple[str, list[int]]:
    """An SQL condition (with its parameters) that keeps `run_traces` rows in `seqs`; true without one."""
    if seqs is None:
        return "true", []
    return f"{column} BETWEEN ? AND ?", [seqs[0], seqs[1]]
