"""The traces chosen in ClickHouse are those recognition reads something from: every span of every
convention's traces that is an agent, a tool execution or carries a model's tool calls is matched by
the SQL predicate ClickHouse evaluates (collector/clickhouse/selection.py), and plain spans are not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.clickhouse.scorer import chosen_traces
from collector.clickhouse.selection import SPAN_COLUMNS, Selection, Shard, candidate_predicate
from collector.clickhouse.spans import span_from_row
from collector.recognise.span import recognise
from tests.collector.clickhouse._chdb_tool import query
from tests.collector.clickhouse._corpus import framework_requests, load_clickhouse, otlp_json
from tests.collector.recognise.test_conventions import BUILDERS, Sent, kvlist_request


def _convention_requests() -> list[dict[str, Any]]:
    """test_conventions' fixtures, built with the real SDK into memory (no server needed here)."""
    captured = InMemorySpanExporter()
    providers = {}
    for which in ("grpc", "http", "task"):
        attributes = {"service.name": "rollout-agent" if which == "task" else "test-agent"}
        providers[which] = TracerProvider(resource=Resource.create(attributes))
        providers[which].add_span_processor(SimpleSpanProcessor(captured))
    sent = Sent()
    for build, which in BUILDERS:
        build(providers[which], sent)
    return [otlp_json(captured.get_finished_spans()), kvlist_request()]


@pytest.fixture(scope="module")
def clickhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("selection") / "clickhouse"
    requests = [json.loads(line) for line in framework_requests()] + _convention_requests()
    load_clickhouse(path, requests)
    return path


def test_every_span_recognition_reads_is_matched_in_clickhouse(clickhouse: Path) -> None:
    found = query(clickhouse, f"SELECT {SPAN_COLUMNS}, {candidate_predicate()} FROM otel.otel_traces")
    missed, matched_plain, relevant = [], 0, 0
    for row in found:
        span, chosen = span_from_row(row[:-1]), bool(row[-1])
        recognised = recognise(span)
        reads = recognised.node.agent or recognised.execution or recognised.requests
        relevant += bool(reads)
        if reads and not chosen:
            missed.append((span.name, sorted(span.attributes)))
        matched_plain += bool(chosen and not reads)
    assert relevant > 300
    assert missed == []
    # The predicate is a filter, not a second recognition: a few spans it matches (chat spans without
    # tool calls, for instance) are read but give nothing. Most plain spans are left in ClickHouse.
    assert matched_plain < len(found) - relevant


def test_shard_flag_is_checked() -> None:
    assert Shard.parse("2/4") == Shard(2, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="expected I/N"):
            Shard.parse(bad)


class _Recorded:
    """A connection that answers from queries run in a chDB child process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.description = f"chdb:{path}"

    def run(self, sql: str) -> bytes:
        select = sql.removesuffix("\nFORMAT JSONCompactEachRow")
        return "".join(json.dumps(row) + "\n" for row in query(self.path, select)).encode()

    def close(self) -> None:
        pass


def test_the_window_and_the_shard_are_applied_in_clickhouse(clickhouse: Path) -> None:
    connection = _Recorded(clickhouse)
    everything = [c for batch in chosen_traces(connection, Selection(), batch_traces=7) for c in batch]
    positions = [c.position for c in everything]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    middle = everything[len(everything) // 2].first_ns
    window = Selection(since_ns=middle, until_ns=middle + 1)
    assert {c.trace_id for batch in chosen_traces(connection, window) for c in batch} == {
        c.trace_id for c in everything if c.first_ns == middle
    }
    # A trace that began before `since` is left out, though most of its spans come after it.
    after_start = Selection(since_ns=middle + 1)
    assert [c.trace_id for batch in chosen_traces(connection, after_start) for c in batch] == [
        c.trace_id for c in everything if c.first_ns > middle
    ]
    shards = [
        {c.trace_id for batch in chosen_traces(connection, Selection(shard=Shard(i, 2))) for c in batch}
        for i in range(2)
    ]
    assert shards[0] | shards[1] == {c.trace_id for c in everything}
    assert not shards[0] & shards[1]


def test_pages_of_chosen_traces_are_cut_into_batches_in_order(clickhouse: Path) -> None:
    # ClickHouse names the chosen traces a page at a time (each query groups the whole window), and the
    # scorer judges them a batch at a time: every trace once, in order, whatever the two sizes.
    connection = _Recorded(clickhouse)
    one_page = [c for batch in chosen_traces(connection, Selection(), batch_traces=1000) for c in batch]
    assert len(one_page) > 20
    for page, batch in ((7, 3), (5, 5), (4, 9)):
        batches = list(chosen_traces(connection, Selection(), batch_traces=batch, page_traces=page))
        assert [c for b in batches for c in b] == one_page
        assert all(len(b) == batch for b in batches[:-1]) and 0 < len(batches[-1]) <= batch
