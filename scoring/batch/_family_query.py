"""A family's one query (scoring/batch/_family.py): its verdicts fetched in (run, spec) order, or stored.

The verdict rows are those of the spec's query (scoring/batch/_sql.py) over the family's (run, spec)
rows, each named by its row; storing them replaces the same run version's verdicts of the same spec, as
a single spec's store does (scoring/batch/_store.py).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb

from scoring.batch import _store as storage
from scoring.batch._family import Family, families
from scoring.batch._sql import verdict_query
from scoring.batch._sql_literal import NotCompilable
from scoring.spec.specs import Spec

__all__ = ["VERDICT_COLUMNS", "families", "family_verdicts", "store_family"]

log = logging.getLogger("tracescore.scoring")

# What set-based scoring hands back of each verdict row (scoring/batch/score.py reads them in order).
VERDICT_COLUMNS = "ord, run_id, trace_id, task_id, spec, label, value, reason, verdict"


def _row_condition(
    connection: duckdb.DuckDBPyConnection, family: Family, runs: str, rows: str | None
) -> str | None:
    """The row condition of a family's query. `rows` None (the slice is every complete run) reads every
    execution unfiltered, the facts of runs no spec selects dropped by the join: cheaper than picking
    rows when the family selects most runs, as a thousand specs of a task each do; else the rows are
    narrowed to the family's runs."""
    if rows is not None:
        return rows
    row = connection.execute(f"SELECT count(*) FROM {runs}").fetchone()
    return None if row is not None and family.count * 2 >= int(row[0]) else "true"


def family_verdicts(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    members: list[int],
    runs: str,
    rows: str | None,
    from_runs: int,
    store_at: datetime | None,
) -> list[tuple[Any, ...]] | None:
    """The family's verdict rows (`VERDICT_COLUMNS`, then `spec_position`) over the runs its specs
    select, in (ord, spec) order, stored first when `store_at` is given; None when they select fewer
    than `from_runs` runs together (the Python judge is then the cheaper)."""
    family = Family(connection, runs, specs, members)
    try:
        if family.count < from_runs:
            return None
        condition = _row_condition(connection, family, runs, rows)
        query = verdict_query(specs[members[0]], family.table, condition, named_by_row=True)
        fetched = f"SELECT {VERDICT_COLUMNS}, spec_position FROM {{}} ORDER BY ord, spec_position"
        if store_at is None:
            return connection.execute(fetched.format(f"({query})")).fetchall()
        table = f"_tracescore_verdicts_{uuid.uuid4().hex}"
        connection.execute(f"CREATE TEMP TABLE {table} AS {query}")
        try:
            storage.insert(connection, None, family.table, table, store_at)
            return connection.execute(fetched.format(table)).fetchall()
        finally:
            connection.execute(f"DROP TABLE IF EXISTS {table}")
    finally:
        family.close()


def store_family(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    members: list[int],
    runs: str,
    rows: str | None,
    from_runs: int,
) -> int | None:
    """A family's verdicts stored by one query, how many; None when the Python judge is to take its
    specs (too few runs, or a query that failed)."""
    family = Family(connection, runs, specs, members)
    try:
        if family.count < from_runs:
            return None
        condition = _row_condition(connection, family, runs, rows)
        query = verdict_query(specs[members[0]], family.table, condition, named_by_row=True)
        return storage.insert(connection, None, family.table, f"({query})", storage.now())
    except (duckdb.Error, NotCompilable) as exc:
        log.warning("specs %s are judged in Python: %s", ", ".join(specs[i].name for i in members), exc)
        return None
    finally:
        family.close()
