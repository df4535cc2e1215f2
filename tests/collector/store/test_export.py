"""Scale-out by export: two sidecars fed disjoint traces, exported into one Parquet store, answer the
documented example queries identically with DuckDB and with ClickHouse's own engine (chDB)."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry.trace import Status, StatusCode

from tests._otel import provider
from tests._server import ServeProcess

DOCS = Path(__file__).resolve().parents[3] / "docs" / "export.md"
SPEC = "name: lookup\nexpected_tools: [lookup]\n"


def _example_queries() -> list[str]:
    block = DOCS.read_text().split("## Example queries", 1)[1]
    sql = block.split("```sql", 1)[1].split("```", 1)[0]
    queries = [q.strip() for q in sql.split(";") if q.strip()]
    return [re.sub(r"^--.*\n", "", q, flags=re.MULTILINE).strip() for q in queries]


def _sidecar(directory: Path, service: str, runs: int, spec: Path) -> Path:
    server = ServeProcess(directory / f"{service}.duckdb", extra_args=("--specs", str(spec))).start()
    tp = provider(server, "grpc", service=service)
    tracer = tp.get_tracer("tests")
    for i in range(runs):
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
        with tracer.start_as_current_span("invoke_agent shop", attributes=agent):
            tools = ["lookup", "quote"] if i % 3 else ["quote"]
            for tool in tools:
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.arguments": json.dumps({"i": i}),
                }
                with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes) as span:
                    if tool == "quote" and i % 4 == 0:
                        span.set_status(Status(StatusCode.ERROR, "carrier down"))
    tp.force_flush()
    tp.shutdown()
    assert server.stop() == 0
    return server.db


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("export")
    spec = directory / "spec.yaml"
    spec.write_text(SPEC)
    out = directory / "store"
    for service, runs in (("agent-a", 6), ("agent-b", 5)):
        db = _sidecar(directory, service, runs, spec)
        result = subprocess.run(
            [sys.executable, "-m", "collector.cli", "export", "--db", str(db), "--out", str(out)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert "exported" in result.stdout
    return out


def _duckdb(out: Path, query: str) -> list[tuple[str, ...]]:
    traces = f"read_parquet('{out}/otel_traces/**/*.parquet', hive_partitioning = true)"
    scores = f"read_parquet('{out}/scores/**/*.parquet', hive_partitioning = true)"
    rows = duckdb.connect().execute(query.format(traces=traces, scores=scores)).fetchall()
    return [
        tuple("" if v is None else str(int(v) if isinstance(v, float) and v.is_integer() else v) for v in r)
        for r in rows
    ]


def _clickhouse(out: Path, query: str) -> list[tuple[str, ...]]:
    chdb = pytest.importorskip("chdb")
    traces = f"file('{out}/otel_traces/**/*.parquet', Parquet)"
    scores = f"file('{out}/scores/**/*.parquet', Parquet)"
    text = str(chdb.query(query.format(traces=traces, scores=scores), "CSV"))
    return [tuple(row) for row in csv.reader(io.StringIO(text)) if row]


def test_the_layout_is_hive_partitioned_and_complete(store: Path) -> None:
    files = sorted(p.relative_to(store).as_posix() for p in store.rglob("*.parquet"))
    assert {f.split("/")[0] for f in files} == {"otel_traces", "scores"}
    assert all(
        re.match(r"(otel_traces|scores)/date=\d{4}-\d{2}-\d{2}/ServiceName=agent-[ab]/part-.+\.parquet$", f)
        for f in files
    ), files
    assert not (store / "_tmp").exists()
    counts = (
        duckdb.connect()
        .execute(
            "SELECT ServiceName, count(*) "
            f"FROM read_parquet('{store}/otel_traces/**/*.parquet', hive_partitioning=true) "
            "GROUP BY 1 ORDER BY 1"
        )
        .fetchall()
    )
    # agent-a: 6 agent spans + 4 runs with two tools + 2 with one = 16; agent-b: 5 + 3*2 + 2*1 = 13
    assert counts == [("agent-a", 16), ("agent-b", 13)]


@pytest.mark.parametrize("query", _example_queries(), ids=lambda q: q.split("\n", 1)[0][:40])
def test_duckdb_and_clickhouse_give_the_same_answers(store: Path, query: str) -> None:
    ours = _duckdb(store, query)
    assert ours, "the example query returned nothing: the fixture does not exercise it"
    assert _clickhouse(store, query) == ours


def test_the_first_example_counts_what_was_sent(store: Path) -> None:
    rows: list[Any] = _duckdb(store, _example_queries()[0])
    assert ("agent-a", "quote", "Error", "2") in rows  # runs 0 and 4 of agent-a errored
    assert ("agent-b", "lookup", "Unset", "3") in rows
