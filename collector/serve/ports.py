"""Whether an address can be listened on, asked before anything else starts.

`serve` asks before it opens (or creates) the database file, so a port in use costs one clear line
and leaves nothing behind; `tracescore doctor` asks the same question of every address serve needs.
"""

from __future__ import annotations

import socket

from collector.serve.settings import Address


def bind_problem(address: Address) -> str | None:
    """Why nothing could listen on this address now (e.g. `Address already in use`), or None.

    The probe binds with SO_REUSEADDR, as listeners do, so a port left in TIME_WAIT by a server that
    just stopped is free, and only a socket still bound there is reported."""
    if address.port == 0:
        return None
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address.host, address.port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None
