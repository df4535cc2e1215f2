"""A writer process over a test's database file, driven batch by batch."""

from __future__ import annotations

import time
from pathlib import Path

from collector.decode.prepare import prepare_spans
from collector.model.domain import Span
from collector.store.database import open_writer
from collector.store.writer import CompletedTrace, WriteJob, Writer, WriterSettings


def writer_run(database: Path, batches: list[list[Span]]) -> list[CompletedTrace]:
    """One writer process over the file: each batch of spans written and its traces completed before
    the next; what the writer handed to online scoring."""
    connection = open_writer(database)
    handed: list[CompletedTrace] = []
    # A span whose parent is not in memory waits for it until the idle timeout.
    settings = WriterSettings(grace_s=0.05, idle_timeout_s=0.2, completion_interval_s=0.01)
    writer = Writer(connection, settings, on_complete=handed.extend)
    answers: list[BaseException | None] = []
    writer.submit(WriteJob(prepare_spans(batches[0]), answers.append))  # before start: one group commit
    writer.start()
    for n, spans in enumerate(batches, start=1):
        if n > 1:
            writer.submit(WriteJob(prepare_spans(spans), answers.append))
        traces = len({s.trace_id for batch in batches[:n] for s in batch})
        deadline = time.monotonic() + 10
        while writer.stats.traces_completed < traces:
            assert time.monotonic() < deadline, "the traces did not complete"
            time.sleep(0.01)
    writer.stop()
    connection.close()
    assert answers == [None] * len(batches)
    return handed
