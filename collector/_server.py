"""`tracescore serve`: the writer, both receivers, and an orderly stop on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import logging
import signal
from dataclasses import dataclass

import grpc
from aiohttp import web

from collector._database import open_writer
from collector._grpc_receiver import start_grpc
from collector._http_receiver import build_app, start_http
from collector._ingest import Ingest
from collector._settings import ServeSettings
from collector._writer import Writer, WriterSettings

log = logging.getLogger("tracescore.serve")


class BindError(RuntimeError):
    pass


@dataclass(slots=True)
class Running:
    writer: Writer
    ingest: Ingest
    grpc_server: grpc.aio.Server
    http_runner: web.AppRunner
    grpc_port: int
    http_port: int


async def start(settings: ServeSettings) -> Running:
    connection = open_writer(settings.db, memory_limit=settings.memory_limit or None)
    writer = Writer(
        connection,
        WriterSettings(
            grace_s=settings.grace_seconds,
            idle_timeout_s=settings.idle_timeout_seconds,
            checkpoint_interval_s=settings.checkpoint_seconds,
        ),
    )
    writer.start()
    ingest = Ingest(
        writer, max_backlog_spans=settings.max_backlog_spans, retry_after_s=settings.retry_after_seconds
    )
    try:
        try:
            grpc_server, grpc_port = await start_grpc(ingest, str(settings.grpc), settings.max_request_bytes)
        except RuntimeError as exc:
            raise BindError(f"cannot listen for OTLP/gRPC on {settings.grpc}: {exc}") from exc
        if grpc_port == 0:
            raise BindError(f"cannot listen for OTLP/gRPC on {settings.grpc}: the address is in use")
        try:
            http_runner, http_port = await start_http(
                build_app(ingest, settings.max_request_bytes), settings.http.host, settings.http.port
            )
        except OSError as exc:
            await grpc_server.stop(None)
            raise BindError(f"cannot listen for OTLP/HTTP on {settings.http}: {exc.strerror or exc}") from exc
    except BindError:
        await asyncio.to_thread(writer.stop)
        raise
    return Running(writer, ingest, grpc_server, http_runner, grpc_port, http_port)


async def stop(running: Running, grace_s: float = 10.0) -> None:
    """Refuse new work (retryably), let in-flight requests finish, drain, complete runs, checkpoint."""
    running.ingest.close("tracescore is shutting down")
    await running.grpc_server.stop(grace_s)
    await running.http_runner.cleanup()
    await asyncio.to_thread(running.writer.stop)


async def serve(settings: ServeSettings, ready: asyncio.Event | None = None) -> None:
    running = await start(settings)
    grpc_host = settings.grpc.host
    http_host = settings.http.host
    log.info(
        "tracescore serving: OTLP/gRPC %s:%d, OTLP/HTTP http://%s:%d/v1/traces, database %s",
        grpc_host,
        running.grpc_port,
        http_host,
        running.http_port,
        settings.db,
    )
    if running.writer.replayed_traces:
        log.info("%d trace(s) from before the last stop will be completed", running.writer.replayed_traces)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    if ready is not None:
        ready.set()
    await stopping.wait()
    log.info("stopping: draining the queue and completing open runs")
    await stop(running)
    stats = running.writer.stats
    log.info(
        "stopped: %d spans stored (%d re-sent duplicates ignored), %d runs completed",
        stats.spans_stored,
        stats.spans_duplicate,
        stats.runs_completed,
    )
