"""Prometheus text exposition of the server's own counters (`GET /metrics`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from collector.serve._verdict_counts import MAX_PAIRS, OVERFLOW_TASK
from collector.serve.memory import REFUSE_AT, held_bytes, resident_bytes
from collector.store.scope_tally import OTHER, ScopeCount

# The scope series /metrics shows at most (docs/online.md): a bound on its label cardinality.
SCOPE_SERIES = 20

if TYPE_CHECKING:
    from collector.serve._services import Services


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_metrics(services: Services) -> str:
    ingest, writer = services.ingest.stats, services.writer.stats
    lines: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            # `_count`/`_sum` of a summary are suffixes of the name, not labels.
            suffix = labels if labels.startswith("_") else ""
            lines.append(f"{name}{suffix}{'' if suffix else labels} {_number(value)}")

    metric(
        "tracescore_spans_received_total",
        "counter",
        "Spans received over OTLP (good and rejected).",
        [("", ingest.spans_received)],
    )
    metric(
        "tracescore_spans_rejected_total",
        "counter",
        "Spans refused as individually invalid (partial success).",
        [("", ingest.spans_rejected)],
    )
    metric(
        "tracescore_spans_stored_total", "counter", "Spans committed to DuckDB.", [("", writer.spans_stored)]
    )
    metric(
        "tracescore_spans_duplicate_total",
        "counter",
        "Re-sent spans that were already stored.",
        [("", writer.spans_duplicate)],
    )
    metric(
        "tracescore_spans_own_ignored_total",
        "counter",
        "tracescore's own verdict spans that came back.",
        [("", ingest.spans_own_ignored)],
    )
    metric(
        "tracescore_requests_refused_total",
        "counter",
        "Requests refused with a retryable answer (overload, storage failure, shutdown).",
        [("", ingest.requests_refused)],
    )
    metric(
        "tracescore_requests_invalid_total",
        "counter",
        "Undecodable requests.",
        [("", ingest.requests_invalid)],
    )
    metric(
        "tracescore_requests_oversize_total",
        "counter",
        "Requests over the size limit.",
        [("", ingest.requests_oversize)],
    )
    preparer = services.ingest.preparer
    metric(
        "tracescore_decode_workers",
        "gauge",
        "Decode worker processes configured (0: requests are decoded in the server's process).",
        [("", preparer.workers)],
    )
    metric(
        "tracescore_decode_workers_ready",
        "gauge",
        "Whether requests go to the decode workers now: 1, or 0 while they start or restart.",
        [("", 1 if preparer.ready else 0)],
    )
    metric(
        "tracescore_requests_decoded_total",
        "counter",
        "Requests decoded, by where: in a decode worker or in the server's process.",
        [('{where="worker"}', preparer.prepared_in_workers), ('{where="server"}', preparer.prepared_here)],
    )
    metric(
        "tracescore_decode_worker_restarts_total",
        "counter",
        "Times the decode workers were replaced after one died.",
        [("", preparer.restarts)],
    )
    metric(
        "tracescore_checkpoints_total",
        "counter",
        "WAL checkpoints into the database file (timer, then at shutdown).",
        [("", writer.checkpoints)],
    )
    metric(
        "tracescore_checkpoints_deferred_total",
        "counter",
        "Timed checkpoints put off because online scoring was writing; each is retried within 0.2 s.",
        [("", writer.checkpoints_deferred)],
    )
    metric(
        "tracescore_checkpoint_seconds_total",
        "counter",
        "Time spent checkpointing (concurrent checkpoints: writes and run completions go on meanwhile).",
        [("", writer.checkpoint_seconds)],
    )
    metric(
        "tracescore_commits_during_checkpoints_total",
        "counter",
        "The writer's transactions (span batches, run completions) that overlapped a checkpoint.",
        [("", writer.commits_during_checkpoints)],
    )
    metric(
        "tracescore_longest_commit_during_checkpoint_seconds",
        "gauge",
        "The longest of those transactions since the start, from begin to commit: what a checkpoint "
        "made an acknowledgement wait.",
        [("", writer.longest_commit_during_checkpoint_seconds)],
    )
    metric(
        "tracescore_last_checkpoint_seconds",
        "gauge",
        "How long the latest checkpoint took.",
        [("", writer.last_checkpoint_seconds)],
    )
    metric(
        "tracescore_ingest_queue_spans",
        "gauge",
        "Spans received and waiting for their commit.",
        [("", services.writer.backlog_spans)],
    )
    metric(
        "tracescore_intake_bytes",
        "gauge",
        "Bytes counted for the OTLP requests in flight (8 times their bodies), from before their bodies "
        "are read to their answers.",
        [("", services.ingest.intake.held_bytes)],
    )
    metric(
        "tracescore_intake_bytes_limit",
        "gauge",
        "What the OTLP requests in flight may hold at once; beyond it they wait their turn.",
        [("", services.ingest.intake.limit_bytes)],
    )
    metric(
        "tracescore_open_traces",
        "gauge",
        "Traces whose runs are not complete yet.",
        [("", services.writer.open_traces)],
    )
    metric(
        "tracescore_retained_trace_bytes",
        "gauge",
        "Estimated memory of completed traces kept for late and re-sent spans (bounded by the budget).",
        [("", services.writer.retained_trace_bytes)],
    )
    scopes = scope_series(services.writer.scopes.counts())
    metric(
        "tracescore_scope_spans_total",
        "counter",
        f"Spans stored, by instrumentation scope and version (the {SCOPE_SERIES} with most spans; the "
        'rest under scope="_other").',
        [(labels, count.spans) for labels, count in scopes],
    )
    metric(
        "tracescore_scope_executing_spans_total",
        "counter",
        "Of those spans, the ones that gave a tool execution: a scope at 0 is read for nothing "
        "(docs/conventions.md).",
        [(labels, count.executing) for labels, count in scopes],
    )
    metric(
        "tracescore_runs_completed_total",
        "counter",
        "Runs completed (a recomputed run counts again).",
        [("", writer.runs_completed)],
    )
    metric(
        "tracescore_store_healthy",
        "gauge",
        "1 when the last write succeeded.",
        [("", 1 if services.writer.healthy else 0)],
    )
    metric(
        "tracescore_write_failures_total", "counter", "Failed group commits.", [("", writer.write_failures)]
    )
    online = services.online
    if online is not None:
        metric(
            "tracescore_scoring_queue_traces",
            "gauge",
            "Completed traces waiting to be scored.",
            [("", online.pending)],
        )
        metric(
            "tracescore_runs_scored_total", "counter", "Runs scored online.", [("", online.stats.runs_scored)]
        )
        metric(
            "tracescore_verdicts_unstored",
            "gauge",
            "Verdicts delivered to watchers and export, not stored yet.",
            [("", online.unstored)],
        )
        metric(
            "tracescore_scoring_lag_seconds",
            "summary",
            "From a run's completion to its stored verdict (the most recent runs).",
            _summary(online.stats.lag_s),
        )
        metric(
            "tracescore_verdict_lag_seconds",
            "summary",
            "From a run's completion to its verdict handed to watchers and export (the most recent runs).",
            _summary(online.stats.delivery_lag_s),
        )
        metric(
            "tracescore_verdicts_total",
            "counter",
            f"Verdicts delivered (and then stored), by spec, task and label; the first {MAX_PAIRS} "
            f'(spec, task) pairs have series of their own, later tasks count as task="{OVERFLOW_TASK}".',
            [
                (f'{{spec="{_label(spec)}",task="{_label(task)}",label="{label}"}}', count)
                for (spec, task, label), count in online.stats.verdicts.items()
            ],
        )
    history = services.history
    if history is not None:
        metric(
            "tracescore_history_exported_rows_total",
            "counter",
            "Rows written to --export-dir by this process, by table (each stored row goes out once).",
            [('{table="otel_traces"}', history.stats.spans), ('{table="scores"}', history.stats.scores)],
        )
        metric(
            "tracescore_history_export_failures_total",
            "counter",
            "History export cycles that failed (logged; tried again at the next cycle).",
            [("", history.stats.failures)],
        )
        metric(
            "tracescore_history_export_last_success_timestamp_seconds",
            "gauge",
            "Unix time the latest history export cycle ended without a failure (the start until one did).",
            [("", history.stats.last_success_s)],
        )
    specs = services.specs
    metric(
        "tracescore_spec_reload_failures_total",
        "counter",
        "Spec edits that failed to load.",
        [("", specs.failed_reloads)],
    )
    if services.conventions is not None and services.conventions.paths:
        metric(
            "tracescore_conventions_reload_failures_total",
            "counter",
            "Conventions file edits that failed to load (the last good conventions keep recognising).",
            [("", services.conventions.failed_reloads)],
        )
    metric("tracescore_watchers", "gauge", "Open verdict watch streams.", [("", services.hub.watchers)])
    metric(
        "tracescore_resident_memory_bytes",
        "gauge",
        "Resident memory of the server (its library pages included) and its decode workers (their own).",
        [("", resident_bytes(services.ingest.preparer.worker_pids()))],
    )
    metric(
        "tracescore_memory_held_bytes",
        "gauge",
        "Memory the server and its decode workers hold as the memory budget counts it (library pages "
        "the kernel may drop left out).",
        [("", held_bytes(services.ingest.preparer.worker_pids()))],
    )
    if services.memory_limit_bytes is not None:
        metric(
            "tracescore_memory_limit_bytes",
            "gauge",
            f"The memory budget; OTLP requests are refused, retryably, above {REFUSE_AT:.0%} of it.",
            [("", services.memory_limit_bytes)],
        )
    metric(
        "tracescore_start_time_seconds",
        "gauge",
        "Unix time this server started (it changes at each restart, e.g. after an exit on a database "
        "DuckDB invalidated).",
        [("", services.started_at)],
    )
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    """Every digit: a unix time or a byte count in `%g`'s six would be off by seconds or megabytes."""
    return str(int(value)) if isinstance(value, int) else repr(float(value))


def scope_series(counts: list[ScopeCount]) -> list[tuple[str, ScopeCount]]:
    """Labels and counts of the scope series: the `SCOPE_SERIES` scopes with most spans, then one
    `_other` series summing the rest, so a sender's scope names cannot grow the exposition."""
    named = [c for c in counts if (c.name, c.version) != OTHER]
    shown = named[:SCOPE_SERIES]
    rest = named[SCOPE_SERIES:] + [c for c in counts if (c.name, c.version) == OTHER]
    if rest:
        shown.append(
            ScopeCount(OTHER[0], OTHER[1], sum(c.spans for c in rest), sum(c.executing for c in rest))
        )
    return [(f'{{scope="{_label(c.name)}",version="{_label(c.version)}"}}', c) for c in shown]


def _summary(values: Iterable[float]) -> list[tuple[str, float]]:
    """Prometheus summary samples: the median and p99, count and sum."""
    ordered = sorted(values)
    samples = [
        (f'{{quantile="{q}"}}', ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0)
        for q in (0.5, 0.99)
    ]
    return [*samples, ("_count", len(ordered)), ("_sum", sum(ordered))]
