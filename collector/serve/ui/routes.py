"""The live UI's routes: its static pages at `/` and `/ui/…`, and the read-only JSON they ask for.

The pages are files shipped with the package, read once at start and served with a Content-Security-
Policy that lets them load and ask nothing but this server (no inline script or style, no other
origin). They hold no data: they load without the token, and every JSON route below needs it as the
rest of the API does (collector/receive/security.py); the page sends it from the browser tab's
sessionStorage, never in a URL.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from aiohttp import web

from collector.serve._queries import QueryTimeout
from collector.serve._services import Services
from collector.serve.ui import _details as details
from collector.serve.ui import _reads as reads
from scoring.report.build import BUCKETS
from scoring.spec.window import parse_where

Read = Callable[[Callable[[Any], Any]], Awaitable[Any]]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'"
)
STATIC_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _static_files() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("collector.serve.ui") / "static"
    found = {}
    for item in folder.iterdir():
        suffix = "." + item.name.rpartition(".")[2]
        if item.is_file() and suffix in STATIC_TYPES:
            found[item.name] = (item.read_bytes(), STATIC_TYPES[suffix])
    return found


def _bad(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=json.dumps({"error": message}), content_type="application/json")


def _moment(request: web.Request, name: str) -> datetime | None:
    value = request.query.get(name)
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise _bad(f"{name}: expected an ISO 8601 time, got {value!r}") from exc
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data, default=str), status=status, content_type="application/json")


def run_filter(request: web.Request) -> reads.RunFilter:
    q = request.query
    label = q.get("label") or None
    if label not in (None, "pass", "fail", "error"):
        raise _bad("label: expected pass, fail or error")
    where = []
    for text in q.getall("where", []):
        if not text:
            continue
        try:
            where.append(parse_where(text))
        except ValueError as exc:
            raise _bad(f"where: {exc}") from exc
    if q.get("version"):
        where.append(("service.version", q["version"]))
    since, until = _moment(request, "since"), _moment(request, "until")
    if since is not None and until is not None and since >= until:
        raise _bad("since must be before until")
    return reads.RunFilter(
        task=q.get("task") or None,
        spec=q.get("spec") or None,
        label=label,
        service=q.get("service") or None,
        since=since,
        until=until,
        where=tuple(where),
    )


class UiRoutes:
    def __init__(self, services: Services, read: Read, trace_url: str | None) -> None:
        self._services = services
        self._read = read
        self._trace_url = trace_url
        self._files = _static_files()

    async def _answer(self, read: Callable[[Any], Any]) -> Any:
        try:
            return await self._read(read)
        except QueryTimeout as exc:
            raise web.HTTPGatewayTimeout(
                text=json.dumps({"error": str(exc)}), content_type="application/json"
            ) from exc

    def add(self, app: web.Application) -> None:
        app.router.add_get("/", self.index)
        app.router.add_get("/ui/{name}", self.static)
        app.router.add_get("/api/v1/ui", self.config)
        app.router.add_get("/api/v1/runs/page", self.runs_page)
        app.router.add_get("/api/v1/run", self.run)
        app.router.add_get("/api/v1/task", self.task)
        app.router.add_get("/api/v1/conversation", self.conversation)

    def _file(self, name: str) -> web.Response:
        found = self._files.get(name)
        if found is None:
            raise web.HTTPNotFound(text="no such page")
        body, content_type = found
        return web.Response(body=body, content_type=content_type, charset="utf-8", headers=_HEADERS)

    async def index(self, request: web.Request) -> web.Response:
        return self._file("index.html")

    async def static(self, request: web.Request) -> web.Response:
        return self._file(request.match_info["name"])

    async def config(self, request: web.Request) -> web.Response:
        """What the pages need once: the trace link template and the specs in force."""
        return _json({"trace_url": self._trace_url, "specs": [s.name for s in self._services.specs.specs]})

    async def runs_page(self, request: web.Request) -> web.Response:
        chosen = run_filter(request)
        after_text = request.query.get("after")
        try:
            after = reads.Cursor.parse(after_text) if after_text else None
        except ValueError as exc:
            raise _bad("after: expected the `next` of the page before") from exc
        limit_text = request.query.get("limit", "50")
        if not limit_text.isdigit() or not 1 <= int(limit_text) <= reads.MAX_PAGE:
            raise _bad(f"limit: expected a whole number from 1 to {reads.MAX_PAGE}")
        limit = int(limit_text)
        return _json(await self._answer(lambda c: reads.runs_page(c, chosen, after, limit)))

    def _required(self, request: web.Request, name: str) -> str:
        value = request.query.get(name)
        if not value:
            raise _bad(f"{name}: required")
        return value

    async def run(self, request: web.Request) -> web.Response:
        run_id = self._required(request, "run")
        found = await self._answer(lambda c: details.run_detail(c, run_id))
        if found is None:
            return _json({"error": f"no run {run_id!r} is stored"}, 404)
        return _json(found)

    async def task(self, request: web.Request) -> web.Response:
        task = self._required(request, "task")
        bucket = request.query.get("history_bucket") or "auto"
        if bucket != "auto" and bucket not in BUCKETS:
            raise _bad(f"history_bucket: expected auto, {', '.join(BUCKETS)}")
        return _json(await self._answer(lambda c: details.task_detail(c, task, bucket)))

    async def conversation(self, request: web.Request) -> web.Response:
        conversation_id = self._required(request, "conversation")
        found = await self._answer(lambda c: details.conversation_detail(c, conversation_id))
        if found is None:
            return _json({"error": f"no conversation {conversation_id!r} is stored"}, 404)
        return _json(found)
