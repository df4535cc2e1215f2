"""The conventions file of docs/conventions.md on the ClickHouse path: the documented hand-instrumented
agent's spans, written to `otel_traces` as the Collector's exporter writes them, are chosen, recognised
and judged by `score --clickhouse --conventions` as `serve --conventions` judges them
(tests/collector/serve/test_declared_conventions.py); without the file they are not tool executions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.collector.clickhouse._corpus import load_clickhouse, otlp_json
from tests.collector.serve.test_declared_conventions import SPEC, AcmeAgent, documented_conventions

pytest.importorskip("chdb")

_RUNNER = """
import contextlib, io, json, sys
from collector.cli._main import main
answers = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    answers.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(answers))
"""


def _cli(*commands: list[str]) -> list[tuple[int, str, str]]:
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(list(commands))],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [(code, out, err) for code, out, err in json.loads(done.stdout)]


def test_score_from_clickhouse_reads_a_users_convention_as_serve_does(tmp_path: Path) -> None:
    captured = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "acme"}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(captured))
    agent = AcmeAgent(tracer_provider)
    expected = {
        agent.run("acme:paris", [("call-1", {"city": "Paris"})]): "pass",
        agent.run("acme:lyon", [("call-2", {"city": "Lyon"})]): "fail",
        agent.run("acme:atlantis", [("call-3", {"city": "Atlantis"})]): "fail",
    }
    tracer_provider.shutdown()
    load_clickhouse(tmp_path / "ch", [otlp_json(captured.get_finished_spans())])
    (tmp_path / "weather.yaml").write_text(SPEC)
    conventions = tmp_path / "acme-conventions.yaml"
    conventions.write_text(documented_conventions())
    common = ["score", "--clickhouse", f"chdb:{tmp_path / 'ch'}", "--spec", str(tmp_path / "weather.yaml")]
    (code, out, err), (plain_code, plain_out, _), (db_code, _, db_err) = _cli(
        [*common, "--conventions", str(conventions), "--format", "json"],
        [*common, "--format", "json", "--allow-empty"],
        [
            "score",
            "--db",
            str(tmp_path / "none.duckdb"),
            "--spec",
            str(tmp_path / "weather.yaml"),
            "--conventions",
            str(conventions),
        ],
    )
    assert code == 1, err  # one run fails its spec
    verdicts: list[dict[str, Any]] = json.loads(out)
    assert {v["trace_id"]: v["label"] for v in verdicts} == expected
    raised = next(v for v in verdicts if v["task"] == "acme:atlantis")
    assert "get_weather" in raised["reason"]
    # Without the file no span of this format is chosen: nothing is judged from it.
    assert (plain_code, json.loads(plain_out)) == (0, [])
    assert db_code == 2 and "add --clickhouse URL" in db_err and "serve --conventions" in db_err
