"""The conventions file of a running server (`--conventions`): loaded at start, reloaded when it changes,
by the machinery that reloads specs (collector/serve/_spec_source.py: a file is read once it has stood
still, and read again if it changed while read).

A broken file at start stops the start (exit 2, one line). A broken edit while serving is logged once,
in one line, and the last good conventions keep recognising; fixing the file puts it in force. The
conventions are installed in this process (collector/recognise/declared/active.py); the decode
workers get them with each request (collector/decode/pool.py).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from collector.recognise.declared import active
from collector.recognise.declared.errors import ConventionsError
from collector.serve._spec_source import Signature, load_settled, read_if_changed

log = logging.getLogger("tracescore.conventions")

_POLL_S = 1.0


class ConventionsSource:
    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.error: str | None = None
        self.reloads = 0
        self.failed_reloads = 0
        self._signature: Signature = ()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if paths:
            from collector.recognise.declared.files import load_conventions

            declared, self._signature = load_settled(paths, load_conventions, ConventionsError)
            active.install(declared)
            log.info("conventions from %s: %s", ", ".join(map(str, paths)), ", ".join(declared.names))

    def refresh(self) -> bool:
        """Reload if the file changed; True when the conventions in force changed."""
        if not self.paths:
            return False
        from collector.recognise.declared.files import load_conventions

        reading = read_if_changed(self.paths, self._signature, load_conventions, ConventionsError)
        if reading is None:
            return False
        self._signature = reading.signature
        if reading.refused is not None or reading.loaded is None:
            self.error = str(reading.refused)
            self.failed_reloads += 1
            log.error(
                "conventions reload failed, the last good conventions keep recognising: %s", reading.refused
            )
            return False
        declared = reading.loaded
        active.install(declared)
        self.error = None
        self.reloads += 1
        log.info("reloaded conventions: %s", ", ".join(declared.names))
        return True

    def start(self) -> None:
        """Poll the file on a thread of its own (the spec poll lives with online scoring, which a server
        with no specs does not run)."""
        if not self.paths or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._watch, name="tracescore-conventions", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(_POLL_S):
            try:
                self.refresh()
            except Exception:  # a failure to look must not end the watching
                log.exception("looking at the conventions file failed")
                time.sleep(_POLL_S)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
