"""`POST /api/v1/export`: one table of an export window as an Arrow IPC stream, for `tracescore export`
while the server holds the file.

The server never writes a path a client names: its DuckDB instance has no file access (a choice of
collector/store/database.py), and an API that wrote files would let any client with the token write
where the server may. It reads the rows, on a cursor of its own in a worker thread, one batch at a time,
and the CLI writes the files with the very code of an export from the file (collector/store/export.py).
A client that goes away stops the read.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import queue
import threading
from datetime import datetime

import duckdb
from aiohttp import web

from collector.model.arrow import pa
from collector.store.export import window_rows

ARROW_STREAM = "application/vnd.apache.arrow.stream"
_QUEUED_CHUNKS = 8  # batches read ahead of a slow client, at most
_PUT_WAIT_S = 0.5
_Item = bytes | BaseException | None


class _Chunks(io.RawIOBase):
    """A file Arrow's IPC writer writes into: each write is handed on, waiting while the queue is full."""

    def __init__(self, chunks: queue.Queue[_Item], cancelled: threading.Event) -> None:
        super().__init__()
        self._chunks = chunks
        self._cancelled = cancelled

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        hand_on(self._chunks, self._cancelled, bytes(data))
        return len(data)


def hand_on(chunks: queue.Queue[_Item], cancelled: threading.Event, item: _Item) -> None:
    while not cancelled.is_set():
        try:
            chunks.put(item, timeout=_PUT_WAIT_S)
            return
        except queue.Full:
            continue
    raise ConnectionAbortedError("the export's client went away")


def _produce(
    cursor: duckdb.DuckDBPyConnection,
    table: str,
    since: datetime | None,
    until: datetime | None,
    chunks: queue.Queue[_Item],
    cancelled: threading.Event,
) -> None:
    try:
        rows = window_rows(cursor, table, since, until)
        with pa.ipc.new_stream(_Chunks(chunks, cancelled), rows.schema) as writer:
            for batch in rows:
                writer.write_batch(batch)
        hand_on(chunks, cancelled, None)
    except ConnectionAbortedError:
        pass
    except BaseException as exc:
        with contextlib.suppress(ConnectionAbortedError):
            hand_on(chunks, cancelled, exc)
    finally:
        cursor.close()


async def stream_window(
    request: web.Request,
    connection: duckdb.DuckDBPyConnection,
    table: str,
    since: datetime | None,
    until: datetime | None,
) -> web.StreamResponse:
    chunks: queue.Queue[_Item] = queue.Queue(maxsize=_QUEUED_CHUNKS)
    cancelled = threading.Event()
    cursor = connection.cursor()
    producer = threading.Thread(
        target=_produce, args=(cursor, table, since, until, chunks, cancelled), daemon=True
    )
    producer.start()
    response: web.StreamResponse | None = None
    try:
        while True:
            item = await asyncio.to_thread(chunks.get)
            if isinstance(item, BaseException):
                if response is None:  # nothing sent yet: a plain error answer
                    return web.json_response({"error": f"export failed: {item}"}, status=500)
                break  # the client sees the stream end early, and says so
            if response is None:
                response = web.StreamResponse(headers={"Content-Type": ARROW_STREAM})
                await response.prepare(request)
            if item is None:
                await response.write_eof()
                break
            await response.write(item)
    finally:
        cancelled.set()  # a client gone (or an error): the producer stops at its next batch
        with contextlib.suppress(duckdb.Error):
            cursor.interrupt()
    return response if response is not None else web.json_response({"error": "export ended"}, status=500)
