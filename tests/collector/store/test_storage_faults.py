"""Promise 5, storage faults are loud, not lossy.

- Disk full (a real one: the database on a 32 MiB tmpfs, filled up): every request gets a retryable
  answer (503 + Retry-After, UNAVAILABLE + RetryInfo) saying the disk is full, /readyz fails and says
  why, the server stays up however long the disk stays full (no checkpoint runs into it: one that did
  made DuckDB invalidate the database, and serve exit 70), no span of a refused request is stored, and
  once space returns the real exporter's retries are stored, without a restart. A start on a full disk
  says so in one line and exits 2; once space is freed the next start has every acknowledged span.
- An I/O error at commit (injected: DuckDB gives no portable way to provoke EIO): the same answers.
- A write-ahead log that cannot be replayed (corrupted after a SIGKILL) stops the server at start with
  exit code 2 and a message saying what to do; the .wal file is left exactly as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from collector.decode.prepare import prepare_spans
from collector.model.domain import Span
from collector.receive.ingest import Ingest
from collector.store.database import DatabaseError, open_writer
from collector.store.writer import StoreUnavailable, WriteJob, Writer, WriterSettings
from tests._raw import GrpcSender, get_json, post_http, request
from tests._server import ServeProcess
from tests._spans import domain_span

# ---- disk full, for real ------------------------------------------------------------------------

# The disk is 32 MiB: tracescore's reserve is made half of that, and checkpoints are asked for every
# half second (each would find the disk full, as the one that invalidated the database did).
_RESERVE = 16 * 1024 * 1024
_SMALL_DISK_ENV = {"TRACESCORE_DISK_RESERVE": "16MiB", "TRACESCORE_CHECKPOINT_SECONDS": "0.5"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the disk-full tests needs root (CI runs them as root)")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mount)],
        check=False,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {result.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)


def _free(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def _fill(path: Path, leave: int = 0) -> None:
    """Write zeros to `path` until no more than `leave` bytes stay free on its file system."""
    with path.open("ab", buffering=0) as filler:
        try:
            while _free(path.parent) > leave:
                filler.write(b"\0" * min(65536, max(4096, _free(path.parent) - leave)))
        except OSError:
            pass


def _wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class _Finished(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Any) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def _agent_spans(prefix: str, count: int) -> list[ReadableSpan]:
    """Finished spans of one trace from the real SDK, to hand to the real OTLP exporter."""
    finished = _Finished()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(finished))
    tracer = provider.get_tracer("tests.disk_full")
    with tracer.start_as_current_span(f"{prefix}-root"):
        for i in range(count - 1):
            with tracer.start_as_current_span(f"{prefix}-{i}") as span:
                span.set_attribute("padding", "x" * 2_000)
    provider.shutdown()
    return finished.spans


def _not_ready_for_disk(port: int) -> bool:
    status, body = get_json(port, "/readyz")
    return status == 503 and "disk full" in body["reason"]


def test_disk_full_is_refused_retryably_while_serve_stays_up_and_resumes_by_itself(
    small_disk: Path, tmp_path: Path
) -> None:
    server = ServeProcess(small_disk / "t.duckdb", log_path=tmp_path / "serve.log", env=_SMALL_DISK_ENV)
    server.start()
    grpc_sender = GrpcSender(server.grpc_endpoint)
    exporter = OTLPSpanExporter(endpoint=server.grpc_endpoint, insecure=True, timeout=30)
    assert server.process is not None
    try:
        exported = _agent_spans("before", 5)
        assert exporter.export(exported) is SpanExportResult.SUCCESS
        stored_before, names_before = request([f"raw-before-{i}" for i in range(5)])
        assert post_http(server.http_port, stored_before).kind == "ok"

        # The disk fills while nothing is sent: readiness says so within the probe's second. Below the
        # reserve first, with room left for a checkpoint that may be running as it fills; to the last
        # byte once checkpoints wait. (Filled at once, a checkpoint running then finds the disk full,
        # and DuckDB invalidates the database: what the reserve is there to make unlikely.)
        _fill(small_disk / "filler", leave=_RESERVE * 3 // 4)
        _wait_for(lambda: _not_ready_for_disk(server.http_port), "/readyz to say the disk is full")
        _wait_for(lambda: "checkpoints wait until the disk has room" in server.log(), "checkpoints to wait")
        _fill(small_disk / "filler")
        assert _free(small_disk) < 64 * 1024

        # Requests in flight together (one group commit or several): all refused, retryably.
        bodies = [request([f"full-{k}-{i}" for i in range(20)]) for k in range(4)]
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda b: post_http(server.http_port, b[0]), bodies))
        assert all(a.kind == "retryable" and a.code == "503" and a.retry_after for a in answers), answers
        assert all("disk full" in a.message for a in answers), answers
        retried_body, retried_names = request([f"retried-{i}" for i in range(20)], padding=20_000)
        by_grpc = grpc_sender.send(retried_body)
        assert (by_grpc.kind, by_grpc.code) == ("retryable", "UNAVAILABLE") and by_grpc.retry_after, by_grpc

        # The real exporter is refused and retries (RetryInfo: 1 s). Meanwhile checkpoints come due
        # every half second, and the server stays up, alive and not ready, as long as the disk is full.
        during = _agent_spans("during", 20)
        with ThreadPoolExecutor(1) as pool:
            export_during = pool.submit(exporter.export, during)
            held_until = time.monotonic() + 2.5
            while time.monotonic() < held_until:
                assert server.process.poll() is None, server.log()
                assert _not_ready_for_disk(server.http_port)
                assert get_json(server.http_port, "/healthz")[0] == 200
                time.sleep(0.2)
            assert not export_during.done(), "the exporter stopped retrying while the disk was full"

            (small_disk / "filler").unlink()
            assert export_during.result(timeout=20) is SpanExportResult.SUCCESS
        exported += during
        _wait_for(lambda: get_json(server.http_port, "/readyz")[0] == 200, "/readyz to pass again")
        after = _agent_spans("after", 5)
        assert exporter.export(after) is SpanExportResult.SUCCESS  # and it keeps working
        exported += after
        assert grpc_sender.send(retried_body).kind == "ok"  # a raw client's retry, same spans
        assert post_http(server.http_port, retried_body).kind == "ok"  # and once more: a duplicate
    finally:
        grpc_sender.close()
        exporter.shutdown()
    assert server.stop() == 0, server.log()

    log = server.log()
    assert "invalidated" not in log, log
    assert log.count("spans are refused, retryably, until space is freed") == 1, log  # said once
    rows = dict(server.query("SELECT name, count(*) FROM spans GROUP BY name"))
    expected = [s.name for s in exported] + names_before + retried_names
    assert rows == dict.fromkeys(expected, 1), "an acknowledged span is missing or a refused one stored"


def test_a_start_on_a_full_disk_says_so_in_one_line_exits_2_and_loses_nothing(
    small_disk: Path, tmp_path: Path
) -> None:
    db = small_disk / "t.duckdb"
    server = ServeProcess(db, log_path=tmp_path / "serve.log", env=_SMALL_DISK_ENV).start()
    exporter = OTLPSpanExporter(endpoint=server.grpc_endpoint, insecure=True, timeout=10)
    spans = _agent_spans("acked", 10)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    server.kill()  # the acknowledged spans are in the WAL only
    _fill(small_disk / "filler")

    refused = _serve(db, {"TRACESCORE_DISK_RESERVE": "16MiB"})
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr
    lines = [line for line in refused.stderr.splitlines() if "disk" in line]
    assert len(lines) == 1, refused.stderr
    assert "disk full: 0.0 MiB free" in lines[0] and "Free space on that disk" in lines[0], lines
    # With no reserve, DuckDB finds the disk full as it opens the file: the same one-line refusal.
    with pytest.raises(DatabaseError, match=r"No space left on device.*Free space on that disk"):
        open_writer(db, disk_reserve=0)

    (small_disk / "filler").unlink()
    server = ServeProcess(db, log_path=tmp_path / "serve.log", env=_SMALL_DISK_ENV).start()
    assert server.stop() == 0, server.log()
    assert {r[0] for r in server.query("SELECT name FROM spans")} == {s.name for s in spans}


# ---- an I/O error at commit, injected --------------------------------------------------------------


class FailingCommits:
    """A DuckDB connection whose commits fail with an I/O error while `failing` is set."""

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        self._connection = connection
        self.failing = False

    def commit(self) -> Any:
        if self.failing:
            raise duckdb.IOException('IO Error: Could not write file "t.duckdb.wal": Input/output error')
        return self._connection.commit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def _span(name: str, trace_id: str) -> Span:
    return domain_span(trace_id, os.urandom(8).hex(), name=name, start_ns=1, end_ns=2)


def test_an_io_error_at_commit_refuses_the_whole_batch_and_recovers(tmp_path: Path) -> None:
    connection = open_writer(tmp_path / "io.duckdb")
    flaky = FailingCommits(connection)
    writer = Writer(flaky, WriterSettings(probe_interval_s=0.05))  # type: ignore[arg-type]
    ingest = Ingest(writer, max_backlog_spans=10_000, retry_after_s=1)
    answers: dict[str, BaseException | None] = {}

    def submit(name: str) -> None:
        spans = [_span(f"{name}-{i}", os.urandom(16).hex()) for i in range(3)]
        writer.submit(WriteJob(prepare_spans(spans), lambda e: answers.__setitem__(name, e)))

    try:
        flaky.failing = True
        for name in ("a", "b", "c"):  # queued together: one group commit
            submit(name)
        writer.start()
        _wait_for(lambda: len(answers) == 3, "answers")
        assert all(
            isinstance(e, StoreUnavailable) and "Input/output error" in str(e) for e in answers.values()
        )
        assert not writer.healthy
        refusal = ingest.refusal()
        assert refusal is not None and "storage is failing" in refusal
        time.sleep(0.2)
        assert not writer.healthy  # the probes fail too while the fault lasts

        flaky.failing = False
        _wait_for(lambda: writer.healthy, "the probe to find storage writable")
        assert ingest.refusal() is None
        submit("d")
        _wait_for(lambda: "d" in answers, "the answer after recovery")
        assert answers["d"] is None
    finally:
        writer.stop()
        names = {r[0][0] for r in connection.execute("SELECT name FROM spans").fetchall()}
        connection.close()
    assert names == {"d"}, "a span of a refused batch was stored"


# ---- a write-ahead log that cannot be replayed ---------------------------------------------------------


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database whose server was SIGKILLed: its acknowledged spans exist only in the WAL."""
    db = tmp_path_factory.mktemp("crashed") / "t.duckdb"
    server = ServeProcess(db, extra_args=("--grace-seconds", "600")).start()
    for k in range(4):
        assert post_http(server.http_port, request([f"s{k}-{i}" for i in range(50)])[0]).kind == "ok"
    server.kill()
    assert Path(f"{db}.wal").stat().st_size > 0
    return db


