"""How many runs a DuckDB memory limit holds before its indexes leave no room for a checkpoint.

`python -m bench.index_memory [--memory-limit 122MiB]`. Runs go into `run_traces_p0`, and one execution
and one verdict each into `executions_p0` and `verdicts_p0`, of a file made by the server's own
`open_writer`, 5,000 a commit, with a checkpoint every 50,000, until a commit fails; the figures are
DuckDB's ART_INDEX memory along the way and the run count at the failure. Then the file is opened
again, as a restarted server would, and one more batch and a checkpoint are tried: whether a restart
gets past it. The thirteenth session's `make bench` lost its 512 MB step to such a failure during a
checkpoint; since schema 7 nothing that grows with the history is indexed (bench/README.md).
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path

import duckdb

from collector.store.database import open_writer
from scoring import ensure_verdict_schema

_BATCH = 5_000
_CHECKPOINT_EVERY = 50_000


def store_runs(connection: duckdb.DuckDBPyConnection, count: int) -> None:
    """`count` runs of one execution and one verdict each, in one commit, as the writer and online
    scoring store them (also tests/collector/store/test_history_memory.py)."""
    ids = [uuid.uuid4().hex for _ in range(count)]
    connection.begin()
    connection.execute(
        "INSERT INTO run_traces_p0 (run_id, trace_id, root_span_id, status, version, n_spans, n_executions, "
        "n_requests, completed_at, min_seq, max_seq) "
        "SELECT r, r, substr(r, 1, 16), 'complete', 1, 2, 1, 0, now(), 1, 1 FROM unnest(?::VARCHAR[]) u(r)",
        [ids],
    )
    connection.execute(
        "INSERT INTO executions_p0 (run_id, trace_id, span_id, tool_name, error, paused, from_history, "
        "convention, ingest_seq) SELECT r, r, substr(r, 17, 16), 'lookup', false, false, false, 'genai', 1 "
        "FROM unnest(?::VARCHAR[]) u(r)",
        [ids],
    )
    connection.execute(
        "INSERT INTO verdicts_p0 (run_id, trace_id, spec, spec_fingerprint, profile, label, run_version, "
        "schema_version, verdict) SELECT r, r, 'bench', 'f', 'default', 'pass', 1, 1, '{}' "
        "FROM unnest(?::VARCHAR[]) u(r)",
        [ids],
    )
    connection.commit()


def _index_mib(connection: duckdb.DuckDBPyConnection) -> float:
    rows = connection.execute(
        "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'ART_INDEX'"
    ).fetchall()
    return float(rows[0][0]) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--memory-limit", default="48MiB", help="DuckDB's memory limit (a 512 MB budget gives it ~122 MiB)"
    )
    parser.add_argument("--max-runs", type=int, default=2_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index_memory.duckdb"
        connection = open_writer(path, memory_limit=args.memory_limit, threads=1)
        ensure_verdict_schema(connection)
        runs, failure = 0, None
        while runs < args.max_runs:
            try:
                store_runs(connection, _BATCH)
                runs += _BATCH
                if runs % _CHECKPOINT_EVERY == 0:
                    connection.execute("CHECKPOINT")
                    print(f"{runs:>9,} runs: ART_INDEX {_index_mib(connection):6.1f} MiB", flush=True)
            except duckdb.Error as exc:
                failure = str(exc).splitlines()[0]
                break
        connection.close()
        if failure is None:
            print(f"held {runs:,} runs under {args.memory_limit}")
            return
        print(f"under {args.memory_limit}: the commit after {runs:,} runs failed: {failure}")
        try:
            connection = open_writer(path, memory_limit=args.memory_limit, threads=1)
            store_runs(connection, _BATCH)
            print("opened again: one more batch committed", flush=True)
            connection.execute("CHECKPOINT")
            print("opened again: and a checkpoint succeeded")
        except duckdb.Error as exc:
            print(f"opened again: failed again: {str(exc).splitlines()[0]}")
        finally:
            connection.close()


if __name__ == "__main__":
    main()
