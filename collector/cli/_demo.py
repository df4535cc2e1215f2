"""`tracescore demo`: the whole path on the embedded default, with real OTLP traffic.

Starts the sidecar (DuckDB file, loopback ports) with the demo specs, drives the scripted shop
assistant through a few tasks with several rollouts each over the real OTLP/gRPC exporter, prints each
verdict as online scoring produces it, then the per-task pass rates. A separate last step shows one
BFCL-style multi-turn conversation judged turn by turn (its own sidecar and file: `_conversation_step`).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from collector.cli._demo_agent import ROLLOUTS, run_agent
from collector.cli._demo_conversation import GUESSING, run_conversation
from collector.cli._demo_conversation import SPECS as CONVERSATION_SPECS
from collector.serve.server import Running, start, stop
from collector.serve.settings import Address, ServeSettings
from collector.store.database import wal_files
from scoring import Verdict, aggregate
from scoring.report.text import tasks_text, verdict_value
from scoring.verdict.record import ConversationVerdict

DEMO_SPECS = """\
# The demo's specs: edit them and re-run `tracescore score --db {db} --spec {specs}`.
name: same-day-dispatch
select: {{task: same-day-dispatch}}
expected_tools: [lookup_shipping_cutoff, quote_shipping]
arguments:
  quote_shipping: {{region: north, service: priority}}
allow_additional: false      # strict mode: an unexpected tool fails the run
---
name: stock-check
select: {{task: stock-check}}
expected_tools: [check_stock]
latency: {{max_ms: {{check_stock: 200}}}}
---
name: refund
select: {{task: refund}}
expected_tools: [refund_order]
"""


def _free(address: Address) -> Address:
    """The address itself if free, else the same host on a port the system picks (a demo must not fail
    because something already listens on 4317)."""
    with socket.socket(socket.AF_INET6 if ":" in address.host else socket.AF_INET) as probe:
        try:
            probe.bind((address.host, address.port))
            return address
        except OSError:
            probe.bind((address.host, 0))
            return Address(address.host, probe.getsockname()[1])


class _Sidecar:
    """The sidecar on its own event-loop thread, so the demo's agent can run in the foreground."""

    def __init__(self, settings: ServeSettings) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tracescore-demo", daemon=True)
        self._thread.start()
        self.running: Running = asyncio.run_coroutine_threadsafe(start(settings), self._loop).result(60)

    def follow(self, *consumers: Callable[[Verdict], None]) -> None:
        """Hand every verdict to the consumers as it is judged, until the sidecar stops."""
        subscription = self.running.services.hub.subscribe()
        while True:
            live = asyncio.run_coroutine_threadsafe(subscription.queue.get(), self._loop).result()
            if live is None:
                return
            for consume in consumers:
                consume(live.verdict)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(stop(self.running), self._loop).result(120)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def _verdict_printer(names: dict[str, str]) -> Callable[[Verdict], None]:
    """Prints a verdict under the name of the agent run it judges: verdicts come a grace period after
    their run, while later runs are already printed."""

    def show(verdict: Verdict) -> None:
        value = verdict_value(verdict)  # value 1.00 yet FAIL: says the gate, which value does not count
        mark = {"pass": "PASS", "fail": "FAIL"}.get(verdict.label, "ERROR")
        run = names.get(verdict.trace_id, verdict.task or "-")
        print(f"    verdict  {mark:<5} {run:<21} value {value}  {verdict.reason or 'all checks satisfied'}")

    return show


