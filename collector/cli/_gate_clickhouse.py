"""Why `score`/`report --clickhouse` scored nothing: no chosen trace in the window, or the first batch
of chosen traces loaded into a scratch store exactly as scoring loads them, then asked the questions a
database file is asked (collector/cli/_unscored.py)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from collector.cli._unscored import Query, Scope, Where, explain
from collector.clickhouse.connection import connect
from collector.clickhouse.scorer import Scratch, chosen_traces, load_spans, read_spans, require_table
from collector.clickhouse.selection import Selection
from scoring import Spec


def clickhouse_reason(
    args: argparse.Namespace, specs: Sequence[Spec], chosen: Selection, *, task: str | None = None
) -> str:
    connection = connect(args.clickhouse)
    try:
        require_table(connection, chosen)
        batch = args.batch_traces
        pages = chosen_traces(connection, chosen, batch_traces=batch, page_traces=batch)
        first = next(iter(pages), [])
        if not first:
            bounded = " between --since and --until" if args.since or args.until else ""
            return (
                f"no runs in the window: {chosen.database}.{chosen.table} at {connection.description} "
                f"holds no agent or tool trace{bounded}"
            )
        scratch = Scratch()
        try:
            load_spans(scratch.connection, read_spans(connection, chosen, first))
            query: Query = lambda sql: scratch.connection.execute(sql).fetchall()  # noqa: E731
            # ClickHouse chose the window's traces (--since/--until by their first span): not again here.
            asked = Scope(task=task, where=tuple(getattr(args, "where", None) or ()))
            found = explain(query, specs, asked, Where(True))
        finally:
            scratch.close()
        return f"{found} (read from the first {len(first)} trace(s) of the window)"
    finally:
        connection.close()
