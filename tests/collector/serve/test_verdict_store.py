"""The verdict store: everything put is stored, in batches, after delivery; a failing store is reported
(the verdicts' runs are judged again at the next start) and the thread goes on."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import duckdb

from collector.serve._verdict_store import Delivered, VerdictStore
from scoring import ensure_verdict_schema
from scoring.verdict.table import verdict_json
from tests._verdicts import passing_verdict


def _delivered(*runs: str) -> Delivered:
    verdicts = [passing_verdict(r) for r in runs]
    return Delivered(verdicts, [verdict_json(v) for v in verdicts], [None] * len(verdicts))


class Reports:
    """What the store reported: (run ids, stored?) per delivered batch."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[str], bool]] = []
        self.any = threading.Event()

    def __call__(self, delivered: Delivered, stored: bool) -> None:
        self.seen.append(([v.run_id for v in delivered.verdicts], stored))
        self.any.set()


def test_every_delivered_verdict_is_stored_once_and_reported(tmp_path: Path) -> None:
    connection = duckdb.connect(str(tmp_path / "store.duckdb"))
    ensure_verdict_schema(connection)
    reports = Reports()
    store = VerdictStore(connection.cursor(), reports)
    store.put(_delivered("a", "b"))
    store.put(_delivered("c"))
    store.put(_delivered())  # nothing to store: not even a report
    store.start()
    store.put(_delivered("a"))  # the same key again: replaces, never a second row
    store.stop()
    assert store.unstored == 0
    assert sorted(r for runs, ok in reports.seen for r in runs if ok) == ["a", "a", "b", "c"]
    assert connection.execute("SELECT run_id, count(*) FROM verdicts GROUP BY ALL ORDER BY 1").fetchall() == [
        ("a", 1),
        ("b", 1),
        ("c", 1),
    ]
    connection.close()


def test_a_failing_store_is_reported_and_the_next_one_still_runs(tmp_path: Path) -> None:
    connection = duckdb.connect(str(tmp_path / "store.duckdb"))
    reports = Reports()
    store = VerdictStore(connection.cursor(), reports)
    store.start()
    store.put(_delivered("lost"))  # no verdicts table yet: the store fails
    assert reports.any.wait(30)
    ensure_verdict_schema(connection)
    store.put(_delivered("kept"))
    store.stop()
    assert reports.seen == [(["lost"], False), (["kept"], True)]
    assert connection.execute("SELECT run_id FROM verdicts").fetchall() == [("kept",)]
    connection.close()


def test_only_a_batch_wholly_of_fresh_verdicts_skips_replacing_keys(tmp_path: Path) -> None:
    """Online scoring marks fresh the verdicts of run versions the writer just completed: no store can hold
    their keys yet, so they are inserted without the DELETE that reads every stored verdict. The skip is
    real (a key stored before is then doubled, which is why nothing else is marked fresh); a stored batch
    holding any verdict not fresh replaces its keys."""
    connection = duckdb.connect(str(tmp_path / "store.duckdb"))
    ensure_verdict_schema(connection)
    store = VerdictStore(connection.cursor(), Reports())
    store.start()
    store.put(_delivered("a", "b"))
    store.stop()
    fresh = VerdictStore(connection.cursor(), Reports())
    fresh.put(replace(_delivered("a"), fresh=True))
    fresh.start()
    fresh.stop()
    mixed = VerdictStore(connection.cursor(), Reports())
    mixed.put(replace(_delivered("b"), fresh=True))
    mixed.put(_delivered("c"))  # queued together: one store of both, which replaces b
    mixed.start()
    mixed.stop()
    counts = connection.execute("SELECT run_id, count(*) FROM verdicts GROUP BY ALL ORDER BY 1").fetchall()
    assert counts == [("a", 2), ("b", 1), ("c", 1)]
    connection.close()
