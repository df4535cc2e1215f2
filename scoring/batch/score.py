"""Scoring a stored history set-based: one SQL query per spec and slice of runs, not a loop per run.

Specs in the compiled subset (scoring/batch/_plan.py) are judged by scoring/batch/_sql.py; the others
by the Python judge, run by run, as `score_runs` does. Verdicts come out in `score_runs`' order (runs
by first span, then the specs in the order given) and equal the Python judge's: a mixed list of specs
gives the same verdicts, whichever path judged each.

Why this module is long: it is where verdicts from every source (a spec's own query, a family's query,
scoring/batch/_family_query.py, and the Python judge) are chosen per slice of runs and merged back into
`score_runs`' order, and where they are stored; the merge reads each source's keyed stream and the
`Scored` it yields, so the sources' wrappers sit beside it. The queries themselves live elsewhere.
"""

from __future__ import annotations

import heapq
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import orjson

from scoring.batch import _store as storage
from scoring.batch._conversations import conversation_verdicts
from scoring.batch._family_query import VERDICT_COLUMNS, families, family_verdicts, store_family
from scoring.batch._plan import not_compiled_each
from scoring.batch._runs import Runs
from scoring.batch._select import Chooser
from scoring.batch._sql import verdict_query
from scoring.batch._sql_literal import NotCompilable
from scoring.batch._unread import unread_of, without
from scoring.evidence.reading import Unread
from scoring.evidence.runs import complete_runs, load_evidence
from scoring.judge.scorer import SpecSet, score_evidence
from scoring.spec.specs import Spec
from scoring.spec.window import RunWindow, chosen_run_ids
from scoring.verdict.record import CheckResult, Label, Verdict, verdict_from_dict
from scoring.verdict.table import store_verdicts

log = logging.getLogger("tracescore.scoring")

# Runs per query when verdicts go back to Python: bounds the result held at once (~2 kB a run). Each
# slice reads the executions table again, so slices are large: 100 k runs a slice cost 20 % more.
RUNS_PER_QUERY = 500_000
_LONG_NUMBER = re.compile(r"[0-9]{19}")  # any integer beyond 64 bits has at least 19 digits
_RUNS_PER_EVIDENCE_CHUNK = 2_000  # as score_runs: evidence for the specs judged in Python
# A spec's query costs tens of ms whatever the runs it selects, the Python judge ~0.1 ms a run: a spec
# that selects fewer runs than this is judged in Python (with the same verdicts), so that a thousand
# specs selecting a task each cost what one spec selecting every run does (bench/score_specs.py).
SQL_FROM_RUNS = 1_000


@dataclass(frozen=True, slots=True)
class Scored:
    """One verdict as scoring gave it: what a summary line shows, and the whole verdict. Set-based
    scoring keeps the verdict as its JSON text until asked: turning 300 k verdicts into objects costs
    several times more than judging them."""

    run_id: str
    task: str | None
    spec: str
    label: Label
    value: float | None
    reason: str | None
    judged: Verdict | None = None
    text: str | None = None
    # orjson may read `text`: it holds no integer beyond 64 bits, which orjson would read as a float
    # (a SQL verdict's integers are counts and positions, and its spec's own values).
    plain_numbers: bool = False
    trace_id: str = ""

    @classmethod
    def of(cls, verdict: Verdict) -> Scored:
        v = verdict
        return cls(v.run_id, v.task, v.spec, v.label, v.value, v.reason, judged=v, trace_id=v.trace_id)

    @property
    def gates(self) -> tuple[CheckResult, ...]:
        """The verdict's gates (strict mode, forbidden tools); read from its JSON only when asked, as
        the summary table does for failed runs alone."""
        if self.judged is not None:
            return self.judged.gates
        return tuple(CheckResult(**gate) for gate in self.to_dict().get("gates", ()))

    def to_dict(self) -> dict[str, Any]:
        """Equal to `Verdict.to_dict()`, keys in the same order (the JSON is written in that order)."""
        if self.judged is not None:
            return self.judged.to_dict()
        text = self.text or "{}"
        if self.plain_numbers:
            try:  # orjson reads the ~3 kB of a verdict ~2x faster than the json module
                data: dict[str, Any] = orjson.loads(text)
                return data
            except orjson.JSONDecodeError:  # NaN or infinity, which only the json module reads
                pass
        slow: dict[str, Any] = json.loads(text)
        return slow

    def verdict(self) -> Verdict:
        return self.judged if self.judged is not None else verdict_from_dict(self.to_dict())


