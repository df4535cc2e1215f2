"""Settings declared once: every option has a flag, a `TRACESCORE_*` environment variable, a key in the
YAML configuration file and a default.

Precedence: flag > environment > configuration file (`--config PATH` or `TRACESCORE_CONFIG`) > default.
A bad value names the setting, where it came from (the variable, or the file and key) and the fix.

Why this module is long: it is the one declaration of every setting of `serve` (flag, variable, YAML
key, default and help, a few lines each for some forty settings) beside the rules that read them
(value parsers, the configuration file, precedence). Splitting the table from its rules would leave
one setting described in two places, which is what declaring settings once is for.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from collector.serve.memory import parse_size
from collector.store.disk_space import DEFAULT_RESERVE_BYTES

MIB = 1024 * 1024
CONFIG_ENV = "TRACESCORE_CONFIG"


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
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected a number of seconds greater than 0, got {text!r}") from None
    if not value > 0:
        raise ValueError(f"must be greater than 0, got {text!r}")
    return value


def parse_memory_limit(text: str) -> str:
    if text.strip():
        parse_size(text)  # refused at start, with the reason, rather than by DuckDB later
    return text.strip()


def _disk_reserve(text: str) -> int:
    if text.strip() == "0":
        return 0
    try:
        return parse_size(text)
    except ValueError:
        raise ValueError(f"expected a size such as 64MiB or 1GB, or 0 for none, got {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a whole number greater than 0, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"must be a whole number greater than 0, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    env: str
    parse: Callable[[str], Any]
    help: str
    example: str  # a valid value, shown in the fix when a value is refused
    many: bool = False  # a list: `:`/`,`-separated in the variable, a YAML list in the file
    path: bool = False  # a path: relative ones in the configuration file are relative to that file

    @property
    def key(self) -> str:
        """The key in the YAML configuration file."""
        return self.name


AUTO_WORKERS = -1  # decode workers: one per core beyond the first (collector/decode/pool.py)


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
    # OTLP/HTTP waits this long for a request head (idle or slow) and for a body, as the Collector does.
    http_header_timeout_seconds: float = 60.0
    http_body_timeout_seconds: float = 60.0
    checkpoint_seconds: float = 60.0
    disk_reserve: int = DEFAULT_RESERVE_BYTES
    decode_workers: int = AUTO_WORKERS
    memory_limit: str = ""
    insecure_listen: bool = False
    auth_token: str = ""
    auth_token_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    allowed_hosts: tuple[str, ...] = ()
    specs: tuple[Path, ...] = ()
    # The user's own conventions files (docs/conventions.md, "Your own conventions"), reloaded on change.
    conventions: tuple[Path, ...] = ()
    plugins: tuple[str, ...] = ()
    export_endpoint: str = ""
    export_protocol: str = ""
    # History out as Parquet while serving (docs/export.md, "Continuous export"); None: not at all.
    export_dir: Path | None = None
    export_every: float = 300.0
    # The live UI links each run's trace to the user's tracing UI: a URL with {trace_id} (docs/ui.md).
    trace_url: str = ""
    log_format: str = "auto"
    log_level: str = "info"
    # The YAML file the settings were read from, if any (shown in logs and by `tracescore doctor`).
    config_file: Path | None = None
    # `serve --accept-wal-loss`: start although the database lacks acknowledged spans (promise 10 of
    # docs/reliability.md). A flag of one start only, deliberately not a setting: left on in a file or
    # the environment it would accept every later loss without anyone deciding to.
    accept_wal_loss: bool = False

    @property
    def max_request_bytes(self) -> int:
        return self.max_request_mib * MIB


def parse_workers(text: str) -> int:
    if text.strip().lower() == "auto":
        return AUTO_WORKERS
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected auto or a whole number from 0, got {text!r}") from None
    if value < 0:
        raise ValueError(f"must be auto or a whole number from 0, got {text!r}")
    return value


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _paths(text: str) -> tuple[Path, ...]:
    return tuple(Path(p) for p in text.split(os.pathsep) if p)


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"expected {' or '.join(allowed)}, got {text!r}")
        return text

    return parse


_protocol = _choice("grpc", "http/protobuf")
LOG_FORMATS = ("auto", "text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")


def _trace_url(text: str) -> str:
    if "{trace_id}" not in text:
        raise ValueError(f"expected a URL with {{trace_id}} where the trace id goes, got {text!r}")
    return text


def _log_level(text: str) -> str:
    return _choice(*LOG_LEVELS)(text.strip().lower())


SERVE_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "db", "TRACESCORE_DB", Path, "DuckDB file to write (created if missing)", "traces.duckdb", path=True
    ),
    Setting("grpc", "TRACESCORE_GRPC", parse_address, "OTLP/gRPC listen address HOST:PORT", "127.0.0.1:4317"),
    Setting("http", "TRACESCORE_HTTP", parse_address, "OTLP/HTTP listen address HOST:PORT", "127.0.0.1:4318"),
    Setting(
        "grace_seconds",
        "TRACESCORE_GRACE_SECONDS",
        _positive_float,
        "a run is complete this long after its root span ended with no new spans",
        "2",
    ),
    Setting(
        "idle_timeout_seconds",
        "TRACESCORE_IDLE_TIMEOUT_SECONDS",
        _positive_float,
        "a trace with no root span is complete after this long without new spans",
        "30",
    ),
    Setting(
        "max_request_mib",
        "TRACESCORE_MAX_REQUEST_MIB",
        _positive_int,
        "largest OTLP request accepted, after decompression (MiB)",
        "64",
    ),
    Setting(
        "max_backlog_spans",
        "TRACESCORE_MAX_BACKLOG_SPANS",
        _positive_int,
        "spans waiting to be committed above which new requests wait their turn (then a retryable refusal)",
        "200000",
    ),
    Setting(
        "retry_after_seconds",
        "TRACESCORE_RETRY_AFTER_SECONDS",
        _positive_int,
        "back-off asked of clients when refusing for overload",
        "1",
    ),
    Setting(
        "http_header_timeout_seconds",
        "TRACESCORE_HTTP_HEADER_TIMEOUT_SECONDS",
        _positive_float,
        "an OTLP/HTTP connection without a complete request head this long (idle since it opened or since "
        "its last answer, or its headers still arriving) is closed",
        "60",
    ),
    Setting(
        "http_body_timeout_seconds",
        "TRACESCORE_HTTP_BODY_TIMEOUT_SECONDS",
        _positive_float,
        "an OTLP/HTTP request body not received this long after it was admitted is answered 408 and its "
        "connection closed",
        "60",
    ),
    Setting(
        "checkpoint_seconds",
        "TRACESCORE_CHECKPOINT_SECONDS",
        _positive_float,
        "how often the WAL is checkpointed into the database file",
        "60",
    ),
    Setting(
        "disk_reserve",
        "TRACESCORE_DISK_RESERVE",
        _disk_reserve,
        "free space the database's disk keeps: a commit that would leave less is refused retryably, a "
        "checkpoint waits, and serve does not start below it",
        "64MiB",
    ),
    Setting(
        "decode_workers",
        "TRACESCORE_DECODE_WORKERS",
        parse_workers,
        "processes that decode and recognise OTLP requests beside the server (auto: one per core "
        "beyond the first, at most 4; 0: in the server's process)",
        "auto",
    ),
    Setting(
        "memory_limit",
        "TRACESCORE_MEMORY_LIMIT",
        parse_memory_limit,
        "the sidecar's memory budget, e.g. 512MB (default: the container's limit, else none); it "
        "chooses the mode: decode workers only where they fit, DuckDB 40 % of what the server (~145 "
        "MiB) and the workers leave (at least 96 MiB), retained traces 10 %, and over 90 % held new "
        "requests are refused retryably",
        "512MB",
    ),
    Setting(
        "insecure_listen",
        "TRACESCORE_INSECURE_LISTEN",
        _bool,
        "allow a non-loopback listen address without TLS and a token (logs a warning)",
        "false",
    ),
    Setting(
        "auth_token",
        "TRACESCORE_AUTH_TOKEN",
        str,
        "bearer token required on OTLP and the APIs",
        "a-long-random-string",
    ),
    Setting(
        "auth_token_file",
        "TRACESCORE_AUTH_TOKEN_FILE",
        Path,
        "file holding the bearer token",
        "/run/secrets/tracescore-token",
        path=True,
    ),
    Setting(
        "tls_cert",
        "TRACESCORE_TLS_CERT",
        Path,
        "TLS certificate (PEM) for both listeners",
        "/etc/tracescore/tls.crt",
        path=True,
    ),
    Setting(
        "tls_key", "TRACESCORE_TLS_KEY", Path, "TLS private key (PEM)", "/etc/tracescore/tls.key", path=True
    ),
    Setting(
        "tls_client_ca",
        "TRACESCORE_TLS_CLIENT_CA",
        Path,
        "CA (PEM) that client certificates must chain to (mTLS)",
        "/etc/tracescore/clients-ca.crt",
        path=True,
    ),
    Setting(
        "allowed_hosts",
        "TRACESCORE_ALLOWED_HOSTS",
        _names,
        "Host header values the API answers besides loopback names (comma-separated; * for any)",
        "tracescore.internal",
        many=True,
    ),
    Setting(
        "specs",
        "TRACESCORE_SPECS",
        _paths,
        f"spec files or directories scored online ({os.pathsep}-separated in the variable)",
        "specs/",
        many=True,
        path=True,
    ),
    Setting(
        "conventions",
        "TRACESCORE_CONVENTIONS",
        _paths,
        f"conventions files: your own span formats, tried before the built-in ones ({os.pathsep}-separated "
        "in the variable)",
        "conventions.yaml",
        many=True,
        path=True,
    ),
    Setting(
        "plugins",
        "TRACESCORE_PLUGINS",
        _names,
        "Python modules to import that register checks (comma-separated)",
        "my_checks",
        many=True,
    ),
    Setting(
        "export_endpoint",
        "TRACESCORE_EXPORT_ENDPOINT",
        str,
        "OTLP endpoint for verdict spans and metrics (default: OTEL_EXPORTER_OTLP_ENDPOINT, if set)",
        "http://127.0.0.1:4317",
    ),
    Setting(
        "export_protocol",
        "TRACESCORE_EXPORT_PROTOCOL",
        _protocol,
        "grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)",
        "grpc",
    ),
    Setting(
        "export_dir",
        "TRACESCORE_EXPORT_DIR",
        Path,
        "directory the spans and verdicts of completed runs are exported to as Parquet, continuously",
        "/data/tracescore-export",
        path=True,
    ),
    Setting(
        "export_every",
        "TRACESCORE_EXPORT_EVERY",
        _positive_float,
        "seconds between exports to --export-dir",
        "300",
    ),
    Setting(
        "trace_url",
        "TRACESCORE_TRACE_URL",
        _trace_url,
        "where the live UI links each run's trace: a URL with {trace_id} in place of the trace id",
        "https://jaeger.example/trace/{trace_id}",
    ),
    Setting(
        "log_format",
        "TRACESCORE_LOG_FORMAT",
        _choice(*LOG_FORMATS),
        "auto: text with a status line on a terminal, JSON lines otherwise; or text, or json",
        "json",
    ),
    Setting(
        "log_level",
        "TRACESCORE_LOG_LEVEL",
        _log_level,
        "debug, info, warning or error",
        "info",
    ),
)
_BY_KEY = {s.key: s for s in SERVE_SETTINGS}


def _yaml_example(setting: Setting) -> str:
    return f"{setting.key}: [{setting.example}]" if setting.many else f"{setting.key}: {setting.example}"


def _scalar_text(value: Any) -> str | None:
    """A YAML scalar as the text a variable would hold; None when it is not a scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return None


