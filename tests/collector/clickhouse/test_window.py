"""`--where` and `compare` from ClickHouse (issue 28, item 3): rollouts of two versions of an agent, sent
by the OpenTelemetry SDK with `service.version` on the resource, in the exporter's `otel_traces` table;
`--where` keeps to one version's runs and `compare` tells the versions apart there as on a file."""

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

pytest.importorskip("chdb")

SPEC = "name: dispatch\nexpected_tools: [lookup_shipping_cutoff]\n"
VERSIONS = {"1.0": (12, 12), "1.1": (12, 2)}  # rollouts, passing


def _requests() -> list[dict[str, Any]]:
    requests = []
    for version, (rollouts, passing) in VERSIONS.items():
        captured = InMemorySpanExporter()
        provider = TracerProvider(
            resource=Resource.create({"service.name": "shop", "service.version": version})
        )
        provider.add_span_processor(SimpleSpanProcessor(captured))
        tracer = provider.get_tracer("tests")
        for i in range(rollouts):
            agent = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "shop",
                "tracescore.task.id": "t",
            }
            with tracer.start_as_current_span("invoke_agent shop", attributes=agent):
                tool = "lookup_shipping_cutoff" if i < passing else "send_email"
                attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
                with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
                    pass
        provider.shutdown()
        requests.append(otlp_json(captured.get_finished_spans()))
    return requests


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("clickhouse-window")
    load_clickhouse(directory / "ch", _requests())
    (directory / "spec.yaml").write_text(SPEC)
    return directory / "ch", directory / "spec.yaml"


# Both commands in one child process (chDB pins one data directory a process, and starting it is
# most of a command's time): each command's exit code and output, in order.
_RUNNER = """
import contextlib, io, json, sys
from collector.cli._main import main
answers = []
for args in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(args)
    answers.append([code, out.getvalue()])
print(json.dumps(answers))
"""


def _cli(loaded: tuple[Path, Path], *commands: list[str]) -> list[tuple[int, Any]]:
    data, spec = loaded
    common = ["--clickhouse", f"chdb:{data}", "--spec", str(spec), "--format", "json"]
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps([[*command, *common] for command in commands])],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [(code, json.loads(out)) for code, out in json.loads(done.stdout)]


def test_where_and_compare_read_the_resource_attribute_from_clickhouse(loaded: tuple[Path, Path]) -> None:
    (scored, verdicts), (compared, document) = _cli(
        loaded,
        ["score", "--where", "service.version=1.1"],
        ["compare", "--by", "service.version", "--fail-on", "regression"],
    )
    assert scored == 1
    assert (len(verdicts), sum(v["passed"] for v in verdicts)) == (12, 2)
    assert compared == 1
    assert (document["before"]["value"], document["after"]["value"]) == ("1.0", "1.1")
    [row] = document["rows"]
    assert (row["passed_before"], row["n_before"], row["passed_after"], row["n_after"]) == (12, 12, 2, 12)
    assert row["significant"] is True and row["p_value"] < 0.001
