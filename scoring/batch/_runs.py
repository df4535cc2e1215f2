"""The runs a set-based scoring call judges: the complete runs `score_runs` would take, in a temporary
table of the connection that every spec's query reads (and `select` narrows, scoring/batch/_select.py).
"""

from __future__ import annotations

import uuid

import duckdb

from scoring.evidence.runs import RUN_ORDER, complete_runs_source


class Runs:
    """Numbered in scoring order when `ordered` (verdicts handed back must come in score_runs' order;
    verdicts only stored need no order, and the numbering is a sort of every run)."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        *,
        run_id: str | None = None,
        task_id: str | None = None,
        run_ids: list[str] | None = None,
        ordered: bool = True,
    ) -> None:
        self.connection = connection
        self.table = f"_tracescore_runs_{uuid.uuid4().hex}"
        self.every = run_id is None and task_id is None and run_ids is None
        source, params = complete_runs_source(connection, run_id=run_id, task_id=task_id, run_ids=run_ids)
        number = f"row_number() OVER (ORDER BY {RUN_ORDER})" if ordered else "0"
        connection.execute(
            f"CREATE TEMP TABLE {self.table} AS SELECT run_id, min(trace_id) AS trace_id, "
            "any_value(task_id) AS task_id, any_value(service_name) AS service_name, "
            "any_value(agent_name) AS agent_name, any_value(session_id) AS session_id, "
            "sum(version)::BIGINT AS version, any_value(attributes) AS attributes, "
            f"min(min_seq) AS min_seq, max(max_seq) AS max_seq, {number} AS ord {source}",
            params,
        )
        row = connection.execute(f"SELECT count(*) FROM {self.table}").fetchone()
        self.count = int(row[0]) if row else 0

    def close(self) -> None:
        self.connection.execute(f"DROP TABLE IF EXISTS {self.table}")

    def slice(self, low: int, high: int) -> tuple[str, str | None]:
        """Runs low+1..high (by `ord`), and a condition on execution and request rows (`{table}` their
        alias) that holds theirs: an ingest_seq range DuckDB prunes by row-group min/max, or None when
        the slice is every complete run (reading all rows then costs less than picking them)."""
        whole = low == 0 and high == self.count
        if whole and self.every:
            return self.table, None
        relation = (
            self.table if whole else f"(SELECT * FROM {self.table} WHERE ord > {low} AND ord <= {high})"
        )
        row = self.connection.execute(f"SELECT min(min_seq), max(max_seq) FROM {relation}").fetchone()
        if row is None or row[0] is None:
            return relation, "false"
        return relation, f"{{table}}.ingest_seq BETWEEN {int(row[0])} AND {int(row[1])}"
