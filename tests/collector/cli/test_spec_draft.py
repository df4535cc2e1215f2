"""`tracescore spec draft` on the demo's data: drafted from each task's good runs, the draft passes
them (never a draft its own runs fail) and fails each broken run for the reason the demo built it to."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from collector.cli import main
from collector.cli._demo_agent import ROLLOUTS, run_agent
from collector.testing import Recording
from scoring import Verdict
from scoring.evidence.runs import complete_runs, load_evidence
from scoring.report.draft import Draft, _verified, draft_spec
from tests._otel import provider
from tests._server import ServeProcess
from tests.collector.clickhouse._chdb_tool import load
from tests.collector.clickhouse._corpus import otlp_json

# The demo's good runs, by story; every other run is broken, by the check (or gate) named here.
GOOD = {"asks the right questions", "fast answer", "approved by a person"}
BROKEN_BY = {
    "quotes the wrong service (argument mismatch)": {"arguments"},
    "also sends a newsletter (strict-mode violation)": {"strict"},
    "carrier API fails (errored call)": {"expected_tool"},
    "cold cache (slow tool)": {"latency"},
    "waits for approval (paused call)": {"expected_tool"},
}


_SPANS: list[ReadableSpan] = []


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, str, str]]]:
    """The demo's rollouts stored in a database file: (task, story, trace id) of each."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("demo")
    traces = [(r.task, r.story, run_agent(tracer, r)) for r in ROLLOUTS]
    db = tmp_path_factory.mktemp("draft") / "demo.duckdb"
    _SPANS[:] = memory.get_finished_spans()
    Recording(_SPANS, db=db).close()
    return db, traces


def _unmet(verdict: Verdict) -> set[str]:
    return {c.kind for c in (*verdict.gates, *verdict.checks) if not c.satisfied}


