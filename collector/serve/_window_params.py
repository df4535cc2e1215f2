"""The run window (`since`, `until`, `where`: scoring/spec/window.py) as the HTTP API takes it: in the
JSON body of `POST /api/v1/score` and `/api/v1/report`, and in the query of `GET /api/v1/values`.

`since` and `until` are ISO 8601 times (UTC unless they carry an offset); `where` is an object of
attribute key to a value or a list of values (any of them), as a spec's `select`, or in a query string
`where=KEY=VALUE`, repeatable. A malformed one is a 400 that names the field.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from scoring.spec.window import RunWindow, parse_where


def _bad(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=json.dumps({"error": message}), content_type="application/json")


def _moment(name: str, value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _bad(f"{name}: expected an ISO 8601 time")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise _bad(f"{name}: expected an ISO 8601 time, got {value!r}") from exc
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment


def _window(since: Any, until: Any, where: list[tuple[str, str]]) -> RunWindow:
    try:
        return RunWindow.of(_moment("since", since), _moment("until", until), where)
    except ValueError as exc:
        raise _bad(str(exc).replace("--", "")) from exc


def window_from_body(payload: Any) -> RunWindow:
    if not isinstance(payload, dict):
        return RunWindow()
    raw = payload.get("where") or {}
    if not isinstance(raw, dict):
        raise _bad('where: expected an object of attribute key to value(s), e.g. {"service.version": "1.4"}')
    where: list[tuple[str, str]] = []
    for key, wanted in raw.items():
        values = wanted if isinstance(wanted, list) else [wanted]
        if not key or not values or any(isinstance(v, dict | list) or v is None for v in values):
            raise _bad(f"where: {key!r}: expected a value or a non-empty list of values")
        where.extend((key, v if isinstance(v, str) else json.dumps(v)) for v in values)
    return _window(payload.get("since"), payload.get("until"), where)


def window_from_query(request: web.Request) -> RunWindow:
    where = []
    for text in request.query.getall("where", []):
        try:
            where.append(parse_where(text))
        except ValueError as exc:
            raise _bad(f"where: {exc}") from exc
    return _window(request.query.get("since"), request.query.get("until"), where)
