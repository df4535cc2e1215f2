"""The bytes OTLP requests hold in memory from their admission to their answer, counted against a limit.

A request is counted before its body is read (HTTP: its `Content-Length`; a chunked or compressed body
as it is read and inflated) or decoded (gRPC: the body gRPC received), at a multiple of its body's
size: the body itself, the copy handed to a decode worker, the parsed message and the decoded spans
with their rows, held until the commit (measured with tracemalloc on bench/workload.py's requests:
decoding peaked at 6.6 times the body in Python objects for protobuf and 4.8 times for JSON, beside
the spans' Arrow rows at 1.4 times; `HELD_PER_BODY_BYTE` rounds that up). The resident-memory check
(collector/serve/memory.py) reads /proc every 0.25 s, too late for requests that arrive together:
before this count, concurrent legal-size bodies took a server with a 1 GB budget to 2.8 GB.

A request that does not fit waits its turn in the line (collector/receive/ingest.py), then is refused
retryably. One request alone always fits, so a body the limit cannot hold (up to `--max-request-mib`)
is taken, by itself, rather than refused for good.
"""

from __future__ import annotations

from dataclasses import dataclass

HELD_PER_BODY_BYTE = 8


def cost_of(body_bytes: int) -> int:
    """What a request with a body of this size holds in memory at its peak, estimated."""
    return max(0, body_bytes) * HELD_PER_BODY_BYTE


@dataclass(slots=True)
class Hold:
    """The bytes one request is counted for. Made by its receiver, filled by `Ingest.admit`, grown as a
    chunked body is read, given back by `Ingest.release` on every path (success, refusal, error,
    timeout, a client gone)."""

    wanted: int  # what admission reserves
    held: int = 0


class IntakeBytes:
    """The bytes held by admitted requests, against a limit."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.held_bytes = 0
        self.peak_bytes = 0

    def fits(self, more: int, own: int = 0) -> bool:
        """Whether `more` bytes fit now, for a request already holding `own` (alone, anything fits)."""
        return self.held_bytes - own <= 0 or self.held_bytes + more <= self.limit_bytes

    def take(self, hold: Hold, more: int) -> None:
        hold.held += more
        self.held_bytes += more
        self.peak_bytes = max(self.peak_bytes, self.held_bytes)

    def give_back(self, hold: Hold) -> None:
        self.held_bytes -= hold.held
        hold.held = 0
