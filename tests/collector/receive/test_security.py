"""Security defaults: loopback unless TLS and a token (or --insecure-listen), TLS and mTLS on both
listeners, bearer tokens on OTLP and the APIs, a Host allow-list against DNS rebinding, and SQL that
really is read-only."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from tests._otlp import new_span_id, new_trace_id, request, span
from tests._server import ServeProcess

TOKEN = "s3cret-token-for-tests"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1/localhost, and a client certificate, made by openssl."""
    d = tmp_path_factory.mktemp("pki")
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=tracescore test CA",
        "-keyout",
        str(d / "ca.key"),
        "-out",
        str(d / "ca.pem"),
    )
    for name, san in (
        ("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
        ("client", "subjectAltName=DNS:client"),
    ):
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN={name}",
            "-keyout",
            str(d / f"{name}.key"),
            "-out",
            str(d / f"{name}.csr"),
        )
        (d / f"{name}.ext").write_text(san + "\n")
        _openssl(
            "x509",
            "-req",
            "-in",
            str(d / f"{name}.csr"),
            "-CA",
            str(d / "ca.pem"),
            "-CAkey",
            str(d / "ca.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            str(d / f"{name}.ext"),
            "-out",
            str(d / f"{name}.pem"),
        )
    token = d / "token"
    token.write_text(TOKEN + "\n")
    return {
        "ca": d / "ca.pem",
        "cert": d / "server.pem",
        "key": d / "server.key",
        "token": token,
        "client_cert": d / "client.pem",
        "client_key": d / "client.key",
    }


@pytest.fixture(scope="module")
def secured(pki: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = ServeProcess(
        tmp_path_factory.mktemp("secured") / "t.duckdb",
        extra_args=(
            "--tls-cert",
            str(pki["cert"]),
            "--tls-key",
            str(pki["key"]),
            "--auth-token-file",
            str(pki["token"]),
        ),
    ).start()
    yield server
    server.kill()


def _context(pki: dict[str, Path], client_cert: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki["ca"]))
    if client_cert:
        context.load_cert_chain(str(pki["client_cert"]), str(pki["client_key"]))
    return context


def _get(url: str, context: ssl.SSLContext | None = None, **headers: str) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _post_json(url: str, document: object, context: ssl.SSLContext | None = None, **headers: str) -> int:
    req = urllib.request.Request(
        url, json.dumps(document).encode(), {"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _export(exporter: SpanExporter, name: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "secure-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("tests").start_as_current_span(name):
        pass
    provider.shutdown()


def test_real_exporters_reach_a_tls_and_token_protected_server(
    secured: ServeProcess, pki: dict[str, Path]
) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    _export(
        GrpcExporter(
            endpoint=f"https://{secured.grpc_endpoint}",
            credentials=grpc.ssl_channel_credentials(pki["ca"].read_bytes()),
            headers=headers,
        ),
        "over-grpc-tls",
    )
    # OTLP/HTTP over TLS from a plain client: the SDK's HTTP exporter goes through requests, which lets
    # REQUESTS_CA_BUNDLE (set on this machine) override its certificate_file.
    trace = request([span(new_trace_id(), new_span_id(), "over-http-tls")])
    status = _post_json(
        f"https://127.0.0.1:{secured.http_port}/v1/traces",
        trace,
        _context(pki),
        Authorization=f"Bearer {TOKEN}",
    )
    assert status == 200
    status, body = _get(
        f"https://127.0.0.1:{secured.http_port}/api/v1/runs", _context(pki), Authorization=f"Bearer {TOKEN}"
    )
    assert status == 200, body
    sql = urllib.request.Request(
        f"https://127.0.0.1:{secured.http_port}/api/v1/sql",
        json.dumps({"query": "SELECT name FROM spans ORDER BY name"}).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(sql, timeout=10, context=_context(pki)) as response:
        assert json.loads(response.read())["rows"] == [["over-grpc-tls"], ["over-http-tls"]]


def test_without_the_token_nothing_gets_in_but_health_probes(
    secured: ServeProcess, pki: dict[str, Path]
) -> None:
    base = f"https://127.0.0.1:{secured.http_port}"
    trace = request([span(new_trace_id(), new_span_id(), "no-token")])
    assert _post_json(f"{base}/v1/traces", trace, _context(pki)) == 401
    assert _post_json(f"{base}/v1/traces", trace, _context(pki), Authorization="Bearer wrong") == 401
    assert _get(f"{base}/api/v1/verdicts", _context(pki))[0] == 401
    assert _get(f"{base}/metrics", _context(pki))[0] == 401
    assert _get(f"{base}/healthz", _context(pki))[0] == 200
    assert _get(f"{base}/readyz", _context(pki))[0] == 200
    channel = grpc.secure_channel(secured.grpc_endpoint, grpc.ssl_channel_credentials(pki["ca"].read_bytes()))
    export = channel.unary_unary(
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    with pytest.raises(grpc.RpcError) as refused:
        export(b"", timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP to a TLS listener: no answer
        urllib.request.urlopen(f"http://127.0.0.1:{secured.http_port}/healthz", timeout=5)


def test_mtls_requires_a_client_certificate_from_the_ca(pki: dict[str, Path], tmp_path: Path) -> None:
    server = ServeProcess(
        tmp_path / "t.duckdb",
        extra_args=(
            "--tls-cert",
            str(pki["cert"]),
            "--tls-key",
            str(pki["key"]),
            "--tls-client-ca",
            str(pki["ca"]),
        ),
    ).start()
    try:
        url = f"https://127.0.0.1:{server.http_port}/healthz"
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            urllib.request.urlopen(url, timeout=5, context=_context(pki))
        assert _get(url, _context(pki, client_cert=True))[0] == 200
    finally:
        server.kill()


def test_the_api_answers_only_known_host_names(server: ServeProcess) -> None:
    base = f"http://127.0.0.1:{server.http_port}"
    assert _get(f"{base}/api/v1/runs")[0] == 200
    assert _get(f"{base}/api/v1/runs", Host="localhost:4318")[0] == 200
    status, body = _get(f"{base}/api/v1/runs", Host="attacker.example")
    assert status == 421 and "Host" in body
    assert _get(f"{base}/metrics", Host="attacker.example")[0] == 421
    assert "access-control-allow-origin" not in urllib.request.urlopen(f"{base}/api/v1/runs").headers


@pytest.mark.parametrize(
    "statement",
    [
        "COPY spans TO '/tmp/tracescore-leak.csv'",
        "ATTACH '/tmp/other.duckdb' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SET enable_external_access = true",
        "PRAGMA database_list",
        "SELECT 1; DELETE FROM spans",
        "DELETE FROM spans",
        "CREATE TABLE x (a INT)",
    ],
)
def test_sql_through_the_api_is_read_only(server: ServeProcess, statement: str) -> None:
    req = urllib.request.Request(
        f"http://127.0.0.1:{server.http_port}/api/v1/sql",
        json.dumps({"query": statement}).encode(),
        {"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=10)
    assert refused.value.code == 400
    message = json.loads(refused.value.read())["error"]
    assert message and (
        "read-only" in message
        or "one statement" in message
        or "disabled" in message
        or "Permission" in message
    ), message
    assert not Path("/tmp/tracescore-leak.csv").exists()


def test_non_loopback_needs_tls_and_a_token_or_an_explicit_insecure_listen(tmp_path: Path) -> None:
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "serve",
            "--db",
            str(tmp_path / "r.duckdb"),
            "--http",
            "0.0.0.0:0",
            "--grpc",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "--tls-cert" in refused.stderr and "--insecure-listen" in refused.stderr
    server = ServeProcess(tmp_path / "i.duckdb")
    server.extra_args = ("--insecure-listen", "--http", f"0.0.0.0:{server.http_port}")
    server.start()  # reached through 127.0.0.1 only: the test sends nothing anywhere else
    assert server.stop() == 0
    assert "without TLS without a token (--insecure-listen)" in server.log()
