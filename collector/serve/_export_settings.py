"""Whether and where verdicts are exported over OTLP (`--export-endpoint`, the standard
`OTEL_EXPORTER_OTLP_*` variables), decided without loading the OpenTelemetry SDK: most servers export
nothing, and the SDK's exporters are loaded only by `_verdict_export` when one does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class ExportSettings:
    endpoint: str | None = None  # None: from OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, if set
    protocol: str = "grpc"  # grpc | http/protobuf
    metric_interval_s: float = 10.0

    @staticmethod
    def from_environment(
        endpoint: str | None, protocol: str | None, environ: Mapping[str, str] | None = None
    ) -> ExportSettings | None:
        """None when nothing asks for export (no flag, no standard variable)."""
        env = os.environ if environ is None else environ
        configured = (
            endpoint
            or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        )
        if not configured:
            return None
        chosen = (
            protocol
            or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        )
        return ExportSettings(endpoint=endpoint, protocol=chosen or "grpc")


_LOCAL_HOSTS = frozenset({"localhost", "0.0.0.0", "::", "::1", ""})


def points_at_own_listener(
    settings: ExportSettings, listeners: Iterable[tuple[str, int]], environ: Mapping[str, str] | None = None
) -> str | None:
    """The endpoint if verdict export would reach one of this server's own OTLP listeners, else None.

    The usual way there: `OTEL_EXPORTER_OTLP_ENDPOINT` exported in a shell for the agent, and `serve`
    started from the same shell. The spans would be ignored on arrival (their scope is ours) and the
    metrics refused, so nothing would be exported but error lines."""
    env = os.environ if environ is None else environ
    endpoint = (
        settings.endpoint
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or ""
    )
    parsed = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
    try:
        port = parsed.port or (4318 if settings.protocol.startswith("http") else 4317)
    except ValueError:
        return None
    host = (parsed.hostname or "").strip("[]")
    for own_host, own_port in listeners:
        if port == own_port and (host == own_host or (_is_local(host) and _is_local(own_host))):
            return endpoint
    return None


def _is_local(host: str) -> bool:
    return host in _LOCAL_HOSTS or host.startswith("127.")
