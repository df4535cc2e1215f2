"""The acknowledgement record `<db>.acks`: how many spans the writer acknowledged, in a file of its own.

Why a file apart from DuckDB: DuckDB replays its write-ahead log up to the first entry it cannot read
and drops the rest without a word, taking it for a torn tail (issue 26); only a count kept outside the
log can show that what it dropped had been acknowledged.

What it holds: `spans`, the spans stored by the acknowledged commits whose ingest sequence numbers
are `window_start` or more, and `last_seq`, the newest of those commits. The window opens when the
record is made and again after each clean stop (whose checkpoint put everything in the database file).

Layout, chosen for the cost on every group commit: two 64-byte slots a page apart (offsets 0 and
4096), written in turn, each with a generation number and a CRC32. An update is one pwrite of 64 bytes
over bytes the file already has, then fdatasync: the size never changes, so the sync flushes one data
block and no metadata. (Write-to-temp and rename would cost a new inode, a rename and a directory sync
per commit.) A crash that tears a write spoils only the slot being written, whose CRC then fails, and
the other slot holds the record before it: exactly what had been acknowledged, since no answer is sent
before the sync returns. The slots are a page apart so that writing one never rewrites the other's
sector. The file itself is made once, complete, by write-to-temp, sync and rename.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

SUFFIX = ".acks"
_MAGIC = b"TSACKS01"
_BODY = struct.Struct("<8sQqqq")  # magic, generation, window_start, last_seq, spans
_CRC = struct.Struct("<I")
_SLOT_BYTES = _BODY.size + _CRC.size
_OFFSETS = (0, 4096)
_FILE_BYTES = _OFFSETS[-1] + _SLOT_BYTES
# fdatasync where the platform has it (not macOS): the data block without the file's times.
_datasync = getattr(os, "fdatasync", os.fsync)


class RecordUnreadable(RuntimeError):
    """The file exists, holds something, and neither slot is a valid record."""


@dataclass(frozen=True, slots=True)
class AckRecord:
    window_start: int
    last_seq: int
    spans: int
    generation: int = 0


def record_path(db: Path) -> Path:
    return db.with_name(db.name + SUFFIX)


def _slot(data: bytes, offset: int) -> AckRecord | None:
    raw = data[offset : offset + _SLOT_BYTES]
    if len(raw) < _SLOT_BYTES:
        return None
    body = raw[: _BODY.size]
    (crc,) = _CRC.unpack(raw[_BODY.size :])
    magic, generation, window_start, last_seq, spans = _BODY.unpack(body)
    if magic != _MAGIC or zlib.crc32(body) != crc:
        return None
    return AckRecord(window_start, last_seq, spans, generation)


def read_record(path: Path) -> AckRecord | None:
    """The newest valid slot; None when there is no record (no file, or one that is empty or all zeros:
    never made whole, so nothing was acknowledged under it)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordUnreadable(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if not any(data):
        return None
    slots = [s for s in (_slot(data, offset) for offset in _OFFSETS) if s is not None]
    if not slots:
        raise RecordUnreadable(f"{path}: neither copy of the acknowledgement record is readable")
    return max(slots, key=lambda s: s.generation)


def _encode(record: AckRecord) -> bytes:
    body = _BODY.pack(_MAGIC, record.generation, record.window_start, record.last_seq, record.spans)
    return body + _CRC.pack(zlib.crc32(body))


class RecordFile:
    """The open record; `write` returns once the new record is on disk."""

    def __init__(self, path: Path, current: AckRecord | None) -> None:
        """`current`: what the file holds now (None: there is no valid file, and it is made here)."""
        self.path = path
        self._generation = current.generation if current is not None else 0
        if current is None:
            self._create(AckRecord(1, 0, 0, 0))
        self._fd = os.open(path, os.O_RDWR)

    def _create(self, first: AckRecord) -> None:
        staged = self.path.with_name(self.path.name + ".tmp")
        data = bytearray(_FILE_BYTES)
        data[:_SLOT_BYTES] = _encode(first)
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, bytes(data))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.replace(staged, self.path)
        except OSError:
            staged.unlink(missing_ok=True)
            raise
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def write(self, window_start: int, last_seq: int, spans: int) -> None:
        self._generation += 1
        record = AckRecord(window_start, last_seq, spans, self._generation)
        os.pwrite(self._fd, _encode(record), _OFFSETS[self._generation % len(_OFFSETS)])
        _datasync(self._fd)

    def close(self) -> None:
        os.close(self._fd)
