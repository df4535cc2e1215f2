"""The CLI's side of "follow the data": find a running server for a database file, and talk to its API.

A running `serve` writes `<db>.api.json` (its API address and PID) beside the file it holds and removes
it when it stops; a file whose PID is gone is stale and ignored.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collector.model.arrow import pa
from collector.store.database import DatabaseError


class ServerError(RuntimeError):
    """The server answered with an error, or could not be reached; the message says which."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def discover(db: Path, server: str | None) -> str | None:
    """The HTTP API base URL to use, or None to open the file directly."""
    if server:
        return server.rstrip("/")
    api_file = db.with_name(db.name + ".api.json")
    try:
        info = json.loads(api_file.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not _alive(int(info.get("pid", 0))):
        return None
    return str(info["http"]).rstrip("/")


def _auth() -> dict[str, str]:
    """The server's bearer token, when it has one, from TRACESCORE_AUTH_TOKEN (as for `serve`)."""
    token = os.environ.get("TRACESCORE_AUTH_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def _request(base: str, path: str, payload: Any = None, timeout_s: float = 330.0) -> Any:
    data = json.dumps(payload).encode() if payload is not None else None
    headers = {"Content-Type": "application/json", **_auth()} if data is not None else _auth()
    request = urllib.request.Request(
        base + path, data=data, headers=headers, method="POST" if data else "GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error", exc.reason)
        except (json.JSONDecodeError, AttributeError):
            message = exc.reason
        raise ServerError(f"{base}{path}: {message}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise DatabaseError(f"cannot reach the tracescore server at {base}: {exc}") from exc


def post(base: str, path: str, payload: Any) -> Any:
    return _request(base, path, payload)


def get(base: str, path: str) -> Any:
    return _request(base, path)


def stream(base: str, path: str, timeout_s: float | None) -> Iterator[dict[str, Any]]:
    """Newline-delimited JSON objects from a streaming endpoint, as they arrive."""
    try:
        response = urllib.request.urlopen(
            urllib.request.Request(base + path, headers=_auth()), timeout=timeout_s
        )
    except urllib.error.HTTPError as exc:
        raise ServerError(f"{base}{path}: {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise DatabaseError(f"cannot reach the tracescore server at {base}: {exc}") from exc
    with response:
        for line in response:
            if line.strip():
                item = json.loads(line)
                if "error" in item and "run_id" not in item:
                    raise ServerError(f"{base}{path}: {item['error']}")
                yield item


def arrow_stream(base: str, path: str, payload: Any) -> pa.RecordBatchReader:
    """Rows from an endpoint that answers an Arrow IPC stream, read as they arrive."""
    request = urllib.request.Request(
        base + path,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **_auth()},
        method="POST",
    )
    try:
        response = urllib.request.urlopen(request, timeout=330.0)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise ServerError(
                f"{base}{path}: this server cannot export while it runs (older than this "
                "tracescore); stop it and export from the file"
            ) from exc
        try:
            message = json.loads(exc.read()).get("error", exc.reason)
        except (json.JSONDecodeError, AttributeError):
            message = exc.reason
        raise ServerError(f"{base}{path}: {message}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise DatabaseError(f"cannot reach the tracescore server at {base}: {exc}") from exc
    try:
        return pa.ipc.open_stream(response)
    except pa.ArrowInvalid as exc:
        raise ServerError(f"{base}{path}: the answer is not an Arrow stream ({exc})") from exc
