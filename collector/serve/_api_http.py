"""The HTTP API beside `/v1/traces`: health, readiness, runs, verdicts, task aggregates, spec status,
read-only SQL, scoring on demand (the CLI's `--server` mode), export windows, Prometheus metrics,
OpenAPI.

Every read runs on its own DuckDB cursor in a worker thread with a time limit, people's SQL in a lane of
threads of its own (collector/serve/_read_lanes.py); an export window streams for as long as its client
reads (collector/serve/_export_stream.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from aiohttp import web

from collector.serve import _queries as queries
from collector.serve._export_stream import stream_window
from collector.serve._hub import verdict_key
from collector.serve._metrics import render_metrics
from collector.serve._openapi import OPENAPI
from collector.serve._read_lanes import LaneFull, ReadLanes
from collector.serve._services import Services
from collector.serve._window_params import window_from_body, window_from_query
from collector.store.sql import SqlRefused
from scoring import aggregate
from scoring.report.build import BUCKETS, SECTIONS, ReportError, build_report, sections
from scoring.spec.window import group_values

if TYPE_CHECKING:
    from scoring import Spec

_QUERY_TIMEOUT_S = 10.0
_FELL_BEHIND = "this watcher fell too far behind and was disconnected; reconnect with existing=true"
_WATCH_LIVENESS_S = 1.0  # how often an idle watch stream checks that its client is still there
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        text=json.dumps(data, default=str), status=status, content_type="application/json", headers=headers
    )


def _problem(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


def _time(request: web.Request, name: str) -> datetime | None:
    value = request.query.get(name)
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)
    except ValueError as exc:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"{name}: expected an ISO 8601 time"}), content_type="application/json"
        ) from exc


def _int(request: web.Request, name: str, default: int | None) -> int | None:
    value = request.query.get(name)
    if value is None or value == "":
        return default
    if not value.isdigit() or int(value) < 1:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"{name}: expected a whole number ≥ 1"}),
            content_type="application/json",
        )
    return int(value)


def _specs(payload: Any) -> list[Spec]:
    # The spec models (pydantic, jsonschema, RE2) load with the first spec: never in a server given none.
    from pydantic import ValidationError

    from scoring import Spec

    raw = payload.get("specs") if isinstance(payload, dict) else None
    if not isinstance(raw, list) or not raw:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": "specs: expected a non-empty list of specs"}),
            content_type="application/json",
        )
    try:
        return [Spec.model_validate(item) for item in raw]
    except ValidationError as exc:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"invalid spec: {exc}"}), content_type="application/json"
        ) from exc


class HttpApi:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._lanes = ReadLanes()

    async def _read(self, read: Callable[[Any], Any], timeout_s: float = _QUERY_TIMEOUT_S) -> Any:
        """The API's own reads, on their lane: people's SQL cannot take their threads."""
        connection = self._services.connection
        return await self._lanes.read(lambda: queries.with_cursor(connection, read, timeout_s))

    read = _read  # the live UI's reads (collector/serve/ui/routes.py) take the same lane

    async def _work(self, work: Callable[[Any], Any], timeout_s: float) -> Any:
        """Scoring and reports on demand (minutes at most): asyncio's default threads."""
        return await asyncio.to_thread(queries.with_cursor, self._services.connection, work, timeout_s)

    async def _close(self, app: web.Application) -> None:
        self._lanes.close()

    def routes(self, app: web.Application) -> None:
        app.on_cleanup.append(self._close)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/readyz", self.readyz)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/api/v1/openapi.json", self.openapi)
        app.router.add_get("/api/v1/runs", self.runs)
        app.router.add_get("/api/v1/verdicts", self.verdicts)
        app.router.add_get("/api/v1/verdicts/watch", self.watch)
        app.router.add_get("/api/v1/tasks", self.tasks)
        app.router.add_get("/api/v1/specs", self.specs)
        app.router.add_post("/api/v1/sql", self.sql)
        app.router.add_post("/api/v1/score", self.score)
        app.router.add_post("/api/v1/report", self.report)
        app.router.add_post("/api/v1/export", self.export)
        app.router.add_get("/api/v1/values", self.values)

    async def healthz(self, request: web.Request) -> web.Response:
        return _json({"status": "ok"})

    async def readyz(self, request: web.Request) -> web.Response:
        reason = self._services.not_ready_reason()
        if reason:
            return _json({"ready": False, "reason": reason}, 503)
        return _json({"ready": True})

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            text=render_metrics(self._services),
            content_type="text/plain",
            charset="utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
        )

    async def openapi(self, request: web.Request) -> web.Response:
        return _json(OPENAPI)

    async def runs(self, request: web.Request) -> web.Response:
        task, status = request.query.get("task"), request.query.get("status")
        since, limit = _time(request, "since"), _int(request, "limit", 1000) or 1000
        rows = await self._read(lambda c: queries.runs(c, task=task, status=status, since=since, limit=limit))
        return _json(rows)

    async def verdicts(self, request: web.Request) -> web.Response:
        q = request.query
        label = q.get("label")
        if label and label not in ("pass", "fail", "error"):
            return _problem(400, "label: expected pass, fail or error")
        filters: dict[str, Any] = {
            "run": q.get("run"),
            "task": q.get("task"),
            "spec": q.get("spec"),
            "label": label,
            "since": _time(request, "since"),
            "until": _time(request, "until"),
            "all_versions": q.get("all_versions", "").lower() in ("1", "true", "yes"),
            "limit": _int(request, "limit", 1000) or 1000,
        }
        return _json(await self._read(lambda c: queries.verdicts(c, **filters)))

    async def watch(self, request: web.Request) -> web.StreamResponse:
        """New verdicts as newline-delimited JSON, as they are judged (optionally the existing ones first)."""
        spec, run = request.query.get("spec") or None, request.query.get("run") or None
        existing = request.query.get("existing", "").lower() in ("1", "true", "yes")
        hub = self._services.hub
        subscription = hub.subscribe(spec, run)  # before reading what is stored: nothing falls between
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        seen: set[tuple[str, str, int]] = set()
        try:
            if existing:  # every stored match, not a first page: a watcher must not miss the ones between
                # Taken before the store is read: a verdict delivered and not yet stored is in one of them.
                unstored = hub.unstored(spec, run)
                for row in await self._read(lambda c: queries.verdicts(c, run=run, spec=spec, limit=None)):
                    seen.add((row["run_id"], row["spec"], row["run_version"]))
                    await response.write(json.dumps(row, default=str).encode() + b"\n")
                for pending in unstored:
                    key = verdict_key(pending.verdict)
                    if key not in seen:
                        seen.add(key)
                        await response.write(pending.text.encode() + b"\n")
            while True:
                if subscription.overflowed and subscription.queue.empty():
                    # The hub dropped this watcher for falling behind: say so instead of going quiet.
                    await response.write(json.dumps({"error": _FELL_BEHIND}).encode() + b"\n")
                    break
                try:
                    live = await asyncio.wait_for(subscription.queue.get(), _WATCH_LIVENESS_S)
                except TimeoutError:
                    # aiohttp does not cancel a handler whose client went away: without this look, a
                    # closed watcher stays subscribed (and counted) until a verdict for it comes.
                    if request.transport is None or request.transport.is_closing():
                        break
                    continue
                # Whatever else is already queued goes out in the same write: one chunk per batch of
                # verdicts, not one per verdict.
                batch = [live]
                while live is not None and not subscription.queue.empty():
                    live = subscription.queue.get_nowait()
                    batch.append(live)
                lines = []
                for item in batch:
                    if item is None:
                        break
                    # Only the stored rows sent above can come again (the hub sends each verdict version
                    # once), so only their keys are kept, each until its live copy is skipped: a watcher
                    # open for days does not accumulate every verdict it was sent.
                    if seen:
                        key = (item.verdict.run_id, item.verdict.spec, item.verdict.run_version)
                        if key in seen:
                            seen.discard(key)
                            continue
                    lines.append(item.text.encode() + b"\n")
                if lines:
                    await response.write(b"".join(lines))
                if batch[-1] is None:
                    break
        except (ConnectionResetError, asyncio.CancelledError):
            pass  # the watcher went away
        finally:
            hub.unsubscribe(subscription)
        return response

    async def tasks(self, request: web.Request) -> web.Response:
        task, spec, k = request.query.get("task"), request.query.get("spec"), _int(request, "k", None)
        results = await self._read(lambda c: queries.task_results(c, task=task, spec=spec, k=k))
        return _json([r.to_dict() for r in results])

    async def specs(self, request: web.Request) -> web.Response:
        source = self._services.specs
        return _json(
            {
                "paths": [str(p) for p in source.paths],
                "specs": [
                    {"name": s.name, "fingerprint": s.fingerprint, "spec": s.canonical()}
                    for s in source.specs
                ],
                "reload_error": source.error,
                "reloads": source.reloads,
                "failed_reloads": source.failed_reloads,
            }
        )

    async def _payload(self, request: web.Request) -> Any:
        try:
            return await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise web.HTTPBadRequest(
                text=json.dumps({"error": f"body is not JSON: {exc}"}), content_type="application/json"
            ) from exc

    async def sql(self, request: web.Request) -> web.Response:
        payload = await self._payload(request)
        query = payload.get("query") if isinstance(payload, dict) else None
        if not isinstance(query, str) or not query.strip():
            return _problem(400, 'expected {"query": "SELECT …"}')
        connection = self._services.connection
        # The time limit counts from arrival: a query that waited for a thread has what is left.
        deadline = time.monotonic() + _QUERY_TIMEOUT_S

        def run() -> dict[str, Any]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise queries.QueryTimeout(
                    f"no SQL thread came free within {_QUERY_TIMEOUT_S:g} s (other queries held them); "
                    "try again"
                )
            read = partial(queries.run_sql, sql=query)
            return queries.with_cursor(connection, read, left, limit_s=_QUERY_TIMEOUT_S)

        try:
            answer = await self._lanes.sql(run)
        except SqlRefused as exc:  # not read-only, not one statement, failed, or over the byte cap
            return _problem(400, str(exc))
        except queries.QueryTimeout as exc:
            return _problem(504, str(exc))
        except LaneFull as exc:
            return _json({"error": str(exc)}, 503, headers={"Retry-After": "1"})
        try:
            return _json(answer)
        except (TypeError, ValueError) as exc:  # a MAP keyed by dates or decimals: JSON keys are text
            return _problem(400, f"the answer holds a value JSON cannot carry ({exc}); cast it to VARCHAR")

    async def score(self, request: web.Request) -> web.Response:
        from scoring import score_runs  # loaded by `_specs` with the spec models

        payload = await self._payload(request)
        specs = _specs(payload)
        run, task, store = payload.get("run"), payload.get("task"), bool(payload.get("store", True))
        window = window_from_body(payload)

        def score(cursor: Any) -> list[dict[str, Any]]:
            verdicts = list(score_runs(cursor, specs, run_id=run, task_id=task, window=window))
            if store:
                self._services.verdict_writes.store(cursor, verdicts)
            return [v.to_dict() for v in verdicts]

        try:
            return _json(await self._work(score, timeout_s=300))
        except queries.QueryTimeout as exc:
            return _problem(504, str(exc))

    async def report(self, request: web.Request) -> web.Response:
        from scoring import score_runs  # loaded by `_specs` with the spec models

        payload = await self._payload(request)
        specs = _specs(payload)
        task, k = payload.get("task"), payload.get("k")
        if k is not None and (not isinstance(k, int) or k < 1):
            return _problem(400, "k: expected a whole number ≥ 1")
        window = window_from_body(payload)
        include = payload.get("include")
        if include is None:  # the original answer: the task results alone
            verdicts = await self._work(
                lambda c: list(score_runs(c, specs, task_id=task, window=window)), timeout_s=300
            )
            return _json([r.to_dict() for r in aggregate(verdicts, k=k)])
        bucket = payload.get("history_bucket", "auto")
        if not isinstance(include, list) or not all(isinstance(i, str) for i in include):
            return _problem(400, f"include: expected a list of {', '.join(SECTIONS)} or all")
        if not isinstance(bucket, str):
            return _problem(400, f"history_bucket: expected auto, {', '.join(BUCKETS)}")
        try:
            chosen = sections(include)
        except ReportError as exc:
            return _problem(400, f"include: {exc}")

        def build(cursor: Any) -> dict[str, Any]:
            verdicts = list(score_runs(cursor, specs, task_id=task, window=window))
            return build_report(
                cursor,
                specs,
                verdicts,
                task=task,
                k=k,
                include=chosen,
                history_bucket=bucket,
                windowed=not window.everything,
            ).to_dict()

        try:
            return _json(await self._work(build, timeout_s=300))
        except ReportError as exc:
            return _problem(400, f"history_bucket: {exc}")
        except queries.QueryTimeout as exc:
            return _problem(504, str(exc))

    async def values(self, request: web.Request) -> web.Response:
        """The values of one run attribute (`key`, default service.version) among the complete runs of a
        window, the most recently first seen first (`tracescore compare` without two values asks this)."""
        key = request.query.get("key") or "service.version"
        window, task = window_from_query(request), request.query.get("task") or None
        try:
            found = await self._read(lambda c: group_values(c, key, window, task_id=task))
        except queries.QueryTimeout as exc:
            return _problem(504, str(exc))
        return _json(
            [
                {
                    "value": v.value,
                    "n_runs": v.n_runs,
                    "first_start": v.first_start.isoformat(),
                    "last_start": v.last_start.isoformat(),
                }
                for v in found
            ]
        )

    async def export(self, request: web.Request) -> web.StreamResponse:
        """One table of docs/export.md's layout for a time window, as an Arrow IPC stream: how
        `tracescore export` exports while the server holds the file (the CLI writes the files)."""
        payload = await self._payload(request)
        if not isinstance(payload, dict) or payload.get("table") not in ("otel_traces", "scores"):
            return _problem(400, 'expected {"table": "otel_traces" or "scores", "since": …, "until": …}')
        window = []
        for name in ("since", "until"):
            value = payload.get(name)
            try:
                window.append(datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None)
            except (AttributeError, ValueError):
                return _problem(400, f"{name}: expected an ISO 8601 time")
        moments = [w.astimezone(UTC).replace(tzinfo=None) if w and w.tzinfo else w for w in window]
        return await stream_window(request, self._services.connection, payload["table"], *moments)