def _flip_middle(data: bytearray) -> None:
    # Four places, not one: where the WAL's entries fall depends on what was stored. Since schema
    # version 2 (a column more), damage at the middle alone was replayed without an error in 1 start
    # of 6: DuckDB did not check the bytes it fell on. Four places were refused in 12 starts of 12.
    for fraction in (4, 2):
        for start in (len(data) // fraction, len(data) - len(data) // fraction):
            data[start : start + 64] = bytes(b ^ 0xFF for b in data[start : start + 64])


def _flip_start(data: bytearray) -> None:
    data[8:72] = bytes(b ^ 0xFF for b in data[8:72])


def _zero_head(data: bytearray) -> None:
    # What a file system can leave after a power loss: blocks allocated but never written. DuckDB
    # itself would take this WAL for empty and overwrite it; tracescore refuses it.
    data[:4096] = bytes(min(4096, len(data)))


def _serve(db: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "serve",
            "--db",
            str(db),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    "damage", [_flip_middle, _flip_start, _zero_head], ids=["checksum", "header", "zeroed"]
)
def test_a_wal_that_cannot_be_replayed_stops_the_start_and_is_kept(
    crashed: Path, tmp_path: Path, damage: Callable[[bytearray], None]
) -> None:
    db = tmp_path / "t.duckdb"
    shutil.copy(crashed, db)
    shutil.copy(Path(f"{crashed}.acks"), Path(f"{db}.acks"))  # what serve acknowledged (promise 10)
    wal = Path(f"{db}.wal")
    data = bytearray(Path(f"{crashed}.wal").read_bytes())
    damage(data)
    wal.write_bytes(data)

    started = time.monotonic()
    result = _serve(db)
    assert result.returncode == 2, result.stderr
    assert time.monotonic() - started < 30
    message = result.stderr
    assert "Traceback" not in message
    assert f"{wal} could not be replayed" in message and "Nothing was deleted" in message, message
    assert f"move {wal} aside" in message and "start again with --accept-wal-loss" in message, message
    assert wal.read_bytes() == data  # kept, untouched

    if damage is _flip_middle:  # the advice works: with the WAL moved aside, the server starts
        wal.rename(tmp_path / "kept.wal")
        # The acknowledged spans went with it: a plain start says so (promise 10), the flag accepts it.
        refused = _serve(db)
        assert refused.returncode == 2 and "acknowledged span(s) are not in the database" in refused.stderr
        server = ServeProcess(db, extra_args=("--accept-wal-loss",)).start()
        assert server.stop() == 0


@pytest.mark.parametrize("suffix", [".checkpoint.wal", ".recovery.wal"])
def test_a_zeroed_log_of_a_concurrent_checkpoint_stops_the_start_too(
    crashed: Path, tmp_path: Path, suffix: str
) -> None:
    """DuckDB >= 1.5 writes commits made during a checkpoint to `<db>.checkpoint.wal` and folds it back
    through `<db>.recovery.wal`; a zeroed head there would be taken for an empty log, as in `<db>.wal`."""
    db = tmp_path / "t.duckdb"
    shutil.copy(crashed, db)
    shutil.copy(Path(f"{crashed}.wal"), Path(f"{db}.wal"))
    log = Path(f"{db}{suffix}")
    data = bytearray(Path(f"{crashed}.wal").read_bytes())
    _zero_head(data)
    log.write_bytes(data)

    result = _serve(db)
    assert result.returncode == 2, result.stderr
    assert f"{log} could not be replayed" in result.stderr and f"move {log} aside" in result.stderr
    assert log.read_bytes() == data
