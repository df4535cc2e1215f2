"""`tracescore serve`: the writer, online scoring, both receivers and the APIs, and an orderly stop.

Stop order (SIGTERM/SIGINT): readiness fails and new OTLP requests get retryable refusals; the writer
drains its queue and completes every open run; online scoring finishes those runs; the history export
(--export-dir) writes what they added; watch streams get their last verdicts and end; the listeners
close; the database is checkpointed and closed.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from aiohttp import web

from collector.decode.pool import Preparer, auto_workers
from collector.receive.ingest import DEFAULT_INTAKE_BYTES, Ingest
from collector.receive.otlp_grpc import start_grpc
from collector.receive.otlp_http import HttpTimeouts, build_app, start_http
from collector.receive.security import Security, TokenInterceptor, http_middleware
from collector.serve._api_grpc import add_api
from collector.serve._api_http import HttpApi
from collector.serve._conventions_source import ConventionsSource
from collector.serve._export_settings import ExportSettings, points_at_own_listener
from collector.serve._history_export import HistoryExport
from collector.serve._hub import VerdictHub
from collector.serve._online import OnlineScorer
from collector.serve._services import Services
from collector.serve._spec_source import SpecSource
from collector.serve._verdict_writes import VerdictWrites
from collector.serve.memory import MemoryGuard, budget, describe, intake_bytes, layout, too_small
from collector.serve.ports import bind_problem
from collector.serve.settings import AUTO_WORKERS, ServeSettings, SettingError
from collector.serve.ui.routes import UiRoutes
from collector.store.acknowledged import Acknowledgements
from collector.store.database import open_writer
from collector.store.memory_settings import apply_memory_settings
from collector.store.partitions import Partitions
from collector.store.writer import CompletedTrace, Writer, WriterSettings
from scoring import ensure_verdict_schema

if TYPE_CHECKING:
    from collector.serve._verdict_export import VerdictExporter

log = logging.getLogger("tracescore.serve")


class BindError(RuntimeError):
    pass


class PluginError(RuntimeError):
    pass


@dataclass(slots=True)
class Running:
    services: Services
    grpc_server: grpc.aio.Server
    http_runner: web.AppRunner
    grpc_port: int
    http_port: int
    api_file: Path
    exporter: VerdictExporter | None

    @property
    def writer(self) -> Writer:
        return self.services.writer


def api_file_for(db: Path) -> Path:
    """Where a running serve records its API addresses, so `--db PATH` finds the server."""
    return db.with_name(db.name + ".api.json")


def load_plugins(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise PluginError(f"plugin {name!r} could not be imported: {type(exc).__name__}: {exc}") from exc


# Python's cyclic collector runs a pass every 700 net allocations and, from time to time, a full pass
# over every live object: with the traces retained in memory that full pass dominated the writer's
# time. Ingest allocates by the million but makes almost no cycles (reference counting frees it), so
# passes can be far rarer: measured on bench/ at full rate, 25 % less CPU per span and 30 % more
# spans/s (bench/README.md).
GC_THRESHOLDS = (100_000, 50, 1_000)

# The writer releases the GIL for every DuckDB statement and must get it back from the scorer and
# the event loop to go on; Python makes it wait up to the switch interval (5 ms by default) each
# time, and a write or completion is a dozen statements. Measured at 2,500 tool spans/s, two runs
# each, back to back: verdict lag p99 876 / 912 ms at 5 ms, 781 / 725 ms at 1 ms (bench/README.md).
SWITCH_INTERVAL_S = 0.001


async def start(settings: ServeSettings) -> Running:
    apply_memory_settings()  # before any thread of ours allocates and before workers are spawned
    gc.set_threshold(*GC_THRESHOLDS)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    load_plugins(settings.plugins)
    specs = SpecSource(list(settings.specs))  # a broken spec at start stops here, before anything opens
    conventions = ConventionsSource(list(settings.conventions))  # and a broken conventions file
    _check_addresses(settings)  # and a port in use, before the database file is opened or created
    memory = budget(settings.memory_limit)
    if memory is not None and (problem := too_small(memory)):
        log.warning(problem)
    if settings.export_dir is not None:
        _check_export_dir(settings.export_dir)
    wanted = auto_workers() if settings.decode_workers == AUTO_WORKERS else settings.decode_workers
    chosen = layout(memory, wanted)
    sized = chosen.sizes
    # Before DuckDB opens the file for writing (and may truncate a log it replayed only in part): a
    # database that lacks acknowledged spans stops the start here, with nothing changed.
    acknowledgements = Acknowledgements.at_start(settings.db, accept_loss=settings.accept_wal_loss)
    connection = open_writer(
        settings.db,
        memory_limit=f"{sized.duckdb_bytes}B",
        threads=sized.duckdb_threads,
        disk_reserve=settings.disk_reserve,
    )
    log.info(describe(memory, chosen))  # once the database opened: a start refused before says only why
    export = ExportSettings.from_environment(
        settings.export_endpoint or None, settings.export_protocol or None
    )
    if export is not None:
        own = points_at_own_listener(
            export, [(settings.grpc.host, settings.grpc.port), (settings.http.host, settings.http.port)]
        )
        if own is not None:
            log.warning(
                "not exporting verdicts to %s: that is this server's own OTLP listener (an "
                "OTEL_EXPORTER_OTLP_ENDPOINT meant for the agent?); --export-endpoint sends them elsewhere",
                own,
            )
            export = None
    exporter = None
    if export:
        from collector.serve._verdict_export import VerdictExporter  # the OTel SDK, only when exporting

        exporter = VerdictExporter(export)
    hub = VerdictHub(asyncio.get_running_loop())
    # Verdicts (online and `POST /api/v1/score`'s) are stored into the partition no checkpoint is
    # writing, as the writer's rows are: a commit held by a checkpoint would hold the writer's commits too
    # (collector/store/partitions.py).
    partitions = Partitions()
    verdict_writes = VerdictWrites(partitions)
    online = (
        OnlineScorer(
            connection.cursor(),
            specs,
            hub,
            exporter,
            grace_s=settings.grace_seconds,
            writes=verdict_writes,
        )
        if specs.paths or exporter
        else None
    )
    if online is None:  # `score` through the API stores verdicts whether or not serve scores online
        ensure_verdict_schema(connection)
    history = (
        HistoryExport(connection, settings.export_dir, settings.export_every, verdict_writes.lock)
        if settings.export_dir is not None
        else None
    )

    def completed(traces: list[CompletedTrace]) -> None:
        if online is not None:
            online.enqueue(traces)
        if exporter is not None:
            exporter.record_tool_durations(d for t in traces for d in t.tool_durations)

    writer = Writer(
        connection,
        WriterSettings(
            grace_s=settings.grace_seconds,
            idle_timeout_s=settings.idle_timeout_seconds,
            checkpoint_interval_s=settings.checkpoint_seconds,
            max_retained_bytes=sized.retained_trace_bytes,
            checkpoint_wal_bytes=sized.wal_trigger_bytes,
            disk_reserve_bytes=settings.disk_reserve,
        ),
        on_complete=completed,
        partitions=partitions,
        acknowledgements=acknowledgements,
    )
    if online is not None:
        online.start()
    writer.start()
    if history is not None:
        history.start()
    workers = chosen.workers
    preparer = Preparer(workers, GC_THRESHOLDS)  # its workers start with the first request
    ingest = Ingest(
        writer,
        max_backlog_spans=settings.max_backlog_spans,
        retry_after_s=settings.retry_after_seconds,
        preparer=preparer,
        memory_check=(
            MemoryGuard(memory, writer.shed_memory, preparer.worker_pids).over if memory is not None else None
        ),
        intake_bytes=intake_bytes(memory, workers) if memory is not None else DEFAULT_INTAKE_BYTES,
    )
    services = Services(
        connection,
        writer,
        ingest,
        specs,
        hub,
        online,
        verdict_writes=verdict_writes,
        history=history,
        conventions=conventions,
    )
    services.memory_limit_bytes = memory.limit_bytes if memory is not None else None
    conventions.start()
    security = Security(
        token=settings.auth_token or None,
        tls_cert=settings.tls_cert,
        tls_key=settings.tls_key,
        tls_client_ca=settings.tls_client_ca,
        allowed_hosts=frozenset(settings.allowed_hosts),
    )
    if settings.insecure_listen and not (settings.grpc.is_loopback and settings.http.is_loopback):
        log.warning(
            "listening on a non-loopback address%s%s (--insecure-listen)",
            "" if security.tls else " without TLS",
            "" if security.token else " without a token",
        )
    bound_hosts = frozenset({settings.grpc.host, settings.http.host})
    try:
        try:
            grpc_server, grpc_port = await start_grpc(
                ingest,
                str(settings.grpc),
                settings.max_request_bytes,
                lambda server: add_api(server, services),
                credentials=security.grpc_credentials(),
                interceptors=[TokenInterceptor(security)] if security.token else [],
            )
        except RuntimeError as exc:
            raise BindError(f"cannot listen for OTLP/gRPC on {settings.grpc}: {exc}") from exc
        if grpc_port == 0:
            raise BindError(f"cannot listen for OTLP/gRPC on {settings.grpc}: the address is in use")
        timeouts = HttpTimeouts(settings.http_header_timeout_seconds, settings.http_body_timeout_seconds)
        app = build_app(
            ingest, settings.max_request_bytes, [http_middleware(security, bound_hosts)], timeouts
        )
        api = HttpApi(services)
        api.routes(app)
        UiRoutes(services, api.read, settings.trace_url or None).add(app)  # the live UI (docs/ui.md)
        try:
            http_runner, http_port = await start_http(
                app, settings.http.host, settings.http.port, security.http_ssl_context(), timeouts
            )
        except OSError as exc:
            await grpc_server.stop(None)
            raise BindError(f"cannot listen for OTLP/HTTP on {settings.http}: {exc.strerror or exc}") from exc
    except BindError:
        await asyncio.to_thread(_stop_storage, services, exporter)
        connection.close()
        raise
    api_file = api_file_for(settings.db)
    api_file.write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "http": f"{'https' if security.tls else 'http'}://{_host(settings.http.host)}:{http_port}",
                "grpc": f"{_host(settings.grpc.host)}:{grpc_port}",
                "started_at": time.time(),
            }
        )
    )
    return Running(services, grpc_server, http_runner, grpc_port, http_port, api_file, exporter)


def _check_addresses(settings: ServeSettings) -> None:
    for what, address, flag, variable in (
        ("OTLP/gRPC", settings.grpc, "--grpc", "TRACESCORE_GRPC"),
        ("OTLP/HTTP and the API", settings.http, "--http", "TRACESCORE_HTTP"),
    ):
        problem = bind_problem(address)
        if problem is not None:
            raise BindError(
                f"cannot listen for {what} on {address} ({problem}): stop what listens there, or move "
                f"serve with {flag} HOST:PORT ({variable}); `tracescore doctor` checks every address"
            )


def _check_export_dir(directory: Path) -> None:
    """A directory the export cannot write would fail every cycle: refuse it at start instead."""
    probe = directory / "_tmp" / f".probe-{os.getpid()}"
    try:
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise SettingError(
            f"--export-dir {directory}: cannot write there ({exc.strerror or exc}); give a directory this "
            "user may write, or leave --export-dir out (TRACESCORE_EXPORT_DIR)"
        ) from exc


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _stop_storage(services: Services, exporter: VerdictExporter | None) -> None:
    """Drain and complete (writer), then score what completed (online), then flush the export."""
    services.ingest.preparer.close()  # requests already with the workers come back, and are refused
    if services.conventions is not None:
        services.conventions.stop()
    services.writer.stop()
    if services.online is not None:
        services.online.stop()
    if services.history is not None:  # last: what the stop completed and scored goes out too
        services.history.stop()
    if exporter is not None:
        exporter.shutdown()


async def stop(running: Running, grace_s: float = 10.0) -> None:
    services = running.services
    services.draining = True
    services.ingest.close("tracescore is shutting down")
    await asyncio.to_thread(_stop_storage, services, running.exporter)
    services.hub.close()
    await running.grpc_server.stop(grace_s)
    await running.http_runner.cleanup()
    services.connection.close()
    running.api_file.unlink(missing_ok=True)


async def serve(settings: ServeSettings, ready: asyncio.Event | None = None) -> None:
    # Handlers first: a SIGTERM that arrives once the listeners are up must stop cleanly (exit 0).
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    running = await start(settings)
    log.info(
        "tracescore serving: OTLP/gRPC %s:%d, OTLP/HTTP and API http://%s:%d, database %s",
        settings.grpc.host,
        running.grpc_port,
        settings.http.host,
        running.http_port,
        settings.db,
    )
    specs = running.services.specs.specs
    if specs:
        log.info("scoring online with %d spec(s): %s", len(specs), ", ".join(s.name for s in specs))
    if running.writer.replayed_traces:
        log.info("%d trace(s) from before the last stop will be completed", running.writer.replayed_traces)
    if ready is not None:
        ready.set()
    await stopping.wait()
    log.info("stopping: draining the queue, completing and scoring open runs")
    await stop(running)
    stats = running.writer.stats
    log.info(
        "stopped: %d spans stored (%d re-sent duplicates ignored), %d runs completed",
        stats.spans_stored,
        stats.spans_duplicate,
        stats.runs_completed,
    )