def test_drafts_from_the_good_runs_pass_them_and_fail_each_broken_run_for_its_reason(
    demo: tuple[Path, list[tuple[str, str, str]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, traces = demo
    with Recording([], db=db) as stored:
        run_of = {r.trace_id: r.run_id for r in stored.runs()}
    for task in sorted({t for t, _, _ in traces}):
        good = [run_of[trace] for t, story, trace in traces if t == task and story in GOOD]
        output = tmp_path / f"{task}.yaml"
        args = ["spec", "draft", "--db", str(db), "--task", task, "--output", str(output)]
        assert main([*args, *(a for run in good for a in ("--run", run))]) == 0
        draft = output.read_text()
        assert "# Drafted by `tracescore spec draft` from" in draft
        assert yaml.safe_load(draft)["select"] == {"task": task}
        with Recording([], db=db) as stored:
            verdicts = {v.run_id: v for v in stored.score(output).verdicts}
        for t, story, trace in traces:
            if t != task:
                continue
            verdict = verdicts[run_of[trace]]
            if story in GOOD:
                assert verdict.label == "pass", (task, story, verdict.reason, draft)
            else:
                assert verdict.label == "fail", (task, story, draft)
                assert BROKEN_BY[story] <= _unmet(verdict), (story, _unmet(verdict), verdict.reason)
    assert capsys.readouterr().err.count("tracescore: wrote") == 3


def test_a_draft_from_every_run_of_a_task_never_fails_one_of_them(
    demo: tuple[Path, list[tuple[str, str, str]]],
) -> None:
    db, _ = demo
    with Recording([], db=db) as stored:
        for task in ("same-day-dispatch", "stock-check"):
            runs = load_evidence(stored.connection, complete_runs(stored.connection, task_id=task))
            draft = draft_spec(runs, task)
            scoring = stored.score(yaml.safe_load(draft.yaml()), task=task)
            assert [v.label for v in scoring.verdicts] == ["pass"] * len(runs), draft.yaml()
        # Two of the three refunds only paused: no tool ran cleanly in all, so there is nothing to draft.
        refunds = load_evidence(stored.connection, complete_runs(stored.connection, task_id="refund"))
        with pytest.raises(ValueError, match="agree on nothing a spec could check"):
            draft_spec(refunds, "refund")


def test_the_help_states_the_drafts_latency_floor() -> None:
    # docs/cli.md is the parser's help (tests/test_docs.py); the parser module does not import scoring.
    from scoring.report.draft import MIN_LATENCY_MS

    assert f"at least {MIN_LATENCY_MS} ms" in (Path(__file__).parents[3] / "docs" / "cli.md").read_text()


def test_nothing_to_draft_from_is_one_line(
    demo: tuple[Path, list[tuple[str, str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = demo
    assert main(["spec", "draft", "--db", str(db), "--task", "no-such-task"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tracescore: no complete run was chosen: nothing to draft from"
    )


def test_what_a_drafted_run_fails_is_taken_out_and_said(
    demo: tuple[Path, list[tuple[str, str, str]]],
) -> None:
    """The last guard: a check the heuristics drafted wrong is judged, found failing and taken out."""
    db, _ = demo
    with Recording([], db=db) as stored:
        runs = load_evidence(stored.connection, complete_runs(stored.connection, task_id="stock-check"))
    wrong = Draft(
        {
            "name": "stock",
            "expected_tools": ["check_stock"],
            "arguments": {"check_stock": {"sku": "SKU-1"}},  # two of the three runs asked for another sku
            "latency": {"max_ms": {"check_stock": 1}},  # the slow run took 350 ms
        }
    )
    checked = _verified(wrong, runs)
    assert checked.spec == {"name": "stock", "expected_tools": ["check_stock"]}
    assert checked.removed == [
        "arguments (a run it was drafted from failed it)",
        "latency (a run it was drafted from failed it)",
    ]
    assert "# taken out: arguments" in checked.yaml()


def test_a_draft_from_clickhouse_is_the_draft_from_the_file(
    demo: tuple[Path, list[tuple[str, str, str]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same spans in the Collector's otel_traces table (chDB, in a child process as every chDB test)
    and in a database file: one draft."""
    pytest.importorskip("chdb")
    db, _ = demo
    clickhouse = tmp_path / "clickhouse"
    load(clickhouse, [otlp_json(_SPANS)])
    assert main(["spec", "draft", "--db", str(db), "--task", "stock-check"]) == 0
    from_file = capsys.readouterr().out
    command = ["spec", "draft", "--clickhouse", f"chdb:{clickhouse}", "--task", "stock-check"]
    done = subprocess.run(
        [sys.executable, "-m", "collector.cli", *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "check_stock" in from_file
    assert done.stdout == from_file


def test_a_draft_while_serve_holds_the_file_is_the_draft_from_the_file(
    demo: tuple[Path, list[tuple[str, str, str]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """serve holds the file, so no other process may open it: `spec draft --db` finds the server and
    drafts from its complete traces, read through its API; the draft is the one the file gives. A trace
    still open on the server, which calls a tool no run of the file calls, is left out (a half run
    would draft a half spec)."""
    db, _ = demo
    assert main(["spec", "draft", "--db", str(db), "--task", "stock-check"]) == 0
    from_file = capsys.readouterr().out
    served = tmp_path / "served.duckdb"
    shutil.copyfile(db, served)
    server = ServeProcess(served, extra_args=("--grace-seconds", "300")).start()
    tp = provider(server, "http")
    try:
        tracer = tp.get_tracer("tests")
        root = tracer.start_span("still open", attributes={"tracescore.task.id": "stock-check"})
        with tracer.start_as_current_span(
            "execute_tool open_only",
            context=set_span_in_context(root),
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "open_only"},
        ):
            pass
        assert tp.force_flush()  # acknowledged, so stored: the server holds the open trace
        assert main(["spec", "draft", "--db", str(served), "--task", "stock-check"]) == 0
        root.end()
    finally:
        tp.shutdown()
        server.kill()
    from_server = capsys.readouterr().out
    assert "check_stock" in from_file
    assert "open_only" not in from_server
    assert from_server == from_file
