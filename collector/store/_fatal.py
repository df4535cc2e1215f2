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


_INVALIDATED = "database has been invalidated"


def invalidated(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.FatalException) or _INVALIDATED in str(exc)


def cause(exc: BaseException) -> str:
    """DuckDB's own words for what went wrong, in one line: the earliest error of the chain that says
    more than "the database has been invalidated" (an error raised while handling the first one, such as
    a rollback's, says only that, issue 33), else the "Original error" DuckDB quotes in it."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    for error in reversed([e for e in chain if e is exc or isinstance(e, duckdb.Error)]):
        text = str(error)
        if _INVALIDATED not in text:
            return _first_line(text)
        original = text.partition("Original error:")[2].strip().strip('"')
        if original:
            return _first_line(original)
    return _first_line(str(exc))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def exit_if_invalidated(exc: BaseException) -> None:
    """Ends the process when `exc` says DuckDB has invalidated the database; returns otherwise."""
    if not invalidated(exc):
        return
    log.critical(
        "DuckDB invalidated the database after a fatal error (%s); tracescore exits with status %d to be "
        "started again: every acknowledged span is in the file or its WAL, and unacknowledged requests "
        "are retried by their exporters",
        cause(exc),
        EXIT_STORAGE_INVALIDATED,
    )
    logging.shutdown()
    os._exit(EXIT_STORAGE_INVALIDATED)
