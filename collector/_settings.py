"""Settings declared once: every option has a flag, a `TRACESCORE_*` environment variable and a default.

Precedence: flag > environment > default. A bad value names the setting and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

MIB = 1024 * 1024


class SettingError(ValueError):
    """A setting's value is unusable; the message names the setting and says what is expected."""


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        return self.host in ("localhost", "::1") or self.host.startswith("127.")


def parse_address(text: str) -> Address:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT (for example 127.0.0.1:4317), got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    return Address(host, int(port))


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise ValueError("must be greater than 0")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError("must be a whole number greater than 0")
    return value


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    env: str
    parse: Callable[[str], Any]
    help: str


@dataclass(frozen=True, slots=True)
class ServeSettings:
    db: Path = Path("tracescore.duckdb")
    grpc: Address = Address("127.0.0.1", 4317)
    http: Address = Address("127.0.0.1", 4318)
    grace_seconds: float = 2.0
    idle_timeout_seconds: float = 30.0
    max_request_mib: int = 64
    max_backlog_spans: int = 200_000
    retry_after_seconds: int = 1
    checkpoint_seconds: float = 60.0
    memory_limit: str = ""
    insecure_listen: bool = False
    auth_token: str = ""
    auth_token_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    allowed_hosts: tuple[str, ...] = ()
    specs: tuple[Path, ...] = ()
    plugins: tuple[str, ...] = ()
    export_endpoint: str = ""
    export_protocol: str = ""

    @property
    def max_request_bytes(self) -> int:
        return self.max_request_mib * MIB


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


def _paths(text: str) -> tuple[Path, ...]:
    return tuple(Path(p) for p in text.split(os.pathsep) if p)


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _protocol(text: str) -> str:
    if text not in ("grpc", "http/protobuf"):
        raise ValueError("expected grpc or http/protobuf")
    return text


SERVE_SETTINGS: tuple[Setting, ...] = (
    Setting("db", "TRACESCORE_DB", Path, "DuckDB file to write (created if missing)"),
    Setting("grpc", "TRACESCORE_GRPC", parse_address, "OTLP/gRPC listen address HOST:PORT"),
    Setting("http", "TRACESCORE_HTTP", parse_address, "OTLP/HTTP listen address HOST:PORT"),
    Setting(
        "grace_seconds",
        "TRACESCORE_GRACE_SECONDS",
        _positive_float,
        "a run is complete this long after its root span ended with no new spans",
    ),
    Setting(
        "idle_timeout_seconds",
        "TRACESCORE_IDLE_TIMEOUT_SECONDS",
        _positive_float,
        "a trace with no root span is complete after this long without new spans",
    ),
    Setting(
        "max_request_mib",
        "TRACESCORE_MAX_REQUEST_MIB",
        _positive_int,
        "largest OTLP request accepted, after decompression (MiB)",
    ),
    Setting(
        "max_backlog_spans",
        "TRACESCORE_MAX_BACKLOG_SPANS",
        _positive_int,
        "spans waiting to be committed above which new requests get a retryable refusal",
    ),
    Setting(
        "retry_after_seconds",
        "TRACESCORE_RETRY_AFTER_SECONDS",
        _positive_int,
        "back-off asked of clients when refusing for overload",
    ),
    Setting(
        "checkpoint_seconds",
        "TRACESCORE_CHECKPOINT_SECONDS",
        _positive_float,
        "how often the WAL is checkpointed into the database file",
    ),
    Setting(
        "memory_limit", "TRACESCORE_MEMORY_LIMIT", str, "DuckDB memory_limit, e.g. 512MB (default: DuckDB's)"
    ),
    Setting(
        "insecure_listen",
        "TRACESCORE_INSECURE_LISTEN",
        _bool,
        "allow a non-loopback listen address without TLS and a token (logs a warning)",
    ),
    Setting("auth_token", "TRACESCORE_AUTH_TOKEN", str, "bearer token required on OTLP and the APIs"),
    Setting("auth_token_file", "TRACESCORE_AUTH_TOKEN_FILE", Path, "file holding the bearer token"),
    Setting("tls_cert", "TRACESCORE_TLS_CERT", Path, "TLS certificate (PEM) for both listeners"),
    Setting("tls_key", "TRACESCORE_TLS_KEY", Path, "TLS private key (PEM)"),
    Setting(
        "tls_client_ca",
        "TRACESCORE_TLS_CLIENT_CA",
        Path,
        "CA (PEM) that client certificates must chain to (mTLS)",
    ),
    Setting(
        "allowed_hosts",
        "TRACESCORE_ALLOWED_HOSTS",
        _names,
        "Host header values the API answers besides loopback names (comma-separated; * for any)",
    ),
    Setting(
        "specs",
        "TRACESCORE_SPECS",
        _paths,
        f"spec files or directories scored online ({os.pathsep}-separated in the variable)",
    ),
    Setting(
        "plugins",
        "TRACESCORE_PLUGINS",
        _names,
        "Python modules to import that register checks (comma-separated)",
    ),
    Setting(
        "export_endpoint",
        "TRACESCORE_EXPORT_ENDPOINT",
        str,
        "OTLP endpoint for verdict spans and metrics (default: OTEL_EXPORTER_OTLP_ENDPOINT, if set)",
    ),
    Setting(
        "export_protocol",
        "TRACESCORE_EXPORT_PROTOCOL",
        _protocol,
        "grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)",
    ),
)


def resolve_serve_settings(
    flags: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> ServeSettings:
    """Flags (already parsed; None when not given) over environment over defaults."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for setting in SERVE_SETTINGS:
        flag = flags.get(setting.name)
        if flag is not None and flag is not False:
            values[setting.name] = flag
            continue
        raw = environ.get(setting.env)
        if raw is None or raw == "":
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except ValueError as exc:
            raise SettingError(f"{setting.env}={raw!r}: {exc}") from exc
    known = {f.name for f in fields(ServeSettings)}
    settings = ServeSettings(**{k: v for k, v in values.items() if k in known})
    if settings.auth_token_file is not None:
        try:
            token = settings.auth_token_file.read_text().strip()
        except OSError as exc:
            raise SettingError(f"--auth-token-file {settings.auth_token_file}: {exc.strerror}") from exc
        if not token:
            raise SettingError(f"--auth-token-file {settings.auth_token_file} is empty")
        settings = replace(settings, auth_token=token)
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise SettingError("--tls-cert and --tls-key go together: give both, or neither")
    if settings.tls_client_ca is not None and settings.tls_cert is None:
        raise SettingError("--tls-client-ca needs --tls-cert and --tls-key (mTLS is on top of TLS)")
    for path in (settings.tls_cert, settings.tls_key, settings.tls_client_ca):
        if path is not None and not path.is_file():
            raise SettingError(f"{path}: no such file (TLS settings)")
    protected = settings.tls_cert is not None and bool(settings.auth_token)
    for label, address in (("--grpc", settings.grpc), ("--http", settings.http)):
        if not address.is_loopback and not protected and not settings.insecure_listen:
            raise SettingError(
                f"{label} {address} is not a loopback address; tracescore binds loopback by default. "
                "Listening elsewhere needs --tls-cert/--tls-key and --auth-token (or --auth-token-file), "
                "or --insecure-listen if something else in front of it does that job."
            )
    return settings