def run_demo(db: Path, settings: ServeSettings) -> int:
    for stale in (db, *wal_files(db)):
        stale.unlink(missing_ok=True)  # the demo's own file, rebuilt each time
    specs_path = db.with_name(db.stem + "-specs.yaml")
    specs_path.write_text(DEMO_SPECS.format(db=db, specs=specs_path))
    settings = replace(
        settings,
        db=db,
        grpc=_free(settings.grpc),
        http=_free(settings.http),
        grace_seconds=0.3,
        specs=(specs_path,),
    )
    print(
        f"tracescore demo: sidecar on OTLP/gRPC {settings.grpc} and OTLP/HTTP {settings.http}, database {db}"
    )
    print(
        f"scoring every completed run online against the demo's specs, written to {specs_path} "
        "(rewritten on each demo)\n"
    )
    sidecar = _Sidecar(settings)
    verdicts: list[Verdict] = []
    names: dict[str, str] = {}  # trace id -> "task #n", set as each run ends (its verdict comes later)
    printer = threading.Thread(
        target=sidecar.follow, args=(verdicts.append, _verdict_printer(names)), daemon=True
    )
    printer.start()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-assistant"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=str(settings.grpc), insecure=True), schedule_delay_millis=100
        )
    )
    tracer = provider.get_tracer("tracescore.demo")
    started = time.monotonic()
    counts: dict[str, int] = {}
    for rollout in ROLLOUTS:
        counts[rollout.task] = counts.get(rollout.task, 0) + 1
        name = f"{rollout.task} #{counts[rollout.task]}"
        print(f"  agent run  {name}: {rollout.story}")
        names[run_agent(tracer, rollout)] = name
        time.sleep(0.25)  # a little pacing, so verdicts visibly arrive while the agent keeps working
    provider.force_flush()
    provider.shutdown()
    deadline = time.monotonic() + 10
    while len(verdicts) < len(ROLLOUTS) and time.monotonic() < deadline:
        time.sleep(0.05)
    stats = sidecar.running.writer.stats
    sidecar.stop()
    printer.join(5)
    print(
        f"\n{len(ROLLOUTS)} agent runs in {time.monotonic() - started:.1f} s: "
        f"{stats.spans_stored} spans stored, "
        f"{stats.runs_completed} runs complete, {len(verdicts)} verdicts\n"
    )
    print(tasks_text(aggregate(verdicts)))
    _conversation_step(db, settings)
    per_tool = (
        "SELECT tool_name, count(*) FILTER (WHERE NOT error AND NOT paused) AS clean, "
        "count(*) FILTER (WHERE error) AS errored, count(*) FILTER (WHERE paused) AS paused "
        "FROM executions GROUP BY 1 ORDER BY 1"
    )
    tracescore = runnable_command()
    print("\nThe same data, with SQL and the CLI:")
    print(f'  {tracescore} sql --db {db} "{per_tool}"')
    print(
        f'  {tracescore} sql --db {db} "SELECT task_id, spec, label, reason FROM verdicts ORDER BY task_id"'
    )
    print(f"  {tracescore} score --db {db} --spec {specs_path} --format json")
    print(f"  {tracescore} report --db {db} --spec {specs_path}")
    return 0


# --- The multi-turn step (issue 21): one BFCL-style conversation, judged turn by turn. ---------------
# Kept apart from the shop demo above: its own sidecar and database file beside the demo's, so the
# shop's verdicts, pass rates and printed commands stay as they are.


def _conversation_step(db: Path, settings: ServeSettings) -> None:
    conversation_db = db.with_name(db.stem + "-conversation.duckdb")
    for stale in (conversation_db, *wal_files(conversation_db)):
        stale.unlink(missing_ok=True)
    specs_path = db.with_name(db.stem + "-conversation-specs.yaml")
    specs_path.write_text(CONVERSATION_SPECS)
    story = GUESSING
    print(
        "\nA multi-turn conversation, judged turn by turn as BFCL does "
        f"({specs_path}, database {conversation_db}):"
    )
    for index, turn in enumerate(story.turns, 1):
        calls = ", ".join(name for name, _ in turn.steps) or "no tool call"
        print(f"  turn {index}  user: {turn.user:<36} agent: {calls}; {turn.answer!r}")
    sidecar = _Sidecar(replace(settings, db=conversation_db, specs=(specs_path,)))
    verdicts: list[Verdict] = []
    follower = threading.Thread(target=sidecar.follow, args=(verdicts.append,), daemon=True)
    follower.start()
    provider = TracerProvider(resource=Resource.create({"service.name": "files-agent"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=str(settings.grpc), insecure=True), schedule_delay_millis=100
        )
    )
    conversation_id = run_conversation(provider.get_tracer("tracescore.demo"), story)
    provider.shutdown()
    deadline = time.monotonic() + 10
    while not any(isinstance(v, ConversationVerdict) for v in verdicts) and time.monotonic() < deadline:
        time.sleep(0.05)
    sidecar.stop()
    follower.join(5)
    for verdict in verdicts:
        if isinstance(verdict, ConversationVerdict) and verdict.conversation_id == conversation_id:
            mark = {"pass": "PASS", "fail": "FAIL"}.get(verdict.label, "ERROR")
            print(f"  conversation {mark} ({verdict.spec}, {len(verdict.turns)} turns)")
            for judged in verdict.turns:
                print(
                    f"    turn {judged.index}  {'PASS' if judged.passed else 'FAIL'}  "
                    f"{judged.reason or 'all checks satisfied'}"
                )


def runnable_command() -> str:
    """How to run `tracescore` from here, as the user can paste it (issue #20): the bare name when the
    shell finds this very installation, else the console script beside this interpreter (`.venv/bin/…`
    after `make`), else the module."""
    script = Path(sys.executable).parent / "tracescore"
    found = shutil.which("tracescore")
    if found is not None and Path(found).resolve() == script.resolve():
        return "tracescore"
    if script.exists():
        try:
            return str(script.relative_to(Path.cwd()))
        except ValueError:
            return str(script)
    return f"{sys.executable} -m collector.cli"
