"""Runs a previous server completed but did not score, and conversations it did not judge: found at
startup, scored by the online scorer.

Completion commits before online scoring stores the verdict, so a SIGKILL in between (or a server that
ran without --specs) leaves complete runs without verdicts. The writer never completes them again, so
nothing else would bring them to the scorer.

Where to look is bounded: runs completed by earlier processes within `WINDOW_S` of the newest such
completion. Online scoring follows completion order, so the runs a crash left unscored are the last
ones completed before it (the scoring backlog at that moment, normally under a second); the window
leaves room for a backlog of many minutes without ever reading a long history. Runs completed by this
process are left out: they reach the scorer through the writer.

What is missing is a (run, spec) pair without a verdict for the run's current version. The search is
two queries: the newest completion, then one set-based query over the window's rows only (completion
and scoring times grow with insertion, so DuckDB skips older row groups); when nothing is missing
that is the whole cost. A spec's `select` is not SQL, so a flagged run is checked against it in
Python before any evidence is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from scoring import Run
from scoring.evidence.runs import complete_runs

if TYPE_CHECKING:
    from scoring import Spec

WINDOW_S = 15 * 60

_NEWEST = "SELECT epoch_us(max(completed_at)) FROM run_traces WHERE completed_at < make_timestamp(?)"

# Bounds are parameters, not a subquery: constants let DuckDB skip row groups outside them.
_MISSING = """
WITH recent AS (
    SELECT run_id, sum(version)::BIGINT AS version
    FROM run_traces
    WHERE completed_at >= make_timestamp(?) AND completed_at < make_timestamp(?)
    GROUP BY run_id
    HAVING bool_and(status = 'complete')
)
SELECT r.run_id
FROM recent r CROSS JOIN (SELECT unnest(?::VARCHAR[]) AS spec) s
WHERE NOT EXISTS (
    SELECT 1 FROM verdicts v
    WHERE v.run_id = r.run_id AND v.spec = s.spec AND v.run_version = r.version
      -- a verdict is stored after its run completed, so only the window's verdicts can match
      AND v.scored_at >= make_timestamp(?)
)
GROUP BY r.run_id
"""

_STORED = """
SELECT v.run_id, v.spec, v.run_version
FROM (SELECT unnest(?::VARCHAR[]) AS wanted) w JOIN verdicts v ON v.run_id = w.wanted
"""


@dataclass(frozen=True, slots=True)
class Unscored:
    """A complete run, with its traces and ingest range (for load_evidence), and the specs it lacks."""

    run: tuple[Run, list[str], int, int]
    specs: tuple[str, ...]


def unscored_runs(
    connection: duckdb.DuckDBPyConnection, specs: list[Spec], started_us: int
) -> list[Unscored]:
    """Complete runs, completed before `started_us` (Unix µs) within the window, lacking a verdict
    for their current version from one of these specs that selects them; in start order. Specs with
    `turns` judge conversations, never a run: they leave no run unscored."""
    specs = [s for s in specs if s.turns is None]
    if not specs:
        return []
    newest = connection.execute(_NEWEST, [started_us]).fetchone()
    if newest is None or newest[0] is None:
        return []  # nothing was ever completed before this start
    floor_us = int(newest[0]) - WINDOW_S * 1_000_000
    names = [s.name for s in specs]
    rows = connection.execute(_MISSING, [floor_us, started_us, names, floor_us]).fetchall()
    flagged = [row[0] for row in rows]
    if not flagged:
        return []
    # The query summed versions over the window's traces only; a run with older traces has a higher
    # version, so the stored verdicts are compared again with the run's whole version.
    runs = complete_runs(connection, run_ids=flagged)
    stored = {(r, s, int(v)) for r, s, v in connection.execute(_STORED, [flagged]).fetchall()}
    from scoring import SpecSet  # there are specs: their models are loaded already (issue 33)

    found = []
    indexed = SpecSet(specs)
    for entry in runs:
        run = entry[0]
        wanted = tuple(
            s.name for s in indexed.selecting(run) if (run.run_id, s.name, run.version) not in stored
        )
        if wanted:
            found.append(Unscored(entry, wanted))
    return found


# Conversations with a turn completed in the window and no verdict, from one of the specs with `turns`,
# stored since their latest turn completed.
_UNJUDGED_CONVERSATIONS = """
WITH recent AS (
    SELECT t.conversation_id, max(r.completed_at) AS last_completed
    FROM run_traces r JOIN run_turns t USING (run_id, trace_id)
    WHERE r.completed_at >= make_timestamp(?) AND r.completed_at < make_timestamp(?)
      AND t.conversation_id IS NOT NULL
    GROUP BY t.conversation_id
)
SELECT c.conversation_id
FROM recent c CROSS JOIN (SELECT unnest(?::VARCHAR[]) AS spec) s
WHERE NOT EXISTS (
    SELECT 1 FROM verdicts v
    WHERE v.conversation_id = c.conversation_id AND v.spec = s.spec AND v.scored_at >= c.last_completed
)
GROUP BY c.conversation_id
ORDER BY c.conversation_id
"""


def unjudged_conversations(
    connection: duckdb.DuckDBPyConnection, specs: list[Spec], started_us: int
) -> list[str]:
    """Conversations a previous server completed a turn of (within the window) but did not judge since,
    by a spec with `turns`: a SIGKILL while waiting out a conversation's grace period, or a server that
    ran without such specs. Whether a spec selects one is decided when it is judged."""
    names = [s.name for s in specs if s.turns is not None]
    if not names:
        return []
    newest = connection.execute(_NEWEST, [started_us]).fetchall()
    if not newest or newest[0][0] is None:
        return []
    floor_us = int(newest[0][0]) - WINDOW_S * 1_000_000
    rows = connection.execute(_UNJUDGED_CONVERSATIONS, [floor_us, started_us, names]).fetchall()
    return [row[0] for row in rows]
