"""What the acknowledgement record (`<db>.acks`, docs/reliability.md promise 10) costs on the ack path.

The writer itself, in process, on a real database file: `clients` threads each submit a request of
`spans` new spans, wait for its answer, and submit the next (closed loop, so the writer always has
group commits to make). Ack latency is submit to answer, the part of an OTLP request's time that the
record can change: DuckDB's commit with its fsync, then the record's 64-byte write and fdatasync.
Without and with the record, in alternating segments on fresh files, so that a neighbour's load on a
shared machine falls on both alike.

Then each part alone, back to back: the record's write (pwrite + fdatasync) and a one-row DuckDB
commit (its WAL write + fsync).

    python -m bench.ack_record [--seconds 24] [--clients 8] [--spans 50] [--writes 2000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from bench.stats import summary
from collector.decode.prepare import prepare_spans
from collector.model.domain import Resource, Span
from collector.store._ack_record import RecordFile
from collector.store.acknowledged import Acknowledgements, verify
from collector.store.database import open_writer
from collector.store.writer import WriteJob, Writer, WriterSettings

_RESOURCE = Resource({"service.name": "bench"}, "bench", "")


def _request(spans: int) -> list[Span]:
    trace_id = os.urandom(16).hex()
    return [
        Span(
            trace_id=trace_id,
            span_id=os.urandom(8).hex(),
            parent_span_id=None,
            name=f"span-{i}",
            kind=1,
            start_ns=1_700_000_000_000_000_000,
            end_ns=1_700_000_000_000_001_000,
            status_code=0,
            status_message="",
            attributes={"padding": "x" * 200},
            events=(),
            links=(),
            resource=_RESOURCE,
        )
        for i in range(spans)
    ]


class TimedAcknowledgements(Acknowledgements):
    """The writer's record, timing what each group commit spends in it (write + fdatasync)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: list[float] = []

    def committed(self, seq: int, stored: int) -> None:
        started = time.perf_counter()
        super().committed(seq, stored)
        self.seconds.append(time.perf_counter() - started)


@dataclass(frozen=True)
class Segment:
    latencies: list[float]
    commits: int
    seconds: float
    in_record: list[float]


def segment(folder: Path, with_record: bool, seconds: float, clients: int, spans: int) -> Segment:
    db = folder / f"ack-{'with' if with_record else 'without'}-{time.monotonic_ns()}.duckdb"
    connection = open_writer(db)
    acks = TimedAcknowledgements(db, verify(db)) if with_record else None
    # Traces never complete during the segment: only the span commits and their answers are measured.
    writer = Writer(connection, WriterSettings(grace_s=3600, idle_timeout_s=3600), acknowledgements=acks)
    writer.start()
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client() -> None:
        answered = threading.Event()
        failure: list[BaseException | None] = []

        def done(error: BaseException | None) -> None:
            failure.append(error)
            answered.set()

        while time.monotonic() < deadline:
            prepared = prepare_spans(_request(spans))
            answered.clear()
            failure.clear()
            started = time.perf_counter()
            writer.submit(WriteJob(prepared, done))
            answered.wait()
            took = time.perf_counter() - started
            if failure[0] is not None:
                raise failure[0]
            with lock:
                latencies.append(took)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    commits = writer.stats.batches
    writer.stop()
    connection.close()
    return Segment(latencies, commits, seconds, acks.seconds if acks is not None else [])


def isolated(folder: Path, count: int) -> tuple[dict[str, float | int | None], dict[str, float | int | None]]:
    """The record's write alone, and a one-row DuckDB commit alone, each `count` times back to back on
    the same file system: what one group commit pays for each (ms)."""
    record = RecordFile(folder / "isolated.duckdb.acks", None)
    writes = []
    for i in range(count):
        started = time.perf_counter()
        record.write(1, i, i * 50)
        writes.append(time.perf_counter() - started)
    record.close()
    connection = duckdb.connect(str(folder / "isolated.duckdb"))
    connection.execute("CREATE TABLE t (i BIGINT)")
    commits = []
    for i in range(count):
        started = time.perf_counter()
        connection.begin()
        connection.execute("INSERT INTO t VALUES (?)", [i])
        connection.commit()
        commits.append(time.perf_counter() - started)
    connection.close()
    return summary(writes, scale=1000.0), summary(commits, scale=1000.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=24.0, help="total, split into 4 segments")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--spans", type=int, default=50, help="spans per request")
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temp dir)")
    parser.add_argument("--writes", type=int, default=2000, help="isolated record writes and commits")
    args = parser.parse_args()
    results: dict[bool, list[Segment]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for with_record in (False, True, False, True):
            results[with_record].append(
                segment(Path(tmp), with_record, args.seconds / 4, args.clients, args.spans)
            )
        record_ms, commit_ms = isolated(Path(tmp), args.writes)
    print(
        f"isolated, {args.writes} each: record write + fdatasync p50 {record_ms['p50'] or 0:.2f} ms, "
        f"p99 {record_ms['p99'] or 0:.2f} ms; one-row DuckDB commit p50 {commit_ms['p50'] or 0:.2f} ms, "
        f"p99 {commit_ms['p99'] or 0:.2f} ms"
    )
    for with_record, runs in results.items():
        latencies = [x for run in runs for x in run.latencies]
        commits = sum(run.commits for run in runs)
        seconds = sum(run.seconds for run in runs)
        ms = summary(latencies, scale=1000.0)
        if with_record:
            spent = summary([x for run in runs for x in run.in_record], scale=1000.0)
            print(
                f"in the record, per group commit (inside the writer, before the answer): p50 "
                f"{spent['p50'] or 0:.2f} ms, p99 {spent['p99'] or 0:.2f} ms over {spent['n']} commits"
            )
        label = "with the record   " if with_record else "without the record"
        print(
            f"{label}: ack p50 {ms['p50'] or 0:.2f} ms, p99 {ms['p99'] or 0:.2f} ms; "
            f"{len(latencies) / seconds:,.0f} requests/s ({len(latencies) * args.spans / seconds:,.0f} "
            f"spans/s) in {commits / seconds:,.0f} group commits/s"
        )


if __name__ == "__main__":
    main()
