"""bench/page_cache.py: mincore(2) sees a file's cached pages, and the drop empties the cache of a file
nobody maps; the server's libraries are found in this interpreter's site-packages."""

from __future__ import annotations

import os
from pathlib import Path

from bench.page_cache import cached_bytes, drop, library_files
from collector.serve.memory import MIB


def test_a_file_nobody_maps_is_dropped_from_the_page_cache(tmp_path: Path) -> None:
    path = tmp_path / "pages"
    with path.open("wb") as file:
        file.write(os.urandom(4 * MIB))
        file.flush()
        os.fsync(file.fileno())  # a dirty page is not dropped before it is written back
    assert cached_bytes(path) == 4 * MIB  # just written: every page is in the cache
    dropped = drop([path])
    assert dropped == {"library_files": 1, "library_cache_before_mb": 4.0, "library_cache_after_mb": 0.0}


def test_the_server_libraries_are_found() -> None:
    names = {path.name for path in library_files()}
    assert any(name.startswith("_duckdb") for name in names), names
    assert any(name.startswith("cygrpc") for name in names), names
