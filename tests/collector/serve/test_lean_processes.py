"""What each process loads (issue 33): a decode worker loads no DuckDB and no spec models, and a server
given no spec loads no spec models (pydantic, jsonschema, RE2), not at start and not while it ingests
and completes runs. Each library with compiled code shows in the process's memory map once loaded (an
extension module is never unloaded); jsonschema is pure Python, and `rpds` (its `referencing`'s) is the
compiled part it brings."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests._child import child_json
from tests._otel import exporter
from tests._server import ServeProcess

SPEC_MODELS = {"pydantic_core": "pydantic", "_re2": "re2", "rpds": "jsonschema"}
WORKER_NEVER = {"_duckdb": "duckdb", "_yaml": "yaml", **SPEC_MODELS}


def _loaded(pid: int, libraries: dict[str, str]) -> list[str]:
    """Which of these libraries' extension modules the process has mapped."""
    mapped = {Path(line.split()[-1]).name for line in Path(f"/proc/{pid}/maps").read_text().splitlines()}
    return sorted(
        name for marker, name in libraries.items() if any(f.startswith(marker + ".") for f in mapped)
    )


def _metrics(server: ServeProcess) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as response:
        lines = response.read().decode().splitlines()
    return {n: float(v) for n, _, v in (line.rpartition(" ") for line in lines if line and line[0] != "#")}


def _wait_for(server: ServeProcess, name: str, at_least: float) -> None:
    deadline = time.monotonic() + 60
    while _metrics(server).get(name, 0.0) < at_least:
        assert time.monotonic() < deadline, f"{name} stayed below {at_least}\n{server.log()}"
        time.sleep(0.1)


def _worker_of(pid: int) -> int:
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        command = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"spawn_main" in command and b"resource_tracker" not in command:
            return int(child)
    raise AssertionError("no decode worker")


def test_a_worker_and_a_server_without_specs_load_only_what_they_use(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "lean.duckdb", extra_args=("--decode-workers", "1")).start()
    try:
        server.wake_decode_workers()
        _wait_for(server, "tracescore_decode_workers_ready", 1)
        provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
        provider.add_span_processor(BatchSpanProcessor(exporter(server, "grpc")))
        tracer = provider.get_tracer("tests.lean")
        with (
            tracer.start_as_current_span(
                "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent"}
            ),
            tracer.start_as_current_span(
                "execute_tool lookup",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
            ),
        ):
            pass
        provider.shutdown()
        _wait_for(server, "tracescore_runs_completed_total", 1)  # decoded, stored, completed, handed on
        assert _metrics(server)['tracescore_requests_decoded_total{where="worker"}'] >= 1
        assert server.process is not None
        assert _loaded(_worker_of(server.process.pid), WORKER_NEVER) == []
        assert _loaded(server.process.pid, SPEC_MODELS) == []
        assert _loaded(server.process.pid, {"_duckdb": "duckdb"}) == ["duckdb"]  # the check can see one
    finally:
        assert server.stop() == 0, server.log()


def test_the_workers_modules_import_no_duckdb_yaml_or_spec_models() -> None:
    # What a spawned worker imports: its pool module (the initializer), the preparing module, and the
    # first request it prepares (the warm-up). Pure-Python modules too, which no memory map shows.
    probe = (
        "import json, sys\n"
        "from collector.decode.pool import _ready\n"
        "_ready()\n"
        "never = ('duckdb', 'yaml', 'pydantic', 'jsonschema', 're2', 'scoring', 'collector.serve')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(never))))\n"
    )
    assert child_json(probe) == []
