"""One log line for a refused OTLP request, so a misconfigured exporter is visible from the terminal.

A request refused for its own sake (not decodable, a Content-Type or Content-Encoding we do not read,
too large) was only counted in /metrics (issue 28). Now it is logged at WARNING with the peer, the
protocol and the reason; an exporter retrying a bad request thousands of times a second must not flood
the log, so each (protocol, kind of refusal) logs at most once per `every_s`, and the next line says
how many like it were not logged in between.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("tracescore.receive")

EVERY_S = 10.0


class BadRequestLog:
    """Rate-limited warnings for refused requests, one clock per (protocol, kind). Runs on the event
    loop: no lock."""

    def __init__(self, protocol: str, every_s: float = EVERY_S, clock: Callable[[], float] = time.monotonic):
        self._protocol = protocol
        self._every_s = every_s
        self._clock = clock
        self._last: dict[str, float] = {}  # kind -> when it was last logged
        self._suppressed: dict[str, int] = {}  # kind -> refusals not logged since

    def refused(self, peer: str, kind: str, answer: str, reason: str) -> None:
        """`kind` groups refusals for the rate limit (e.g. "undecodable"); `answer` is what the client
        was told (e.g. "400", "INVALID_ARGUMENT"); `reason` the message it was sent."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self._every_s:
            self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
            return
        self._last[kind] = now
        suppressed = self._suppressed.pop(kind, 0)
        more = (
            f" ({suppressed} more refused as {kind} in the last {now - last:.0f} s, not logged)"
            if suppressed and last is not None
            else ""
        )
        log.warning(
            "refused a bad %s request from %s (%s): %s%s",
            self._protocol,
            peer or "unknown peer",
            answer,
            reason,
            more,
        )
