"""Why `score` or `report` scored nothing, in one line a person can act on (issue 28).

Read from the stored tables through `Query` (a function from SQL text to rows), so the very same
questions are asked of a database file, of a running server (its read-only `/api/v1/sql`) and of a
scratch store loaded from ClickHouse. The answers, from the most basic up: nothing was received;
traces were received but no run of them is complete yet (how long ago the last span came, and what to
do); complete runs exist but `--run`/`--task` named none of them; complete runs exist but no spec's
`select` picked any, naming per spec the key or value that matched nothing and the closest one seen.
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scoring.evidence.runs import Run
from scoring.spec.select import selects
from scoring.spec.specs import Spec

Query = Callable[[str], Sequence[Sequence[Any]]]

# `select`'s short names for the run's own fields (docs/scoring.md), as columns of `run_traces`.
RUN_FIELDS = {
    "service.name": "service_name",
    "agent": "agent_name",
    "task": "task_id",
    "session": "session_id",
    "run": "run_id",
}
_SEEN_LIMIT = 1000  # distinct values read per key: enough to find a typo's original
_SPECS_NAMED = 3  # specs explained in the line; the rest are counted


def literal(text: str) -> str:
    """A SQL string literal (the server's SQL endpoint takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class Scope:
    """The runs a command asked about: `--run`, `--task`, and the window (`--since`, `--until`: a run's
    start, its earliest span; `--where KEY=VALUE`: a `select` written on the command line)."""

    run: str | None = None
    task: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    where: tuple[tuple[str, str], ...] = ()

    @property
    def where_select(self) -> dict[str, Any]:
        grouped: dict[str, list[str]] = {}
        for key, value in self.where:
            grouped.setdefault(key, []).append(value)
        return {key: values[0] if len(values) == 1 else values for key, values in grouped.items()}

    @property
    def timed(self) -> bool:
        return self.since is not None or self.until is not None

    def untimed(self) -> Scope:
        return Scope(self.run, self.task)


def _timestamp(moment: datetime) -> str:
    return f"TIMESTAMP {literal(moment.isoformat(sep=' '))}"


def run_filter(scope: Scope = Scope()) -> str:
    """A condition on `run_traces` rows: complete traces of the runs asked about (the time window on each
    trace's own start). The distinct values of complete traces are those of complete runs, but for a run
    re-opened by a late span in one of its traces; reading `run_traces` rather than the `runs` view,
    which folds every run, is ~10x faster."""
    clauses = ["status = 'complete'", *_identity(scope)]
    if scope.since is not None:
        clauses.append(f"start_time >= {_timestamp(scope.since)}")
    if scope.until is not None:
        clauses.append(f"start_time < {_timestamp(scope.until)}")
    return " AND ".join(clauses)


def _identity(scope: Scope) -> list[str]:
    clauses = []
    if scope.run is not None:
        clauses.append(f"run_id = {literal(scope.run)}")
    if scope.task is not None:
        clauses.append(f"task_id = {literal(scope.task)}")
    return clauses


def complete_runs(scope: Scope = Scope()) -> str:
    """The ids of the complete runs asked about, as scoring takes them (every trace complete; a run's
    start is its earliest span's)."""
    clauses = _identity(scope)
    where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    having = ["bool_and(status = 'complete')"]
    if scope.since is not None:
        having.append(f"min(start_time) >= {_timestamp(scope.since)}")
    if scope.until is not None:
        having.append(f"min(start_time) < {_timestamp(scope.until)}")
    return f"SELECT run_id FROM run_traces {where}GROUP BY run_id HAVING {' AND '.join(having)}"


@dataclass(frozen=True, slots=True)
class Window:
    """What the store holds for the runs asked about."""

    complete: int  # complete runs within --run/--task
    complete_anywhere: int  # complete runs, whatever --run/--task say
    pending_traces: int  # traces received whose runs are not complete
    last_received_s: float | None  # seconds since the last span was stored

    @property
    def ready(self) -> bool:
        """No received trace still waiting for its runs to complete: what `--wait` waits for. (Nothing
        received at all is not waited on: an exporter's flush returns once its spans are stored.)"""
        return self.pending_traces == 0


def window(query: Query, scope: Scope) -> Window:
    # A trace is pending while none of its runs is stored complete (every trace gets a run when it
    # completes). Spans below the writer's replay floor all belong to completed traces: only the spans
    # above it are looked at, which DuckDB prunes by row group.
    floor = "coalesce((SELECT max(value) FROM tracescore_state WHERE key = 'replay_floor_seq'), 0)"
    row = query(
        "SELECT "
        f"(SELECT count(*) FROM ({complete_runs(scope)})), "
        f"(SELECT count(*) FROM ({complete_runs()})), "
        f"(SELECT count(DISTINCT s.trace_id) FROM spans s WHERE s.ingest_seq >= {floor} AND NOT EXISTS "
        "(SELECT 1 FROM run_traces r WHERE r.trace_id = s.trace_id AND r.status = 'complete')), "
        "(SELECT epoch_ms(max(received_at)) FROM spans)"
    )[0]
    last = None if row[3] is None else max(0.0, time.time() - int(row[3]) / 1000)
    return Window(int(row[0]), int(row[1]), int(row[2]), last)


def _seen_values(query: Query, key: str, where: str) -> list[Any]:
    """The distinct values of `select` key `key` over the runs (a run field, else an attribute)."""
    values: list[Any] = []
    column = RUN_FIELDS.get(key)
    if column is not None:
        rows = query(f"SELECT DISTINCT {column}::VARCHAR FROM run_traces WHERE {where} LIMIT {_SEEN_LIMIT}")
        values.extend(r[0] for r in rows if r[0] is not None)
    if '"' not in key and "\\" not in key:  # a JSON path cannot quote these; no run could be told apart
        path = literal(f'$."{key}"')
        rows = query(
            f"SELECT DISTINCT json_extract(attributes, {path})::VARCHAR FROM run_traces WHERE {where} "
            f"LIMIT {_SEEN_LIMIT}"
        )
        for (text,) in rows:
            if text is not None and text != "null":
                value = json.loads(text)
                if value not in values:
                    values.append(value)
    return values


def _attribute_keys(query: Query, where: str) -> list[str]:
    rows = query(
        f"SELECT DISTINCT unnest(json_keys(attributes)) FROM run_traces WHERE {where} AND "
        f"json_type(attributes) = 'OBJECT' LIMIT {_SEEN_LIMIT}"
    )
    return sorted(str(r[0]) for r in rows)


def _matches(key: str, wanted: Any, value: Any) -> bool:
    """`select`'s own comparison (scoring/spec/select.py) of one key against one seen value."""
    probe = Run("", "", None, None, None, None, 0, {key: value})
    return selects({key: wanted}, probe)


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else json.dumps(value)


def closest(wanted: Any, seen: Iterable[Any]) -> str:
    """The seen value nearest to `wanted`, or a few of them when none is near."""
    options = list(seen)
    texts = {str(v): v for v in options}
    near = difflib.get_close_matches(str(wanted), list(texts), n=1, cutoff=0.6)
    if near:
        return f"closest seen: {_shown(texts[near[0]])}"
    few = ", ".join(_shown(v) for v in options[:3])
    more = f" and {len(options) - 3} more" if len(options) > 3 else ""
    return f"seen: {few}{more}"


class Seen:
    """What the stored runs hold for a spec's `select`, read once per key (several specs share keys)."""

    def __init__(self, query: Query, where: str) -> None:
        self.query, self.where = query, where
        self._values: dict[str, list[Any]] = {}
        self._keys: list[str] | None = None

    def values(self, key: str) -> list[Any]:
        if key not in self._values:
            self._values[key] = _seen_values(self.query, key, self.where)
        return self._values[key]

    def keys(self) -> list[str]:
        if self._keys is None:
            self._keys = sorted({*RUN_FIELDS, *_attribute_keys(self.query, self.where)})
        return self._keys

    def select_problems(self, select: Mapping[str, Any]) -> list[str]:
        """Each key of `select` that no run has, or whose wanted values are on no run."""
        problems = []
        for key, wanted in select.items():
            seen = self.values(key)
            if not seen:
                near = difflib.get_close_matches(key, self.keys(), n=1, cutoff=0.6)
                hint = f"closest key: {near[0]!r}" if near else f"keys seen: {', '.join(self.keys()[:8])}"
                problems.append(f"select key {key!r} is unknown: no run has it ({hint})")
                continue
            if not any(_matches(key, wanted, value) for value in seen):
                options = wanted if isinstance(wanted, list) else [wanted]
                shown = " or ".join(_shown(o) for o in options)
                problems.append(f"{key}: {shown} is on no run ({closest(options[0], seen)})")
        return problems


def _spec_problem(seen: Seen, spec: Spec) -> str:
    """Why `spec` picked no run: the keys of its select that matched nothing, else their combination."""
    problems = seen.select_problems(spec.select)
    if problems:
        return f"spec {spec.name!r}: " + ", ".join(problems)
    together = ", ".join(f"{k}: {_shown(v)}" for k, v in spec.select.items())
    return f"spec {spec.name!r}: each of {together} is on some run, but never all on one"


def unmatched(query: Query, specs: Sequence[Spec], where: str, complete: int) -> str:
    seen = Seen(query, where)
    selecting = [s for s in specs if s.select and s.turns is None]
    problems = [_spec_problem(seen, spec) for spec in selecting[:_SPECS_NAMED]]
    if len(selecting) > _SPECS_NAMED:
        problems.append(f"and {len(selecting) - _SPECS_NAMED} more spec(s)")
    conversations = [s.name for s in specs if s.turns is not None]
    if conversations:  # judged on whole conversations, once their last turn is complete
        names = ", ".join(repr(name) for name in conversations[:_SPECS_NAMED])
        problems.append(
            f"{names} judge{'s' if len(conversations) == 1 else ''} conversations (turns), and no "
            "complete conversation was picked (--run scores no conversation)"
        )
    head = f"no spec's select matched any of the {complete} complete run(s)"
    return head + (": " + "; ".join(problems) if problems else "")


def _filter_miss(query: Query, scope: Scope, anywhere: int) -> str:
    """Complete runs exist, but none that --run, --task or the time window name."""
    if scope.timed:
        outside = window(query, scope.untimed()).complete
        if outside:
            rows = query(
                f"SELECT min(start_time), max(start_time) FROM run_traces WHERE {run_filter(scope.untimed())}"
            )
            first, last = (str(v)[:19] for v in rows[0])
            return (
                f"no complete run started in the window (--since/--until); {outside} complete run(s) "
                f"started outside it, from {first} to {last} (UTC)"
            )
    if scope.task is not None:
        sql = f"SELECT DISTINCT task_id FROM run_traces WHERE {run_filter()} LIMIT {_SEEN_LIMIT}"
        named = [r[0] for r in query(sql) if r[0] is not None]
        if scope.task not in named:
            hint = closest(scope.task, named)
            return f"no complete run has --task {scope.task!r} ({hint}) among {anywhere} complete run(s)"
    if scope.run is not None:
        return f"no complete run has --run {scope.run!r}" + (
            f" and --task {scope.task!r}" if scope.task else ""
        )
    return f"no complete run has --task {scope.task!r}"


@dataclass(frozen=True, slots=True)
class Where:
    """How the store is reached, for advice: through a running server, or a file no server holds."""

    served: bool
    waited_s: float | None = None


def explain(query: Query, specs: Sequence[Spec], scope: Scope, where: Where) -> str:
    """One line: why no verdict came from scoring `specs` over the stored runs `scope` names."""
    seen = window(query, scope)
    if seen.complete > 0:
        chosen = run_filter(scope)
        if scope.where and (problems := Seen(query, chosen).select_problems(scope.where_select)):
            return f"no complete run matches --where: {'; '.join(problems)}"
        found = unmatched(query, specs, chosen, seen.complete)
        if seen.pending_traces:  # the runs meant may be among them
            hint = ": --wait SECONDS" if where.served and where.waited_s is None else ""
            found += f" ({seen.pending_traces} more trace(s) received, not complete yet{hint})"
        return found
    if seen.pending_traces > 0:
        return _pending(seen, where)
    if seen.complete_anywhere > 0:
        return _filter_miss(query, scope, seen.complete_anywhere)
    return "no runs in the window: nothing was received (is the agent's OTLP exporter pointed here?)"


def _pending(seen: Window, where: Where) -> str:
    count = f"{seen.pending_traces} trace(s) received, but no run is complete yet"
    if not where.served:
        return (
            f"{count}: no server holds this file to complete them (it stopped before they completed); "
            "`tracescore serve` on it completes them at start"
        )
    ago = "" if seen.last_received_s is None else f" (the last span came {seen.last_received_s:.1f} s ago)"
    if where.waited_s is not None:
        return (
            f"{count} after waiting {where.waited_s:g} s{ago}: a run completes when its root span has "
            "ended and serve's --grace-seconds passed with no new span (or --idle-timeout-seconds without "
            "a root); wait longer with a larger --wait"
        )
    return (
        f"{count}{ago}: a run completes --grace-seconds (serve's setting, default 2 s) after its last "
        "span; score again then, or pass --wait SECONDS to wait for completion"
    )
