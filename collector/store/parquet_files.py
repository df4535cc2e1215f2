"""Rows into hive-partitioned Parquet files that appear whole or not at all (docs/export.md, "Layout").

Rows arrive as an Arrow stream and are written by a DuckDB instance of their own, in memory: the
server's instance is locked down (no file access from SQL, collector/store/database.py), and a stream
keeps memory bounded however large the window. Files are written under a staging directory, synced,
then renamed into their partitions, and the partition directories are synced, so once `publish`
returns the files are durable under their final names and a reader never sees one half written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import duckdb

from collector.model.arrow import pa

PARTITIONS = '(date, "ServiceName")'
ROWS = "export_rows"  # what the rows are called in the query that writes them


def _fsync(path: Path, *, directory: bool = False) -> None:
    descriptor = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_staged(
    rows: pa.RecordBatchReader, staging: Path, pattern: str, query: str = f"SELECT * FROM {ROWS}"
) -> int:
    """Write the stream, selected by `query` (which reads it as `export_rows`), under `staging` as
    `date=…/ServiceName=…/<pattern>.parquet` (DuckDB's FILENAME_PATTERN: `{i}` a file's number, `{uuid}` a
    random UUID), synced; returns the number of rows (no file at all for none)."""
    staging.mkdir(parents=True, exist_ok=True)
    # One thread: the export runs beside ingest on a sidecar's few cores, and is never in a hurry.
    writer = duckdb.connect(config={"threads": 1})
    try:
        writer.register(ROWS, rows)
        ((count,),) = writer.execute(
            f"COPY ({query}) TO '{staging}' (FORMAT parquet, COMPRESSION zstd, "
            f"PARTITION_BY {PARTITIONS}, WRITE_PARTITION_COLUMNS true, "
            f"FILENAME_PATTERN '{pattern}', OVERWRITE_OR_IGNORE)"
        ).fetchall()
    finally:
        writer.close()
    for file in staging.rglob("*.parquet"):
        _fsync(file)
    return int(count)


def publish(staging: Path, target: Path) -> list[Path]:
    """Rename each staged file into its partition under `target` (replacing a file of the same name),
    then sync the directories that changed: the renames survive a crash once this returns."""
    published = []
    changed: set[Path] = set()
    for file in sorted(staging.rglob("*.parquet")):
        destination = target / file.relative_to(staging)
        for parent in reversed(destination.relative_to(target).parents):
            directory = target / parent
            if not directory.exists():
                directory.mkdir(parents=True, exist_ok=True)
                changed.add(directory.parent)
        os.replace(file, destination)
        published.append(destination)
        changed.add(destination.parent)
    for directory in sorted(changed):
        _fsync(directory, directory=True)
    return published


def remove_stale(target: Path, pattern: str, keep: list[Path]) -> list[Path]:
    """Delete the files under `target`'s partitions named like `pattern` that are not in `keep`: what an
    attempt at the same export window wrote before a crash, and the retry did not write again."""
    kept = set(keep)
    removed = [file for file in target.glob(f"*/*/{pattern}") if file not in kept]
    for file in removed:
        file.unlink(missing_ok=True)
    for directory in {file.parent for file in removed}:
        _fsync(directory, directory=True)
    return removed


def discard(staging: Path) -> None:
    """Remove a staging directory, and its parent when no other export is staging there."""
    shutil.rmtree(staging, ignore_errors=True)
    with contextlib.suppress(OSError):
        staging.parent.rmdir()
