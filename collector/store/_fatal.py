"""What to do when DuckDB invalidates the database: exit, so that the process is started again.

After a fatal error (a checkpoint that ran out of memory, an I/O error in the middle of one) DuckDB
refuses every later statement on the instance until it is opened again, and every cursor the server
holds belongs to that instance. Answering "retry later" for ever would leave a server that looks up
and stores nothing; exiting at once is what a SIGKILL does, which the crash loop proves loses no
acknowledged span (the WAL holds them: docs/reliability.md). A supervisor (systemd, Kubernetes, the
compose file's `restart:`) starts it again, and the exporters' retries reach the new process.
"""

from __future__ import annotations

import logging
import os

import duckdb

log = logging.getLogger("tracescore.writer")

# The exit status, as sysexits' EX_SOFTWARE: an internal error, not a usage error.
EXIT_STORAGE_INVALIDATED = 70


def invalidated(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.FatalException) or "database has been invalidated" in str(exc)


def exit_if_invalidated(exc: BaseException) -> None:
    """Ends the process when `exc` says DuckDB has invalidated the database; returns otherwise."""
    if not invalidated(exc):
        return
    log.critical(
        "DuckDB invalidated the database after a fatal error (%s); tracescore exits with status %d to be "
        "started again: every acknowledged span is in the file or its WAL, and unacknowledged requests "
        "are retried by their exporters",
        str(exc).splitlines()[0],
        EXIT_STORAGE_INVALIDATED,
    )
    logging.shutdown()
    os._exit(EXIT_STORAGE_INVALIDATED)
