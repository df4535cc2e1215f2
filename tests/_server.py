"""A real `tracescore serve` process on free loopback ports, for end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class ServeProcess:
    db: Path
    grpc_port: int = 0  # 0: a free port, chosen here
    http_port: int = 0
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[str] | None = None
    log_path: Path | None = None
    # Run in the child before exec: moves the server into a memory cgroup (bench/cgroup.py).
    preexec: Callable[[], None] | None = None
    _ports_chosen: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        self._ports_chosen = not self.grpc_port and not self.http_port
        self.grpc_port = self.grpc_port or free_port()
        self.http_port = self.http_port or free_port()

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/v1/traces"

    def start(self, timeout_s: float = 30.0) -> ServeProcess:
        """Start and wait until both ports listen. A free port is only free when it is chosen: another
        process (a parallel test's server) can take it before serve binds it, so ports chosen here are
        chosen again, twice at most, when serve finds one taken at its first start."""
        first_start = self.process is None
        for attempt in range(3):
            try:
                return self._start(timeout_s)
            except RuntimeError as exc:
                if (
                    not (first_start and self._ports_chosen and "Address already in use" in str(exc))
                    or attempt == 2
                ):
                    raise
                self.grpc_port, self.http_port = free_port(), free_port()
        raise AssertionError("unreachable")

    def _start(self, timeout_s: float) -> ServeProcess:
        self.log_path = self.log_path or self.db.with_suffix(".log")
        args = [
            sys.executable,
            "-m",
            "collector.cli",
            "serve",
            "--db",
            str(self.db),
            "--grpc",
            self.grpc_endpoint,
            "--http",
            f"127.0.0.1:{self.http_port}",
            "--grace-seconds",
            "0.3",
            *self.extra_args,
        ]
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **self.env},
            preexec_fn=self.preexec,  # noqa: PLW1509 (it only writes its pid to a cgroup file)
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited with {self.process.returncode}:\n{self.log()}")
            if _listening(self.grpc_port) and _listening(self.http_port):
                return self
            time.sleep(0.05)
        raise TimeoutError(f"serve did not listen within {timeout_s}s:\n{self.log()}")

    def wake_decode_workers(self) -> None:
        """Send an empty OTLP/JSON request: decode workers start with a server's first request."""
        request = urllib.request.Request(
            self.http_url, b'{"resourceSpans": []}', {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path and self.log_path.exists() else ""

    def stop(self, timeout_s: float = 30.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows from the database file (the server must be stopped: DuckDB has one process per file)."""
        with duckdb.connect(str(self.db), read_only=True) as connection:
            return connection.execute(sql, params or []).fetchall()
