"""One way to run ClickHouse SQL, over two connections: the HTTP interface of a server, or ClickHouse's
own engine in this process (chDB) on a data directory.

Everything above this module writes the same SQL text and reads the same output format
(`JSONCompactEachRow`, one JSON array per row), so scoring from a server and from chDB is the same
code with a different connection. The HTTP client is the standard library's: a POST of the query text
to `/?database=…` with HTTP basic authentication, as ClickHouse's HTTP interface documents
(https://clickhouse.com/docs/interfaces/http).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

USER_ENV = "TRACESCORE_CH_USER"
PASSWORD_ENV = "TRACESCORE_CH_PASSWORD"
ROW_FORMAT = "JSONCompactEachRow"
# Every query reads and writes times in UTC, whatever the server's or this machine's zone.
_SETTINGS = {"session_timezone": "UTC", "date_time_input_format": "best_effort"}


def _short(message: str) -> str:
    """ClickHouse's message without the echo of the whole query it appends."""
    return message.split(" In scope ", 1)[0].split(". Stack trace", 1)[0][:500]


class ClickHouseError(RuntimeError):
    """ClickHouse refused a query or could not be reached: the message says which and why."""


class Connection(Protocol):
    """Runs one statement and returns ClickHouse's output bytes (nothing for statements without rows)."""

    @property
    def description(self) -> str: ...

    def run(self, sql: str) -> bytes: ...

    def close(self) -> None: ...


@dataclass
class HttpConnection:
    """ClickHouse's HTTP interface (`http://host:8123`, `https://…`); user and password from the URL or
    TRACESCORE_CH_USER / TRACESCORE_CH_PASSWORD."""

    base: str
    user: str | None
    password: str | None
    timeout_s: float = 300.0

    @property
    def description(self) -> str:
        return self.base

    def run(self, sql: str) -> bytes:
        query = urllib.parse.urlencode(_SETTINGS)
        request = urllib.request.Request(f"{self.base}/?{query}", data=sql.encode(), method="POST")
        if self.user is not None:
            token = base64.b64encode(f"{self.user}:{self.password or ''}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body: bytes = response.read()
                return body
        except urllib.error.HTTPError as exc:
            detail = _short(exc.read().decode(errors="replace").strip())
            raise ClickHouseError(f"ClickHouse at {self.base} answered {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ClickHouseError(f"cannot reach ClickHouse at {self.base}: {reason}") from exc

    def close(self) -> None:
        pass


class ChdbConnection:
    """ClickHouse's engine in this process on a data directory (`chdb:PATH`): no server needed."""

    def __init__(self, path: Path) -> None:
        try:
            from chdb import session
        except ImportError as exc:
            raise ClickHouseError(
                "chdb:PATH needs ClickHouse's embedded engine, chDB: from the top of the tracescore "
                "clone, pip install -e '.[clickhouse]' (tracescore is not published on PyPI), or pip "
                "install 'chdb>=4'"
            ) from exc
        self._description = f"chdb:{path}"
        path.mkdir(parents=True, exist_ok=True)
        try:
            self._session = session.Session(str(path))  # type: ignore[no-untyped-call]
        except Exception as exc:  # chdb raises its own error types, and RuntimeError for a busy path
            raise ClickHouseError(
                f"cannot open {self._description}: {exc} (chDB lets one process at a time use a data "
                "directory: is another one using it?)"
            ) from exc
        settings = ", ".join(f"{k} = '{v}'" for k, v in _SETTINGS.items())
        self.run(f"SET {settings}")

    @property
    def description(self) -> str:
        return self._description

    def run(self, sql: str) -> bytes:
        try:
            result = self._session.query(sql, ROW_FORMAT)  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise ClickHouseError(f"{self.description}: {_short(str(exc))}") from exc
        data: bytes = result.bytes() if result is not None else b""
        return data

    def close(self) -> None:
        self._session.close()  # type: ignore[no-untyped-call]


def connect(url: str) -> Connection:
    """`http://host:8123`, `https://…` or `chdb:PATH`; anything else is a clear error."""
    if url.startswith("chdb:"):
        path = url.removeprefix("chdb:")
        if not path:
            raise ClickHouseError("--clickhouse chdb:PATH needs a data directory, e.g. chdb:./ch-data")
        return ChdbConnection(Path(path))
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ClickHouseError(
            f"--clickhouse {url!r}: expected http://host:8123, https://host:8443 or chdb:PATH"
        )
    user = urllib.parse.unquote(parsed.username) if parsed.username else os.environ.get(USER_ENV)
    password = urllib.parse.unquote(parsed.password) if parsed.password else os.environ.get(PASSWORD_ENV)
    port = f":{parsed.port}" if parsed.port else ""
    base = f"{parsed.scheme}://{parsed.hostname}{port}{parsed.path.rstrip('/')}"
    return HttpConnection(base, user, password)


def rows(connection: Connection, sql: str) -> Iterator[list[Any]]:
    """The rows of a SELECT, each a list of column values as ClickHouse's JSON writes them."""
    for line in connection.run(f"{sql}\nFORMAT {ROW_FORMAT}").splitlines():
        if line.strip():
            yield orjson.loads(line)


def quote(text: str) -> str:
    """A ClickHouse string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def identifier(name: str) -> str:
    """A ClickHouse identifier (database or table name) in back quotes."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def insert_rows(
    connection: Connection, table: str, records: list[dict[str, Any]], *, token: str | None = None
) -> None:
    """INSERT … FORMAT JSONEachRow, the rows inline: the same text over HTTP and in chDB. With `token`,
    ClickHouse drops a repeat of an insert it already took (`insert_deduplication_token`)."""
    if not records:
        return
    body = "\n".join(json.dumps(r, ensure_ascii=False, default=str) for r in records)
    settings = f" SETTINGS insert_deduplication_token = {quote(token)}" if token else ""
    connection.run(f"INSERT INTO {table}{settings} FORMAT JSONEachRow\n{body}\n")


def table_exists(connection: Connection, database: str, table: str) -> bool:
    found = list(rows(connection, f"EXISTS TABLE {identifier(database)}.{identifier(table)}"))
    return bool(found and int(found[0][0]))
