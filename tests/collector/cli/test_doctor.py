"""`tracescore doctor` names what would stop `serve`, and what to do about it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests._server import ServeProcess, free_port


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", "doctor", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_a_fresh_setup_is_ok_and_a_missing_spec_fails(tmp_path: Path) -> None:
    ports = ("--grpc", f"127.0.0.1:{free_port()}", "--http", f"127.0.0.1:{free_port()}")
    fresh = _doctor("--db", str(tmp_path / "new.duckdb"), *ports)
    assert fresh.returncode == 0, fresh.stdout
    assert "does not exist yet; serve creates it" in fresh.stdout
    missing = _doctor("--db", str(tmp_path / "new.duckdb"), *ports, "--specs", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "FAIL  specs" in missing.stdout  # as serve exits on it


def test_a_running_server_and_a_taken_port_are_told_apart(server: ServeProcess) -> None:
    held = _doctor(
        "--db", str(server.db), "--grpc", server.grpc_endpoint, "--http", f"127.0.0.1:{server.http_port}"
    )
    assert held.returncode == 0, held.stdout
    assert f"held by a running tracescore serve (PID {server.process.pid})" in held.stdout
    other_db = server.db.with_name("other.duckdb")
    taken = _doctor(
        "--db", str(other_db), "--grpc", server.grpc_endpoint, "--http", f"127.0.0.1:{free_port()}"
    )
    assert taken.returncode == 1
    assert f"FAIL  OTLP/gRPC {server.grpc_endpoint}: cannot bind" in taken.stdout


def test_an_export_dir_that_cannot_be_written_fails(tmp_path: Path) -> None:
    ports = ("--grpc", f"127.0.0.1:{free_port()}", "--http", f"127.0.0.1:{free_port()}")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    db = ("--db", str(tmp_path / "new.duckdb"))
    env = {**os.environ, "TRACESCORE_EXPORT_DIR": str(blocker / "export")}
    blocked = subprocess.run(
        [sys.executable, "-m", "collector.cli", "doctor", *db, *ports],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert blocked.returncode == 1
    assert f"FAIL  export dir {blocker / 'export'}: {blocker} is not a directory" in blocked.stdout
    env["TRACESCORE_EXPORT_DIR"] = str(tmp_path / "new" / "export")
    fine = subprocess.run(
        [sys.executable, "-m", "collector.cli", "doctor", *db, *ports],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert fine.returncode == 0, fine.stdout
    assert f"OK    export dir {tmp_path / 'new' / 'export'}: writable" in fine.stdout
    assert not (tmp_path / "new").exists()  # doctor looks, and creates nothing


def test_a_disk_below_the_reserve_fails_as_serve_would(tmp_path: Path) -> None:
    """`serve` refuses to start on a disk with less than `disk_reserve` free (docs/reliability.md, 5)."""
    ports = ("--grpc", f"127.0.0.1:{free_port()}", "--http", f"127.0.0.1:{free_port()}")
    found = subprocess.run(
        [sys.executable, "-m", "collector.cli", "doctor", "--db", str(tmp_path / "new.duckdb"), *ports],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "TRACESCORE_DISK_RESERVE": "100000000GB"},
    )
    assert found.returncode == 1, found.stdout
    assert "FAIL  disk at" in found.stdout and "serve would not start" in found.stdout, found.stdout


def test_a_conventions_file_is_checked_as_serve_loads_it(tmp_path: Path) -> None:
    ports = ("--grpc", f"127.0.0.1:{free_port()}", "--http", f"127.0.0.1:{free_port()}")
    good = tmp_path / "conventions.yaml"
    good.write_text(
        "tools:\n  - name: acme\n    match: {span_name: acme.tool}\n    tool_name: {attribute: a}\n"
    )
    db = ("--db", str(tmp_path / "new.duckdb"))
    fine = _doctor(*db, *ports, "--conventions", str(good))
    assert fine.returncode == 0 and f"OK    conventions {good}: 1 convention(s): acme" in fine.stdout
    broken = tmp_path / "broken.yaml"
    broken.write_text(good.read_text().replace("span_name:", "span_nam:"))
    refused = _doctor(*db, *ports, "--conventions", str(broken))
    assert refused.returncode == 2, refused.stdout  # as serve exits on it
    assert (
        f"FAIL  conventions {broken}: serve would refuse it: {broken}:3: tools.0.match.span_nam: unknown key"
        in (refused.stdout)
    )
