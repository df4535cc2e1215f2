"""Promise 10, a write-ahead log that lost acknowledged spans stops the start (issue 26, part 2).

One sending phase: a real `tracescore serve` (no checkpoint: the acknowledged spans exist only in its
WAL), the real OpenTelemetry SDK exporting over OTLP/gRPC, one trace of 48 spans per export, each
acknowledged before the next; then SIGKILL. Each case works on a copy of the files.

DuckDB replays a WAL up to the first entry it cannot read and drops the rest without an error. For each
kind of damage the test first proves it is that silent kind (a read-only open succeeds and holds fewer
spans than were acknowledged), then that `serve` refuses with exit 2 and one line giving the exact number
missing, that `doctor` reports it, and that no file was changed by either.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector.cli._main import main
from collector.decode.prepare import prepare_spans
from collector.model.domain import Resource as SpanResource
from collector.model.domain import Span
from collector.store._ack_record import AckRecord, RecordFile, RecordUnreadable, read_record, record_path
from collector.store.acknowledged import Acknowledgements
from collector.store.database import open_writer
from collector.store.writer import StoreUnavailable, WriteJob, Writer, WriterSettings
from tests._sdk_load import Ledger, RecordingExporter
from tests._server import ServeProcess

TRACES = 20
SPANS_PER_TRACE = 48
# No checkpoint and no run completion while sending: every commit in the WAL is a commit of spans.
NO_CHECKPOINT = {"TRACESCORE_CHECKPOINT_SECONDS": "3600"}
NO_COMPLETION = ("--grace-seconds", "600", "--idle-timeout-seconds", "600")
FREE_PORTS = ("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")


@dataclass(frozen=True)
class Crashed:
    folder: Path
    acked: frozenset[str]
    # The record as it was after the last-but-one acknowledgement, and the WAL's size then: the state a
    # SIGKILL leaves when it lands after DuckDB began writing the last commit, before its answer.
    acks_before_last: bytes
    wal_before_last: int

    def copy_to(self, folder: Path) -> Path:
        for file in self.folder.iterdir():
            shutil.copy(file, folder / file.name)
        return folder / "t.duckdb"


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Crashed:
    folder = tmp_path_factory.mktemp("crashed")
    db = folder / "t.duckdb"
    server = ServeProcess(db, extra_args=NO_COMPLETION, env=NO_CHECKPOINT, log_path=folder.parent / "s.log")
    server.start()
    ledger = Ledger()
    provider = TracerProvider(resource=Resource.create({"service.name": "wal-verification"}))
    exporter = RecordingExporter(OTLPSpanExporter(endpoint=server.grpc_endpoint, insecure=True), ledger)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_export_batch_size=SPANS_PER_TRACE, schedule_delay_millis=60_000)
    )
    tracer = provider.get_tracer("tests.wal_verification")
    acks_before_last, wal_before_last = b"", 0
    try:
        for t in range(TRACES):
            if t == TRACES - 1:
                acks_before_last = record_path(db).read_bytes()
                wal_before_last = Path(f"{db}.wal").stat().st_size
            with tracer.start_as_current_span(f"t{t}-root"):
                for s in range(SPANS_PER_TRACE - 1):
                    with tracer.start_as_current_span(f"t{t}-s{s}"):
                        pass
            assert provider.force_flush(30_000)
            assert len(ledger.acked) == (t + 1) * SPANS_PER_TRACE, ledger.gave_up
    finally:
        server.kill()
        provider.shutdown()
    (folder / "t.duckdb.api.json").unlink(missing_ok=True)  # a killed server leaves it; stale, ignored
    record = read_record(record_path(db))
    assert record is not None and record.spans == len(ledger.acked) == TRACES * SPANS_PER_TRACE
    return Crashed(folder, frozenset(ledger.acked), acks_before_last, wal_before_last)


# ---- the damage, as a bad disk or a careless copy leaves it ----------------------------------------------


def _entries(wal: bytes) -> list[tuple[int, int]]:
    """(offset, payload size) of each entry after the WAL's header (DuckDB 2.0: the header is one
    serialized object ending in 0xFFFF; then entries of a 16-byte header, size and checksum, and a
    payload). Walking them must end exactly at the end of the file, or the layout is not understood."""
    offset, entries = wal.index(b"\xff\xff") + 2, []
    while offset < len(wal):
        (size,) = struct.unpack_from("<Q", wal, offset)
        entries.append((offset, size))
        offset += 16 + size
    assert offset == len(wal), "the WAL's layout is not what this test expects"
    return entries


def header_bit(wal: bytearray) -> None:
    wal[0] ^= 0x01  # the header's first field id: DuckDB then replays nothing, and says nothing


def entry_header_zeroed(wal: bytearray) -> None:
    offset, _ = _entries(bytes(wal))[len(_entries(bytes(wal))) // 2]
    wal[offset : offset + 16] = bytes(16)


def entry_size_flipped(wal: bytearray) -> None:
    offset, _ = _entries(bytes(wal))[len(_entries(bytes(wal))) // 2]
    wal[offset + 5] ^= 0x01  # the size now runs past the end of the file


def cut_to_half(wal: bytearray) -> None:
    del wal[len(wal) // 2 :]


def cut_to_90_percent(wal: bytearray) -> None:
    del wal[len(wal) * 9 // 10 :]


def cut_by_10_bytes(wal: bytearray) -> None:
    del wal[-10:]


DAMAGE: list[Callable[[bytearray], None]] = [
    header_bit,
    entry_header_zeroed,
    entry_size_flipped,
    cut_to_half,
    cut_to_90_percent,
    cut_by_10_bytes,
]


def _files(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.name.startswith("t.duckdb")}


def _serve(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", "serve", "--db", str(db), *FREE_PORTS],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _held_by_duckdb(db: Path) -> int:
    """What DuckDB itself replays, opened read-only (as tracescore opens it to compare)."""
    with duckdb.connect(str(db), read_only=True) as connection:
        try:
            return int(connection.execute("SELECT count(*) FROM spans").fetchall()[0][0])
        except duckdb.CatalogException:
            return 0  # it dropped the whole log, the tables' creation with it


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__ for d in DAMAGE])
def test_a_wal_that_lost_acknowledged_spans_stops_the_start_and_nothing_is_changed(
    crashed: Crashed, tmp_path: Path, damage: Callable[[bytearray], None], capsys: pytest.CaptureFixture[str]
) -> None:
    db = crashed.copy_to(tmp_path)
    wal = bytearray(Path(f"{db}.wal").read_bytes())
    damage(wal)
    Path(f"{db}.wal").write_bytes(wal)
    before = _files(tmp_path)

    result = _serve(db)
    assert result.returncode == 2, result.stderr
    assert _files(tmp_path) == before, "a refused start changed the database, its WAL or the record"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr

    assert main(["doctor", "--db", str(db), *FREE_PORTS]) == 1
    report = capsys.readouterr().out
    assert _files(tmp_path) == before, "doctor changed the database, its WAL or the record"

    held = _held_by_duckdb(db)  # only now: the check above is of tracescore's own reads
    assert held < len(crashed.acked), "this damage did not lose anything: the case proves nothing"
    missing = len(crashed.acked) - held
    assert f"{missing} acknowledged span(s) are not in the database or its write-ahead log" in lines[0]
    assert "tracescore doctor" in lines[0] and "docs/reliability.md" in lines[0], lines[0]
    assert "--accept-wal-loss" in lines[0] and "Nothing was changed" in lines[0], lines[0]
    failed = [line for line in report.splitlines() if line.startswith("FAIL  acknowledged spans")]
    assert len(failed) == 1 and f"{missing} acknowledged span(s)" in failed[0], report


def test_an_undamaged_wal_after_a_sigkill_starts_and_keeps_every_acknowledged_span(
    crashed: Crashed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = crashed.copy_to(tmp_path)
    assert main(["doctor", "--db", str(db), *FREE_PORTS]) == 0
    report = capsys.readouterr().out
    assert f"all {len(crashed.acked)} acknowledged since the last clean stop are there" in report, report
    server = ServeProcess(db).start()
    assert server.stop() == 0, server.log()
    assert {name for (name,) in server.query("SELECT name FROM spans")} == crashed.acked
    # A clean stop checkpointed everything into the file: the next window counts nothing yet.
    record = read_record(record_path(db))
    assert record is not None and record.spans == 0 and record.window_start > TRACES


def test_a_torn_tail_that_was_never_acknowledged_is_accepted(crashed: Crashed, tmp_path: Path) -> None:
    """SIGKILL after DuckDB began writing the last commit, before its record and answer: the record
    counts one trace fewer and the WAL ends inside that commit. DuckDB drops the torn commit; nothing
    acknowledged is missing, so the server starts."""
    db = crashed.copy_to(tmp_path)
    record_path(db).write_bytes(crashed.acks_before_last)
    wal = Path(f"{db}.wal")
    data = wal.read_bytes()
    assert len(data) > crashed.wal_before_last
    wal.write_bytes(data[: (crashed.wal_before_last + len(data)) // 2])

    server = ServeProcess(db, extra_args=NO_COMPLETION).start()
    assert server.stop() == 0, server.log()
    stored = {name for (name,) in server.query("SELECT name FROM spans")}
    last = {name for name in crashed.acked if name.startswith(f"t{TRACES - 1}-")}
    assert stored == crashed.acked - last


def test_accept_wal_loss_starts_says_what_is_lost_and_the_next_start_compares_from_there(
    crashed: Crashed, tmp_path: Path
) -> None:
    db = crashed.copy_to(tmp_path)
    wal = bytearray(Path(f"{db}.wal").read_bytes())
    cut_to_half(wal)
    Path(f"{db}.wal").write_bytes(wal)
    held = _held_by_duckdb(db)

    server = ServeProcess(db, extra_args=("--accept-wal-loss",)).start()
    assert server.stop() == 0, server.log()
    assert f"{len(crashed.acked) - held} acknowledged span(s) are lost" in server.log()
    assert _serve_starts(db)


def _serve_starts(db: Path) -> bool:
    server = ServeProcess(db)
    server.start()
    return server.stop() == 0


def test_a_database_from_before_the_record_starts_and_says_there_is_nothing_to_compare(
    crashed: Crashed, tmp_path: Path
) -> None:
    db = crashed.copy_to(tmp_path)
    record_path(db).unlink()
    server = ServeProcess(db).start()
    assert server.stop() == 0, server.log()
    assert server.log().count("has no acknowledgement record yet") == 1
    assert read_record(record_path(db)) is not None


def test_a_record_that_cannot_be_read_or_written_stops_the_start_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    record_path(db).mkdir()  # neither readable nor replaceable as a file
    for extra in ((), ("--accept-wal-loss",)):
        result = subprocess.run(
            [sys.executable, "-m", "collector.cli", "serve", "--db", str(db), *FREE_PORTS, *extra],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and str(record_path(db)) in result.stderr, result.stderr


# ---- the record file itself ---------------------------------------------------------------------------


def test_a_torn_record_write_leaves_the_record_before_it(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb.acks"
    record = RecordFile(path, None)
    record.write(1, 5, 240)
    record.write(1, 6, 288)
    record.close()
    assert read_record(path) == AckRecord(1, 6, 288, generation=2)
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF  # generation 2 is in the slot at offset 0: torn
    path.write_bytes(data)
    assert read_record(path) == AckRecord(1, 5, 240, generation=1)
    data[4096 + 20] ^= 0xFF  # both torn: not something a crash of ours can leave
    path.write_bytes(data)
    with pytest.raises(RecordUnreadable):
        read_record(path)
    path.write_bytes(bytes(len(data)))  # never made whole: nothing was acknowledged under it
    assert read_record(path) is None


# ---- never an answer before the record is synced --------------------------------------------------------


def _span(name: str, trace_id: str) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=os.urandom(8).hex(),
        parent_span_id=None,
        name=name,
        kind=1,
        start_ns=1,
        end_ns=2,
        status_code=0,
        status_message="",
        attributes={},
        events=(),
        links=(),
        resource=SpanResource({}, "tests", ""),
    )


def test_a_record_that_cannot_be_synced_refuses_retryably_and_the_resend_is_acked(tmp_path: Path) -> None:
    """The record's write fails (here its descriptor is swapped for a read-only one: EBADF, as EIO or a
    full disk would fail it): the spans are committed, but the requests are answered retryably and the
    writer reports unhealthy; once the record can be written the client's re-send is acknowledged and
    the record counts every span the database holds."""
    db = tmp_path / "t.duckdb"
    connection = open_writer(db)
    acks = Acknowledgements.at_start(db)
    writer = Writer(connection, WriterSettings(probe_interval_s=0.05), acknowledgements=acks)
    answers: list[BaseException | None] = []
    spans = [_span(f"s{i}", "ab" * 16) for i in range(3)]

    def send() -> BaseException | None:
        answered = threading.Event()
        writer.submit(WriteJob(prepare_spans(spans), lambda e: (answers.append(e), answered.set())))
        assert answered.wait(10)
        return answers[-1]

    writer.start()
    try:
        working = acks._file._fd  # type: ignore[union-attr]
        broken = os.open(record_path(db), os.O_RDONLY)
        acks._file._fd = broken  # type: ignore[union-attr]
        refused = send()
        assert isinstance(refused, StoreUnavailable) and "acknowledgement" in str(refused), refused
        assert not writer.healthy
        unsynced = read_record(record_path(db))
        assert unsynced is not None and unsynced.spans == 0  # nothing claimed
        acks._file._fd = working  # type: ignore[union-attr]
        os.close(broken)
        deadline = time.monotonic() + 10
        while not writer.healthy and time.monotonic() < deadline:  # the probe writes the record again
            time.sleep(0.05)
        assert writer.healthy
        assert send() is None  # the re-send: found stored, acknowledged now
    finally:
        writer.stop()
        connection.close()
    record = read_record(record_path(db))
    assert record is not None and record.spans == 0  # the clean stop opened a new window
    with duckdb.connect(str(db), read_only=True) as reader:
        assert reader.execute("SELECT count(*) FROM spans").fetchall() == [(3,)]
