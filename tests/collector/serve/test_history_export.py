"""History leaves the sidecar while it serves (`serve --export-dir`), and `tracescore export` works while
`serve` runs: real server, real OpenTelemetry SDK over OTLP, the Parquet read back with DuckDB.

The exported rows are compared with what the file holds once the server has stopped, read by the
one-off export's own queries: same rows, each once, over many export cycles, with a run re-opened by a
late span (its new spans and its version-2 verdict go out in later windows). A reader polls the export
directory all along and must never meet a file it cannot read whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import duckdb
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext

from collector.store.export import OTEL_TRACES, SCORES
from tests._otel import provider
from tests._server import ServeProcess

SPEC = "name: lookup\nexpected_tools: [lookup]\n"
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
WINDOW = ["1970-01-01", "2262-01-01"]
SCORE_KEY = "run_id, scorer, run_version"


def tool(name: str) -> dict[str, str]:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}


def send_runs(tracer: trace.Tracer, first: int, count: int) -> list[SpanContext]:
    roots = []
    for i in range(first, first + count):
        with tracer.start_as_current_span(f"run{i}", attributes=AGENT) as root:
            for name in ["lookup", "quote"] if i % 3 else ["quote"]:
                with tracer.start_as_current_span(f"run{i}-{name}", attributes=tool(name)):
                    pass
        roots.append(root.get_span_context())
    return roots


def exported(out: Path, table: str, order: str) -> list[tuple[Any, ...]]:
    """The rows of every file of one table, as written (partition columns from inside the files)."""
    files = f"read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)"
    with duckdb.connect() as connection:
        return connection.execute(f"SELECT * FROM {files} ORDER BY {order}").fetchall()


def stored(db: Path, query: str, order: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as connection:
        return connection.execute(f"SELECT * FROM ({query}) ORDER BY {order}", WINDOW).fetchall()


class Poller:
    """A reader of the export directory while it is written: every file under a final name must read
    whole (a partial file would fail Parquet's footer check)."""

    def __init__(self, out: Path) -> None:
        self._out = out
        self._stop = threading.Event()
        self.reads = 0
        self.failures: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        with duckdb.connect() as connection:
            while not self._stop.is_set():
                for file in [*self._out.glob("otel_traces/*/*/*"), *self._out.glob("scores/*/*/*")]:
                    try:
                        connection.execute("SELECT count(*) FROM read_parquet(?)", [str(file)]).fetchall()
                        self.reads += 1
                    except duckdb.IOException as exc:
                        if file.exists():  # removed in between is no partial read
                            self.failures.append(f"{file}: {exc}")
                    except duckdb.Error as exc:
                        self.failures.append(f"{file}: {exc}")
                self._stop.wait(0.01)


def test_every_completed_row_is_exported_once_over_many_cycles(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "history"
    server = ServeProcess(
        tmp_path / "sidecar.duckdb",
        extra_args=("--specs", str(spec), "--export-dir", str(out), "--export-every", "0.2"),
    ).start()
    try:
        with Poller(out) as poller:
            tp = provider(server, "grpc", service="shop agent")  # a space: made path-safe
            tracer = tp.get_tracer("tests")
            roots = []
            for burst in range(5):
                roots += send_runs(tracer, burst * 4, 4)
                tp.force_flush()
                time.sleep(0.7)  # grace (0.3 s) and an export cycle or two
            metrics = dict(line.rsplit(" ", 1) for line in _metrics(server).splitlines() if line[:1] != "#")
            assert float(metrics['tracescore_history_exported_rows_total{table="otel_traces"}']) > 0
            assert float(metrics['tracescore_history_exported_rows_total{table="scores"}']) > 0
            assert float(metrics["tracescore_history_export_failures_total"]) == 0
            # A late span re-opens the first run: its spans so far are exported already.
            late = trace.set_span_in_context(NonRecordingSpan(roots[0]))
            with tracer.start_as_current_span("run0-late-lookup", context=late, attributes=tool("lookup")):
                pass
            tp.force_flush()
            tp.shutdown()
            time.sleep(1.0)
            assert server.stop() == 0, server.log()
    finally:
        server.kill()

    assert not poller.failures, poller.failures[:5]
    assert poller.reads > 0
    assert not list((out / "_tmp").rglob("*.parquet"))

    spans = exported(out, "otel_traces", '"TraceId", "SpanId"')
    assert spans == stored(server.db, OTEL_TRACES, '"TraceId", "SpanId"')
    assert len(spans) == 20 + sum(2 if i % 3 else 1 for i in range(20)) + 1  # roots, tools, the late span
    keys = [(row[1], row[2]) for row in spans]
    assert len(set(keys)) == len(keys)
    assert {row[7] for row in spans} == {"shop_agent"}

    scores = exported(out, "scores", SCORE_KEY)
    assert scores == stored(server.db, SCORES, SCORE_KEY)
    assert len(scores) == 21  # 20 runs, and the re-opened one again
    versions: dict[str, list[int]] = {}
    for row in scores:
        versions.setdefault(row[0], []).append(row[10])
    assert sorted(versions.values()) == [[1]] * 19 + [[1, 2]]

    # Many cycles, each a window of its own files (part-<node>-<after>-<i>.parquet).
    windows = {file.name.rsplit("-", 1)[0] for file in (out / "otel_traces").rglob("*.parquet")}
    assert len(windows) >= 4, windows
    assert all(name.startswith("part-") for name in windows)


def _export(db: Path, out: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", "export", "--db", str(db), "--out", str(out), *more],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _metrics(server: ServeProcess) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def _failures(server: ServeProcess, name: str = "tracescore_history_export_failures_total") -> float:
    metrics = dict(line.rsplit(" ", 1) for line in _metrics(server).splitlines() if line[:1] != "#")
    return float(metrics[name])


LAST_SUCCESS = "tracescore_history_export_last_success_timestamp_seconds"  # what a stalled export shows


def _verdict_count(server: ServeProcess) -> int:
    url = f"http://127.0.0.1:{server.http_port}/api/v1/verdicts"
    with urllib.request.urlopen(url, timeout=10) as response:
        return len(json.loads(response.read()))


def test_tracescore_export_works_while_serve_runs_and_after(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    server = ServeProcess(tmp_path / "held.duckdb", extra_args=("--specs", str(spec))).start()
    try:
        tp = provider(server, "http", service="shop")
        send_runs(tp.get_tracer("tests"), 0, 9)
        tp.force_flush()
        tp.shutdown()
        deadline = time.monotonic() + 30
        while _verdict_count(server) < 9 and time.monotonic() < deadline:
            time.sleep(0.1)
        live = _export(server.db, tmp_path / "live")
        assert live.returncode == 0, live.stderr
        assert "exported 24 spans and 9 verdicts" in live.stdout
        # A window: only spans that started at or after --since (none here: all are older).
        empty = _export(server.db, tmp_path / "empty", "--since", "2262-01-01T00:00Z")
        assert empty.returncode == 0, empty.stderr
        assert "exported 0 spans and 0 verdicts" in empty.stdout
        assert server.stop() == 0, server.log()
    finally:
        server.kill()
    stopped = _export(server.db, tmp_path / "stopped")
    assert stopped.returncode == 0, stopped.stderr
    for table, order in (("otel_traces", '"TraceId", "SpanId"'), ("scores", SCORE_KEY)):
        rows = exported(tmp_path / "live", table, order)
        assert rows == exported(tmp_path / "stopped", table, order)
        assert rows == stored(server.db, OTEL_TRACES if table == "otel_traces" else SCORES, order)
    assert not (tmp_path / "live" / "_tmp").exists()


def _last_window(out: Path, table: str) -> tuple[int, list[Path]]:
    """The watermark the newest window of a table starts after, and its files."""
    files = list((out / table).rglob("*.parquet"))
    after = max(int(file.name.rsplit("-", 2)[1]) for file in files)
    return after, [file for file in files if int(file.name.rsplit("-", 2)[1]) == after]


def test_a_window_renamed_into_place_but_not_committed_is_written_again_not_twice(tmp_path: Path) -> None:
    """The state a SIGKILL between the rename and the watermark's commit leaves (the crash loop lands
    there only by chance): the newest windows' files in place, the watermarks still before them, and
    one more file of such a window in a partition the retry will not write (its rows since moved)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "history"
    args = ("--specs", str(spec), "--export-dir", str(out), "--export-every", "0.2")
    server = ServeProcess(tmp_path / "sidecar.duckdb", extra_args=args)
    for first in (0, 6):
        server.start()
        try:
            tp = provider(server, "grpc", service="shop")
            send_runs(tp.get_tracer("tests"), first, 6)
            tp.force_flush()
            tp.shutdown()
            time.sleep(1.0)
            assert server.stop() == 0, server.log()
        finally:
            server.kill()
        if first:
            break
        spans_after, span_files = _last_window(out, "otel_traces")
        scores_us, score_files = _last_window(out, "scores")
        stale = out / "scores" / "date=1999-01-01" / "ServiceName=moved" / score_files[0].name
        stale.parent.mkdir(parents=True)
        stale.write_bytes(score_files[0].read_bytes())
        with duckdb.connect(str(server.db)) as connection:
            for key, value in (("export_spans_seq", spans_after), ("export_scores_us", scores_us)):
                connection.execute("DELETE FROM tracescore_state WHERE key = ?", [key])
                connection.execute("INSERT INTO tracescore_state VALUES (?, ?)", [key, value])
        assert span_files and score_files

    assert not stale.exists()
    assert "removed 1 file(s) an interrupted export of this window left" in server.log()
    spans = exported(out, "otel_traces", '"TraceId", "SpanId"')
    assert spans == stored(server.db, OTEL_TRACES, '"TraceId", "SpanId"')
    assert len(spans) == 12 + sum(2 if i % 3 else 1 for i in range(12))
    scores = exported(out, "scores", SCORE_KEY)
    assert scores == stored(server.db, SCORES, SCORE_KEY)
    assert len(scores) == 12


def test_an_export_that_fails_is_retried_and_serving_goes_on(tmp_path: Path) -> None:
    """`otel_traces` made a plain file, so no window of spans can be published (as root too): the
    cycles fail and say so, ingest and scoring go on, and once the path is free again every row goes
    out once."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "history"
    server = ServeProcess(
        tmp_path / "sidecar.duckdb",
        extra_args=("--specs", str(spec), "--export-dir", str(out), "--export-every", "0.2"),
    ).start()
    try:
        (out / "otel_traces").write_text("in the way")
        tp = provider(server, "grpc", service="shop")
        tracer = tp.get_tracer("tests")
        send_runs(tracer, 0, 6)
        tp.force_flush()
        deadline = time.monotonic() + 30
        while _verdict_count(server) < 6 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _verdict_count(server) == 6  # scoring went on
        while _failures(server) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _failures(server) > 0
        stalled_since, failures = _failures(server, LAST_SUCCESS), _failures(server)
        while _failures(server) == failures and time.monotonic() < deadline:
            time.sleep(0.1)
        # Another cycle failed: the last success stays where it was.
        assert (_failures(server) > failures, _failures(server, LAST_SUCCESS)) == (True, stalled_since)
        (out / "otel_traces").unlink()
        send_runs(tracer, 6, 6)
        tp.force_flush()
        while _failures(server, LAST_SUCCESS) == stalled_since and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _failures(server, LAST_SUCCESS) > stalled_since
        tp.shutdown()
        time.sleep(1.0)
        assert server.stop() == 0, server.log()
    finally:
        server.kill()
    assert "history export of otel_traces to" in server.log()
    assert "failed (tried again in 0.2 s)" in server.log()
    spans = exported(out, "otel_traces", '"TraceId", "SpanId"')
    assert spans == stored(server.db, OTEL_TRACES, '"TraceId", "SpanId"')
    assert len(spans) == 12 + sum(2 if i % 3 else 1 for i in range(12))
    assert exported(out, "scores", SCORE_KEY) == stored(server.db, SCORES, SCORE_KEY)


def test_an_export_dir_that_cannot_be_written_is_refused_at_start(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = subprocess.run(
        [
            *(sys.executable, "-m", "collector.cli", "serve", "--db", str(tmp_path / "x.duckdb")),
            *("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--export-dir", str(blocker / "export")),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    assert f"--export-dir {blocker / 'export'}: cannot write there" in result.stderr
    assert not (tmp_path / "x.duckdb").exists()
