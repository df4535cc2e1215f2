"""`tracescore doctor`: check what `serve` needs and say what to fix, before it bites.

Each check prints `ok`, `warn` or `fail` with one line of advice; the exit code is 1 if any failed, 2 if
a spec or conventions file failed (what `serve` would exit with on it).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from collector.cli._check import validate
from collector.cli._client import ServerError, discover, get
from collector.cli._doctor_scopes import scope_findings
from collector.serve.ports import bind_problem
from collector.serve.settings import Address, ServeSettings
from collector.store.acknowledged import RecordDamaged, shortfall, verify
from collector.store.database import DatabaseError, explain_open_error, wal_files
from collector.store.disk_space import DiskSpace

_MIN_FREE_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class Finding:
    status: str  # ok | warn | fail
    check: str
    advice: str


def _port(label: str, address: Address, served_by_us: bool) -> Finding:
    problem = bind_problem(address)
    if problem is None:
        return Finding("ok", f"{label} {address}", "free")
    if served_by_us:
        return Finding("ok", f"{label} {address}", "in use by the tracescore serve holding the database")
    return Finding(
        "fail",
        f"{label} {address}",
        f"cannot bind ({problem}): stop what listens there or pass another address",
    )


def _database(db: Path) -> Iterator[Finding]:
    api = db.with_name(db.name + ".api.json")
    serving = False
    if api.exists():
        try:
            pid = int(json.loads(api.read_text())["pid"])
            os.kill(pid, 0)
            serving = True
            yield Finding(
                "ok",
                f"database {db}",
                f"held by a running tracescore serve (PID {pid}); the CLI uses its API",
            )
        except (OSError, ValueError, KeyError, json.JSONDecodeError):
            yield Finding(
                "warn", f"database {db}", f"{api.name} is stale (its server is gone); it is ignored"
            )
    if not db.exists():
        yield Finding("ok", f"database {db}", "does not exist yet; serve creates it")
        return
    for wal in wal_files(db):
        if wal.exists() and not serving:
            yield Finding(
                "warn",
                f"write-ahead log {wal.name}",
                f"{wal.stat().st_size} bytes not checkpointed: the last "
                "stop was not clean; serve replays it at start (keep a copy first if in doubt)",
            )
    if serving:
        return
    try:
        connection = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        yield Finding("fail", f"database {db}", str(explain_open_error(db, exc)))
        return
    try:
        version = connection.execute("SELECT max(version) FROM schema_version").fetchone()
        yield Finding("ok", f"database {db}", f"opens; schema version {version[0] if version else '?'}")
    except duckdb.Error as exc:
        yield Finding("fail", f"database {db}", f"not a tracescore database: {exc}")
    finally:
        connection.close()


def _acknowledged(db: Path) -> Finding | None:
    """Whether the database (with its write-ahead log, replayed read-only: nothing is changed) still
    holds every span serve acknowledged, as counted by its record beside the file."""
    label = f"acknowledged spans {db.name}"
    try:
        verification = verify(db)
    except RecordDamaged as exc:
        return Finding("fail", label, str(exc))
    except DatabaseError:
        return None  # the database does not open: the check of the database above says why
    if verification.record is None:
        if not db.exists():
            return None
        return Finding(
            "ok", label, "no acknowledgement record yet (made before tracescore kept one): nothing to compare"
        )
    if verification.held is None:
        return Finding("ok", label, "nothing acknowledged since the last clean stop")
    if verification.missing:
        return Finding(
            "fail",
            label,
            f"{shortfall(db, verification)}. Keep a copy of every {db.name}* file and read "
            "docs/reliability.md (promise 10); `serve --accept-wal-loss` starts anyway, accepting the loss",
        )
    return Finding(
        "ok",
        label,
        f"all {verification.record.spans} acknowledged since the last clean stop are there "
        f"({verification.held} stored)",
    )


def _disk(db: Path, reserve: int) -> Finding:
    space = DiskSpace.of_database(db.resolve(), reserve)
    folder = space.folder
    if (shortage := space.shortage()) is not None:
        return Finding("fail", f"disk at {folder}", f"{shortage}: serve would not start; free space there")
    free = shutil.disk_usage(folder).free
    if free < _MIN_FREE_BYTES:
        return Finding(
            "warn",
            f"disk at {folder}",
            f"only {free >> 20} MiB free: below the {reserve >> 20} MiB reserve (TRACESCORE_DISK_RESERVE) "
            "ingest answers with retryable refusals until space returns",
        )
    return Finding("ok", f"disk at {folder}", f"{free >> 30} GiB free")


def _export_dir(directory: Path) -> Finding:
    """Whether `--export-dir` can be written, without creating it: its nearest existing folder."""
    folder = directory
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    label = f"export dir {directory}"
    if not folder.is_dir():
        return Finding("fail", label, f"{folder} is not a directory: give --export-dir a directory path")
    if not os.access(folder, os.W_OK | os.X_OK):
        return Finding("fail", label, f"{folder} cannot be written by this user")
    free = shutil.disk_usage(folder).free
    return Finding(
        "ok", label, f"writable; {free >> 30} GiB free (the export keeps every row: plan a retention)"
    )


def diagnose(settings: ServeSettings) -> list[Finding]:
    findings = list(_database(settings.db))
    serving = any("held by a running" in f.advice for f in findings)
    if not serving and (acknowledged := _acknowledged(settings.db)) is not None:
        findings.append(acknowledged)
    findings.append(_port("OTLP/gRPC", settings.grpc, serving))
    findings.append(_port("OTLP/HTTP", settings.http, serving))
    findings.append(_disk(settings.db, settings.disk_reserve))
    if settings.export_dir is not None:
        findings.append(_export_dir(settings.export_dir))
    findings.extend(_specs(settings))
    findings.extend(_conventions(settings))
    findings.extend(Finding(*line) for line in scope_findings(settings.db))
    return findings


def _conventions(settings: ServeSettings) -> list[Finding]:
    """The conventions files validated and compiled as serve loads them."""
    if not settings.conventions:
        return []
    from collector.recognise.declared.errors import ConventionsError
    from collector.recognise.declared.files import load_conventions

    subject = "conventions " + ", ".join(map(str, settings.conventions))
    try:
        declared = load_conventions(list(settings.conventions))
    except ConventionsError as exc:
        return [Finding("fail", subject, f"serve would refuse it: {exc}")]
    return [Finding("ok", subject, f"{len(declared.names)} convention(s): {', '.join(declared.names)}")]


def _specs(settings: ServeSettings) -> list[Finding]:
    """The spec files validated exactly as serve loads them (collector/cli/_check.py), after its plugins,
    and whether the serve holding the database failed to reload its own."""
    findings = []
    if settings.specs:
        checked, _ = validate(settings.specs, settings.plugins)
        findings = [
            Finding(
                "ok" if line.status == "ok" else "fail",
                f"specs {line.subject}",
                line.detail if line.status == "ok" else f"serve would refuse it: {line.detail}",
            )
            for line in checked
        ]
    return findings + _served_specs(settings.db)


def _served_specs(db: Path) -> list[Finding]:
    """A running serve's own word on its specs: a reload that failed keeps the last good ones running."""
    server = discover(db, None)
    if server is None:
        return []
    try:
        answer = get(server, "/api/v1/specs")
    except (ServerError, DatabaseError):
        return []
    error = answer.get("reload_error") if isinstance(answer, dict) else None
    if not error:
        return []
    return [
        Finding(
            "warn",
            f"specs of the serve at {server}",
            f"its last reload failed ({error}); it keeps scoring with the specs it loaded before",
        )
    ]


def run_doctor(settings: ServeSettings) -> int:
    """0 all well, 1 something would stop serve, 2 a spec or conventions file serve would refuse (the code
    serve exits with)."""
    findings = diagnose(settings)
    for finding in findings:
        print(f"{finding.status.upper():<4}  {finding.check}: {finding.advice}")
    if any(f.status == "fail" and f.check.startswith(("specs ", "conventions ")) for f in findings):
        return 2
    return 1 if any(f.status == "fail" for f in findings) else 0