def _query(spec: Spec, chosen: str, runs: str, rows: str | None) -> str:
    # The rows must be narrowed to the runs chosen unless those are every complete run.
    if chosen != runs and rows is None:
        rows = "true"
    return verdict_query(spec, chosen, rows)


class _Judged:
    """One spec's SQL verdicts for a slice of runs, in `ord` order."""

    def __init__(self, rows: list[tuple[Any, ...]], spec: Spec) -> None:
        self._rows = rows
        # The verdict's integers beyond counts and positions are the spec's own values.
        canonical = json.dumps(spec.canonical(), separators=(",", ":"))
        self._plain = _LONG_NUMBER.search(canonical) is None

    def keyed(self, position: int) -> Iterator[tuple[int, int, Scored]]:
        """(run ord, the spec's position, verdict) for each run the spec judged."""
        plain = self._plain
        for ord_, run_id, trace_id, task, spec, label, value, reason, text in self._rows:
            yield (
                ord_,
                position,
                Scored(
                    run_id,
                    task,
                    spec,
                    label,
                    value,
                    reason,
                    text=text,
                    plain_numbers=plain,
                    trace_id=trace_id,
                ),
            )


class _FamilyJudged:
    """A family's SQL verdicts for a slice of runs (scoring/batch/_family.py), in (ord, spec) order."""

    def __init__(self, rows: list[tuple[Any, ...]], specs: Sequence[Spec], positions: Sequence[int]) -> None:
        self._rows = rows
        self._plain = {p: _Judged([], specs[p])._plain for p in positions}

    def keyed(self) -> Iterator[tuple[int, int, Scored]]:
        plain = self._plain
        for ord_, run_id, trace_id, task, spec, label, value, reason, text, position in self._rows:
            scored = Scored(
                run_id,
                task,
                spec,
                label,
                value,
                reason,
                text=text,
                plain_numbers=plain[position],
                trace_id=trace_id,
            )
            yield ord_, position, scored


class _SqlJudged:
    """A slice's SQL verdicts: each spec alone or in a family, and which specs they cover."""

    def __init__(self) -> None:
        self.specs: dict[int, _Judged] = {}
        self.families: list[tuple[list[int], _FamilyJudged]] = []

    def covers(self, position: int) -> bool:
        return position in self.specs or any(position in members for members, _ in self.families)

    def __len__(self) -> int:
        return len(self.specs) + sum(len(members) for members, _ in self.families)

    def in_order(self) -> Iterator[tuple[int, int, Scored]]:
        """Every SQL verdict merged in score_runs' order (run, then spec): the cost grows with the
        verdicts, not with runs x specs."""
        streams = [j.keyed(i) for i, j in self.specs.items()]
        streams += [family.keyed() for _, family in self.families]
        return heapq.merge(*streams)


_FETCHED = VERDICT_COLUMNS


def _judge(
    connection: duckdb.DuckDBPyConnection,
    spec: Spec,
    choice: tuple[str, Callable[[], None]],
    runs: str,
    rows: str | None,
    *,
    store_at: datetime | None,
    unread: dict[str, Unread],
) -> _Judged:
    """The spec's verdicts for every run of `runs` that it selects but the unread ones (the Python
    judge gives theirs); in the table first if asked."""
    chosen, release_choice = choice
    chosen, release_unread = without(connection, chosen, unread)

    def release() -> None:
        release_unread()
        release_choice()

    try:
        query = _query(spec, chosen, runs, rows)
        if store_at is None:
            rows_ = connection.execute(f"SELECT {_FETCHED} FROM ({query}) ORDER BY ord").fetchall()
            return _Judged(rows_, spec)
        # Judged once, into a temporary table both the store and Python read.
        table = f"_tracescore_verdicts_{uuid.uuid4().hex}"
        connection.execute(f"CREATE TEMP TABLE {table} AS {query}")
        try:
            storage.insert(connection, spec, chosen, table, store_at)
            return _Judged(
                connection.execute(f"SELECT {_FETCHED} FROM {table} ORDER BY ord").fetchall(), spec
            )
        finally:
            connection.execute(f"DROP TABLE IF EXISTS {table}")
    finally:
        release()


def _judge_families(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    groups: list[list[int]],
    in_sql: list[int],
    relation: str,
    rows: str | None,
    judged: _SqlJudged,
    *,
    store: bool,
) -> None:
    """Each family of specs still judged in SQL, as one query, into `judged`; a family whose query
    fails leaves SQL (`in_sql`) for the Python judge, as a single spec does."""
    for members in groups:
        if not all(i in in_sql for i in members):
            continue
        try:
            at = storage.now() if store else None
            fetched = family_verdicts(connection, specs, members, relation, rows, SQL_FROM_RUNS, at)
        except (duckdb.Error, NotCompilable) as exc:
            log.warning("specs %s are judged in Python: %s", ", ".join(specs[i].name for i in members), exc)
            for i in members:
                in_sql.remove(i)
            continue
        if fetched is not None:
            judged.families.append((members, _FamilyJudged(fetched, specs, members)))