def _from_file(path: Path, value: Any, setting: Setting, origin: str) -> Any:
    fix = f"write for example `{_yaml_example(setting)}`"
    if setting.many:
        items = value if isinstance(value, list) else [value]
        texts = [_scalar_text(item) for item in items]
        if any(t is None for t in texts):
            raise SettingError(f"{origin}: expected a list of values; {fix}")
        if setting.path:
            parsed: tuple[Any, ...] = tuple(Path(t) for t in texts if t)
        else:
            parsed = tuple(t.strip() for t in texts if t and t.strip())
    else:
        text = _scalar_text(value)
        if text is None:
            kind = "a list" if isinstance(value, list) else "a mapping"
            raise SettingError(f"{origin}: expected one value, not {kind}; {fix}")
        try:
            parsed = setting.parse(text)
        except ValueError as exc:
            raise SettingError(f"{origin}: {exc}; {fix}") from exc
    if setting.path:
        base = path.parent
        if isinstance(parsed, tuple):
            return tuple(p if p.is_absolute() else base / p for p in parsed)
        return parsed if parsed.is_absolute() else base / parsed
    return parsed


def read_config_file(path: Path, origin: str = "--config") -> dict[str, Any]:
    """The settings a YAML file sets, parsed (relative paths made relative to the file)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SettingError(
            f"{origin} {path}: no such configuration file; fix the path or leave {origin} out"
        ) from None
    except OSError as exc:
        raise SettingError(f"{path}: cannot read the configuration file: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SettingError(f"{path}: not valid YAML{where}: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingError(
            f"{path}: expected a mapping of setting: value (for example `grace_seconds: 2`), "
            f"not {type(data).__name__}"
        )
    values: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("-", "_")
        setting = _BY_KEY.get(key)
        if setting is None:
            close = [k for k in _BY_KEY if k.startswith(key)] or difflib.get_close_matches(
                key, list(_BY_KEY), n=1
            )
            hint = f"did you mean {close[0]}? " if close else ""
            raise SettingError(
                f"{path}: unknown setting {raw_key!r}; {hint}the settings are: {', '.join(_BY_KEY)}"
            )
        if value is None:
            continue  # `key:` with nothing after it leaves the setting to its default
        values[key] = _from_file(path, value, setting, f"{path}: {raw_key}")
    return values


def config_path(given: Path | None, environ: Mapping[str, str]) -> Path | None:
    """`--config` if given, else `TRACESCORE_CONFIG` if set."""
    if given is not None:
        return given
    raw = environ.get(CONFIG_ENV)
    return Path(raw) if raw else None


def resolve_serve_settings(
    flags: Mapping[str, Any], environ: Mapping[str, str] | None = None, config: Path | None = None
) -> ServeSettings:
    """Flags (already parsed; None when not given) over environment over the YAML file over defaults."""
    environ = os.environ if environ is None else environ
    origin = "--config" if config is not None else CONFIG_ENV
    config = config_path(config, environ)
    from_file = read_config_file(config, origin) if config is not None else {}
    values: dict[str, Any] = {}
    for setting in SERVE_SETTINGS:
        flag = flags.get(setting.name)
        if flag is not None and flag is not False:
            values[setting.name] = flag
            continue
        raw = environ.get(setting.env)
        if raw is None or raw == "":
            if setting.name in from_file:
                values[setting.name] = from_file[setting.name]
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except ValueError as exc:
            raise SettingError(
                f"{setting.env}={raw!r}: {exc}; set for example {setting.env}={setting.example}"
            ) from exc
    known = {f.name for f in fields(ServeSettings)}
    settings = ServeSettings(**{k: v for k, v in values.items() if k in known}, config_file=config)
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
