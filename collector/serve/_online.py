"""Online scoring in the running sidecar: every run that completes is scored against the specs that
select it, off the receive path, on its own thread and its own DuckDB connection.

A late span re-opens a run; when it completes again its version grows and a new verdict is stored
beside the old one (verdicts are keyed on run, spec and run version), so the history stays queryable.

A verdict never waits on storage: it is handed to watchers, the OTLP export and /metrics as soon as it
is judged, and stored after, in batches, by collector/serve/_verdict_store.py.

At start, runs an earlier process completed but never scored, or scored without the verdict reaching
the store (a crash in between, or a server without specs), are looked up once
(collector/serve/_catch_up.py) and scored in batches while no live run waits: live runs keep their
latency, and a stop leaves the rest for the next start. Judged again from the same committed run, a
verdict comes again under the same key: delivery is at least once (docs/reliability.md).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb

from collector.serve._catch_up import Unscored, unjudged_conversations, unscored_runs
from collector.serve._conversation_timer import ConversationTimer
from collector.serve._hub import VerdictHub
from collector.serve._spec_source import SpecSource
from collector.serve._verdict_counts import VerdictCounts
from collector.serve._verdict_store import Delivered, VerdictStore
from collector.serve._verdict_writes import VerdictWrites
from collector.store.live_evidence import LiveRun, live_evidence, spanning_other_traces
from collector.store.writer import CompletedTrace
from scoring import Verdict, ensure_verdict_schema
from scoring.evidence.conversations import complete_conversations, load_conversations
from scoring.evidence.runs import Evidence, Run, complete_runs, load_evidence
from scoring.verdict.table import verdict_json

if TYPE_CHECKING:
    from collector.serve._verdict_export import VerdictExporter

log = logging.getLogger("tracescore.online")

_BATCH_RUNS = 500
_CATCH_UP_BATCH = 200  # runs per batch: a live run waits at most one such batch
_SPEC_POLL_S = 1.0
_LAG_SAMPLES = 2_000
_UNREAD_LOGGED = 1_000  # scopes remembered as logged: a sender inventing names cannot grow memory or log


@dataclass(slots=True)
class OnlineStats:
    runs_scored: int = 0
    verdicts: VerdictCounts = field(default_factory=VerdictCounts)  # by spec, task and label
    errors: int = 0
    store_failures: int = 0
    caught_up: int = 0  # runs completed before this start, scored at it
    # Seconds from a run's completion (its commit) to its verdict being stored.
    lag_s: deque[float] = field(default_factory=lambda: deque(maxlen=_LAG_SAMPLES))
    # Seconds from a run's completion to its verdict being handed to watchers, export and /metrics.
    delivery_lag_s: deque[float] = field(default_factory=lambda: deque(maxlen=_LAG_SAMPLES))


class OnlineScorer:
    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        specs: SpecSource,
        hub: VerdictHub | None = None,
        exporter: VerdictExporter | None = None,
        grace_s: float = 2.0,
        writes: VerdictWrites | None = None,
    ) -> None:
        self._con = connection
        self.specs = specs
        self._hub = hub
        self._exporter = exporter
        self._queue: queue.SimpleQueue[tuple[float, list[CompletedTrace]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="tracescore-scorer", daemon=True)
        self._pending = 0
        self._lock = threading.Lock()
        self.stats = OnlineStats()
        self._store = VerdictStore(connection.cursor(), self._stored, writes)
        # Scopes already logged as read for nothing (`_log_unread`): each is logged once per process.
        self._unread_logged: set[tuple[str, str]] = set()
        # Conversations (runs sharing a conversation id) are judged after their last turn: see the timer.
        self._conversations = ConversationTimer(grace_s)
        # Runs completed before this moment were completed by an earlier process: only those can have
        # been left unscored (the writer that hands runs to this scorer does not exist yet).
        self._started_us = int(time.time() * 1e6)
        ensure_verdict_schema(connection)

    @property
    def pending(self) -> int:
        """Completed traces waiting to be scored (the scoring backlog)."""
        return self._pending

    @property
    def unstored(self) -> int:
        """Verdicts delivered and not stored yet (the storing backlog)."""
        return self._store.unstored

    def start(self) -> None:
        self._store.start()
        self._thread.start()

    def enqueue(self, completed: list[CompletedTrace]) -> None:
        """Called by the writer after it committed these traces' runs; never blocks it."""
        with self._lock:
            self._pending += len(completed)
        self._queue.put((time.monotonic(), completed))

    def stop(self, timeout_s: float = 60.0) -> None:
        """Finish scoring what is queued (in-flight scoring completes), store every verdict, then stop."""
        self._queue.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.error("scoring did not finish within %.0f s", timeout_s)
        self._store.stop(timeout_s)
        self._con.close()

    def _run(self) -> None:
        backlog = self._plan_catch_up()
        last_poll = 0.0
        while True:
            wait_s = self._conversations.wait_s(time.monotonic(), _SPEC_POLL_S)
            try:
                item = self._queue.get_nowait() if backlog else self._queue.get(timeout=wait_s)
                idle = False
            except queue.Empty:
                item, idle = None, True
            now = time.monotonic()
            self._judge_conversations(self._conversations.due(now))
            if now - last_poll >= _SPEC_POLL_S:
                self.specs.refresh()
                last_poll = now
            if idle:
                if backlog:
                    self._catch_up(backlog)
                continue
            if item is None:
                self._abandon(backlog)
                return
            batch = [item]
            stop = False
            while len(batch) < _BATCH_RUNS:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            self._score(batch)
            if stop:
                self._abandon(backlog)
                return

    def _plan_catch_up(self) -> deque[Unscored]:
        try:
            conversations = unjudged_conversations(self._con, self.specs.specs, self._started_us)
        except Exception:
            log.exception("looking for conversations left unjudged before this start failed")
            conversations = []
        if conversations:
            log.info(
                "%d conversation(s) with turns completed before this start have no verdict since: "
                "judging them",
                len(conversations),
            )
            self._judge_conversations(conversations)
        try:
            found = unscored_runs(self._con, self.specs.specs, self._started_us)
        except Exception:
            log.exception("looking for runs left unscored before this start failed; `tracescore score` can")
            return deque()
        if found:
            log.info(
                "%d run(s) completed before this start have no verdict from the current specs: scoring "
                "them in the background",
                len(found),
            )
        return deque(found)

    def _catch_up(self, backlog: deque[Unscored]) -> None:
        from scoring import score_evidence  # a backlog means specs, loaded with the judge (issue 33)

        batch = [backlog.popleft() for _ in range(min(_CATCH_UP_BATCH, len(backlog)))]
        by_name = {s.name: s for s in self.specs.specs}  # the specs in force now: an edit applies
        try:
            evidence = load_evidence(self._con, [u.run for u in batch])
            self._log_unread(evidence)
            verdicts: list[Verdict] = []
            for item, run_evidence in zip(batch, evidence, strict=True):
                specs = [by_name[name] for name in item.specs if name in by_name]
                verdicts.extend(score_evidence(specs, run_evidence))
            self._deliver([u.run[0] for u in batch], verdicts)
            self.stats.caught_up += len(batch)
        except Exception:
            self.stats.store_failures += 1
            log.exception("scoring %d run(s) from before this start failed; they stay unscored", len(batch))
        if not backlog:
            log.info("caught up: %d run(s) from before this start scored", self.stats.caught_up)

    def _abandon(self, backlog: deque[Unscored]) -> None:
        self._judge_conversations(self._conversations.drain())  # stopping completed every trace
        if backlog:
            log.warning(
                "stopping with %d run(s) from before the last start still unscored: the next start scores "
                "them if they are within its window, `tracescore score` in any case",
                len(backlog),
            )

    def _score(self, batch: list[tuple[float, list[CompletedTrace]]]) -> None:
        completed_at: dict[str, float] = {}
        live: dict[str, LiveRun] = {}
        traces = 0
        for stamp, completed in batch:
            traces += len(completed)
            for trace in completed:
                for run in trace.runs:
                    completed_at.setdefault(run.summary.run_id, stamp)
                    live[run.summary.run_id] = run  # completed twice in one batch: its latest version
                    if run.summary.conversation_id is not None and self._has_turns():
                        self._conversations.turn_completed(
                            run.summary.conversation_id, run.summary.last_turn, stamp
                        )
        try:
            if self.specs.specs:
                self._judge(list(live.values()), completed_at)
        except Exception:
            self.stats.store_failures += 1
            log.exception("online scoring of %d run(s) failed; they stay unscored", len(completed_at))
        finally:
            with self._lock:
                self._pending -= traces

    def _judge(self, runs: list[LiveRun], completed_at: dict[str, float]) -> None:
        """Runs within one trace are judged from what the writer handed over; runs over several traces
        are read back from the store, which holds all of them (complete ones only)."""
        # The judge loads with the specs' models, where there are specs: a server given none never
        # imports pydantic, jsonschema or RE2 (issue 33).
        from scoring import score_evidence

        spanning = spanning_other_traces(self._con, runs)
        evidence = live_evidence(self._con, [r for r in runs if r.summary.run_id not in spanning])
        stored_ids = sorted(spanning)
        if stored_ids:
            evidence.extend(load_evidence(self._con, complete_runs(self._con, run_ids=stored_ids)))
        self._log_unread(evidence)
        specs = self.specs.indexed
        verdicts: list[Verdict] = []
        for run_evidence in evidence:
            verdicts.extend(score_evidence(specs, run_evidence))
        stamps: list[float | None] = [completed_at[v.run_id] for v in verdicts]
        # Each run judged from what the writer handed over is a version just completed, whose verdict no
        # store holds yet; a run read back from the store may be judged again by the next batch.
        self._deliver([e.run for e in evidence], verdicts, stamps, fresh=not spanning)
        now = time.monotonic()
        self.stats.delivery_lag_s.extend(now - completed_at[v.run_id] for v in verdicts)

    def _log_unread(self, evidence: list[Evidence]) -> None:
        """One line per scope, the first time a run none of whose spans tracescore reads shows it."""
        for run_evidence in evidence:
            unread = run_evidence.unread
            for scope in unread.scopes if unread is not None else ():
                key = (scope.name, scope.version)
                if key in self._unread_logged or len(self._unread_logged) >= _UNREAD_LOGGED:
                    continue
                self._unread_logged.add(key)
                if unread is not None and unread.known_gap is not None:
                    log.warning(
                        "spans from instrumentation scope %r version %r record no tool execution (a known "
                        "gap: %s): its runs that requested tool calls get `error` verdicts (see "
                        "docs/integrations.md)",
                        scope.name,
                        scope.version,
                        unread.known_gap,
                    )
                else:
                    log.warning(
                        "spans from instrumentation scope %r version %r are in no convention tracescore "
                        "reads: runs of only such spans get `error` verdicts (see docs/conventions.md)",
                        scope.name,
                        scope.version,
                    )

    def _has_turns(self) -> bool:
        return any(spec.turns is not None for spec in self.specs.specs)

    def _judge_conversations(self, conversation_ids: list[str]) -> None:
        """Judge these conversations from the store, which holds every completed turn."""
        if not conversation_ids:
            return
        from scoring.judge.conversation import score_conversation  # only with specs (issue 33)

        try:
            rows = complete_conversations(self._con, conversation_ids=sorted(conversation_ids))
            specs = self.specs.specs
            verdicts: list[Verdict] = []
            for conversation in load_conversations(self._con, rows):
                verdicts.extend(score_conversation(specs, conversation))
            self._deliver([], verdicts)
        except Exception:
            self.stats.store_failures += 1
            log.exception("scoring %d conversation(s) failed; `tracescore score` can", len(conversation_ids))

    def _deliver(
        self,
        runs: list[Run],
        verdicts: list[Verdict],
        completed_at: list[float | None] | None = None,
        *,
        fresh: bool = False,
    ) -> None:
        """Count, publish to watchers and export one batch's verdicts at once; storing them follows on
        the store's thread (`completed_at`: each verdict's run completion, for the stored lag)."""
        roots = {run.run_id: run.root_span_id for run in runs}
        texts = [verdict_json(v) for v in verdicts]  # once, for the store and every watcher
        self.stats.runs_scored += len(runs)
        for v in verdicts:
            self.stats.verdicts.count(v.spec, v.task, v.label)
            self.stats.errors += v.label == "error"
        if self._hub is not None:
            self._hub.publish(verdicts, texts, unstored=True)
        if self._exporter is not None:
            self._exporter.export(verdicts, roots)
        self._store.put(Delivered(verdicts, texts, completed_at or [None] * len(verdicts), fresh))

    def _stored(self, delivered: Delivered, stored: bool) -> None:
        """On the store's thread, after its commit (or its failure)."""
        if stored:
            now = time.monotonic()
            self.stats.lag_s.extend(now - at for at in delivered.completed_at if at is not None)
        else:
            self.stats.store_failures += 1
        if self._hub is not None:
            self._hub.stored(delivered.verdicts)