def score_records(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    *,
    run_id: str | None = None,
    task_id: str | None = None,
    store: bool = False,
    window: RunWindow | None = None,
) -> Iterator[Scored]:
    """`score_runs`' verdicts in its order, judged set-based where the spec allows; with `store`, each
    slice's verdicts are in the `verdicts` table before they are yielded (the table must exist). With a
    `window`, only the runs it chooses (scoring/spec/window.py), and the conversations whose first turn
    it chooses."""
    conversation_specs = [spec for spec in specs if spec.turns is not None]
    specs = [spec for spec in specs if spec.turns is None]
    in_sql = [i for i, reason in enumerate(not_compiled_each(specs)) if reason is None]
    groups = families(specs, in_sql)  # specs differing only in name and select: one query each group
    in_family = {i for members in groups for i in members}
    chosen = chosen_run_ids(connection, window, run_id=run_id, task_id=task_id)
    runs = Runs(connection, run_id=run_id, task_id=task_id, run_ids=chosen)
    try:
        evidence_runs = None
        for low in range(0, runs.count, RUNS_PER_QUERY):
            high = min(low + RUNS_PER_QUERY, runs.count)
            relation, rows = runs.slice(low, high)
            unread = unread_of(connection, relation)
            judged = _SqlJudged()
            # SQL leaves the unread runs out, families included: the Python judge gives their `error`.
            family_runs, release_family_runs = without(connection, relation, unread)
            try:
                _judge_families(connection, specs, groups, in_sql, family_runs, rows, judged, store=store)
            finally:
                release_family_runs()
            alone = [i for i in in_sql if i not in in_family]
            chooser = Chooser(connection, relation, [specs[i].select for i in alone])
            for n, i in enumerate(alone):
                if chooser.count(n) < SQL_FROM_RUNS:  # cheaper in Python: the judge's cost is per run
                    continue
                try:
                    judged.specs[i] = _judge(
                        connection,
                        specs[i],
                        chooser.chosen(n),
                        relation,
                        rows,
                        store_at=storage.now() if store else None,
                        unread=unread,
                    )
                except (duckdb.Error, NotCompilable) as exc:  # the Python judge still gives a verdict
                    log.warning("spec %s is judged in Python: %s", specs[i].name, exc)
                    in_sql.remove(i)
            if len(judged) == len(specs) and not unread:
                yield from (scored for _, _, scored in judged.in_order())
                continue
            if evidence_runs is None:
                evidence_runs = complete_runs(connection, run_id=run_id, task_id=task_id, run_ids=chosen)
            yield from _with_python(
                connection, specs, judged, evidence_runs[low:high], low, store=store, unread=set(unread)
            )
    finally:
        runs.close()
    if conversation_specs and run_id is None:  # after every run: a conversation is judged on its turns
        verdicts = conversation_verdicts(
            connection,
            conversation_specs,
            task_id=task_id,
            store=store,
            first_turns=chosen_run_ids(connection, window),
        )
        yield from (Scored.of(v) for v in verdicts)


def _with_python(
    connection: duckdb.DuckDBPyConnection,
    specs: list[Spec],
    judged: _SqlJudged,
    evidence_runs: list[Any],
    low: int,
    *,
    store: bool,
    unread: set[str] | frozenset[str] = frozenset(),
) -> Iterator[Scored]:
    """A slice of runs, the specs SQL did not judge judged in Python; each run's verdicts in spec order.
    A run is tested only against the specs whose `select` can pick it (scoring/spec/select.py), and
    only the runs some of them pick have their evidence read. An `unread` run is judged in Python by
    every spec that picks it: SQL left it out."""
    python = [i for i in range(len(specs)) if not judged.covers(i)]
    indexed = SpecSet([specs[i] for i in python])
    every = SpecSet(specs) if unread else indexed
    wanted = []
    for position, entry in enumerate(evidence_runs, low + 1):
        if entry[0].run_id in unread:
            chosen = every.positions(entry[0])
        else:
            chosen = [python[n] for n in indexed.positions(entry[0])]
        if chosen:
            wanted.append((position, entry, chosen))
    sql = judged.in_order()
    pending = next(sql, None)
    for start in range(0, len(wanted), _RUNS_PER_EVIDENCE_CHUNK):
        chunk = wanted[start : start + _RUNS_PER_EVIDENCE_CHUNK]
        out: list[Scored] = []
        fresh: list[Verdict] = []
        loaded = load_evidence(connection, [entry for _, entry, _ in chunk])
        for (position, _, chosen), evidence in zip(chunk, loaded, strict=True):
            while pending is not None and pending[0] < position:  # runs no Python spec picks
                out.append(pending[2])
                pending = next(sql, None)
            run_verdicts: list[tuple[int, Scored]] = []
            while pending is not None and pending[0] == position:
                run_verdicts.append((pending[1], pending[2]))
                pending = next(sql, None)
            for n in chosen:
                for verdict in score_evidence([specs[n]], evidence):
                    fresh.append(verdict)
                    run_verdicts.append((n, Scored.of(verdict)))
            run_verdicts.sort(key=lambda pair: pair[0])
            out.extend(scored for _, scored in run_verdicts)
        if store and fresh:
            store_verdicts(connection, fresh)
        yield from out
    while pending is not None:
        yield pending[2]
        pending = next(sql, None)


