"""A served database with runs, executions and verdicts in it, and the HTTP calls the SQL sandbox
tests make against it (issue 26, section 1)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests._otlp import new_span_id, new_trace_id, post_json, request, span
from tests._server import ServeProcess

SPEC = "name: lookup\nexpected_tools: [lookup]\n"
RUNS = 4


def served_with_runs(directory: Path, env: dict[str, str] | None = None) -> ServeProcess:
    """A running server whose file holds RUNS runs (two spans each, one tool call) and their verdicts."""
    spec = directory / "spec.yaml"
    spec.write_text(SPEC)
    server = ServeProcess(
        directory / "t.duckdb", extra_args=("--grace-seconds", "0.2", "--specs", str(spec)), env=env or {}
    ).start()
    for _ in range(RUNS):
        trace, root, start = new_trace_id(), new_span_id(), time.time_ns()
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
        spans = [
            span(trace, root, "invoke_agent shop", start_ns=start, duration_ns=5_000_000, attributes=agent),
            span(trace, new_span_id(), "execute_tool lookup", parent=root, start_ns=start, attributes=tool),
        ]
        assert post_json(server.http_url, request(spans))[0] == 200
    deadline = time.monotonic() + 30
    while len(get(server, "/api/v1/verdicts")[1]) < RUNS:
        assert time.monotonic() < deadline, "the runs were not scored within 30 s"
        time.sleep(0.2)
    return server


def base(server: ServeProcess) -> str:
    return f"http://127.0.0.1:{server.http_port}"


def call(
    server: ServeProcess,
    path: str,
    body: bytes | None = None,
    *,
    method: str | None = None,
    timeout_s: float = 30,
    **headers: str,
) -> tuple[int, Any, dict[str, str]]:
    """(status, decoded JSON answer or text, headers) of one request; errors are answers too."""
    req = urllib.request.Request(base(server) + path, body, headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as response:
            status, raw, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        status, raw, got = exc.code, exc.read(), dict(exc.headers)
    try:
        return status, json.loads(raw), got
    except json.JSONDecodeError:
        return status, raw.decode(errors="replace"), got


def get(server: ServeProcess, path: str, **headers: str) -> tuple[int, Any]:
    status, answer, _ = call(server, path, **headers)
    return status, answer


def sql(server: ServeProcess, query: str, **headers: str) -> tuple[int, Any]:
    body = json.dumps({"query": query}).encode()
    status, answer, _ = call(server, "/api/v1/sql", body, **{"Content-Type": "application/json", **headers})
    return status, answer


def counts(server: ServeProcess) -> dict[str, int]:
    """How many rows the stored tables and views hold, read through the API itself."""
    out = {}
    for name in ("spans", "spans_p0", "spans_p1", "executions", "runs", "verdicts"):
        status, answer = sql(server, f"SELECT count(*) FROM {name}")
        assert status == 200, answer
        out[name] = answer["rows"][0][0]
    status, answer = sql(server, "SELECT value FROM tracescore_state WHERE key = 'replay_floor_seq'")
    out["replay_floor_seq"] = answer["rows"][0][0]
    return out