def score_history(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    *,
    run_id: str | None = None,
    task_id: str | None = None,
    store: bool = False,
) -> Iterator[Verdict]:
    """`score_runs`' verdicts, in its order, judged set-based where the spec allows (see score_records)."""
    return (
        s.verdict() for s in score_records(connection, specs, run_id=run_id, task_id=task_id, store=store)
    )


def store_history(
    connection: duckdb.DuckDBPyConnection,
    specs: Sequence[Spec],
    *,
    run_id: str | None = None,
    task_id: str | None = None,
) -> int:
    """Score and store without bringing SQL-judged verdicts into Python at all; returns how many were
    stored. The `verdicts` table must exist."""
    conversation_specs = [spec for spec in specs if spec.turns is not None]
    specs = [spec for spec in specs if spec.turns is None]
    in_python = [i for i, reason in enumerate(not_compiled_each(specs)) if reason is not None]
    stored = 0
    runs = Runs(connection, run_id=run_id, task_id=task_id, ordered=False)
    try:
        relation, rows = runs.slice(0, runs.count)
        unread = unread_of(connection, relation)
        in_sql = [i for i in range(len(specs)) if i not in in_python]
        groups = families(specs, in_sql)
        in_family = {i for members in groups for i in members}
        family_runs, release_family_runs = without(connection, relation, unread)  # unread: Python's
        try:
            for members in groups:
                stored_family = store_family(connection, specs, members, family_runs, rows, SQL_FROM_RUNS)
                if stored_family is None:
                    in_python.extend(members)
                else:
                    stored += stored_family
        finally:
            release_family_runs()
        in_sql = [i for i in in_sql if i not in in_family]
        chooser = Chooser(connection, relation, [specs[i].select for i in in_sql])
        for n, i in enumerate(in_sql):
            spec = specs[i]
            if chooser.count(n) < SQL_FROM_RUNS:
                in_python.append(i)
                continue
            chosen, release = chooser.chosen(n)
            chosen, release_unread = without(connection, chosen, unread)
            try:
                source = f"({_query(spec, chosen, relation, rows)})"
                stored += storage.insert(connection, spec, chosen, source, storage.now())
            except (duckdb.Error, NotCompilable) as exc:
                log.warning("spec %s is judged in Python: %s", spec.name, exc)
                in_python.append(i)
            finally:
                release_unread()
                release()
    finally:
        runs.close()
    if in_python:
        python = [specs[i] for i in sorted(in_python)]
        stored += sum(1 for _ in _python_only(connection, python, run_id=run_id, task_id=task_id))
    judged_in_sql = [specs[i] for i in range(len(specs)) if i not in in_python]
    if unread and judged_in_sql:  # the unread runs SQL left out, judged by the specs it judged
        left = complete_runs(connection, run_ids=sorted(unread))
        stored += sum(1 for _ in _with_python(connection, judged_in_sql, _SqlJudged(), left, 0, store=True))
    if conversation_specs and run_id is None:
        stored += sum(
            1 for _ in conversation_verdicts(connection, conversation_specs, task_id=task_id, store=True)
        )
    return stored


def _python_only(
    connection: duckdb.DuckDBPyConnection, specs: list[Spec], *, run_id: str | None, task_id: str | None
) -> Iterator[Scored]:
    runs = complete_runs(connection, run_id=run_id, task_id=task_id)
    return _with_python(connection, specs, _SqlJudged(), runs, 0, store=True)
