"""Rows of `otel_traces` read back: the exporter's text values, kinds and status words."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collector.clickhouse.spans import attribute_value, span_from_row, span_kind, status_code


def test_booleans_come_back_and_everything_else_stays_text() -> None:
    assert attribute_value("true") is True
    assert attribute_value("false") is False
    for text in ("3", "12.5", '{"a":1}', '["x"]', "aGVsbG8=", "", "True"):
        assert attribute_value(text) == text


@pytest.mark.parametrize(
    ("word", "kind"),
    [("Internal", 1), ("Server", 2), ("Client", 3), ("SPAN_KIND_CLIENT", 3), ("Unspecified", 0), ("?", 0)],
)
def test_span_kinds_from_the_exporters_words(word: str, kind: int) -> None:
    assert span_kind(word) == kind


def test_status_codes_from_the_exporters_words() -> None:
    assert [status_code(w) for w in ("Unset", "Ok", "Error", "STATUS_CODE_ERROR")] == [0, 1, 2, 2]


def test_a_row_becomes_the_span_the_otlp_decoder_would_make() -> None:
    row = [
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
        "",
        "",
        "execute_tool lookup",
        "Internal",
        {"service.name": "shop"},
        "my.scope",
        "1.0",
        {"gen_ai.tool.name": "lookup", "tracescore.tool.paused": "true", "n": "3"},
        "1700000000000000000",
        "2500000",
        "Error",
        "boom",
        ["1700000000001000000"],
        ["exception"],
        [{"exception.message": "boom"}],
        ["1f7651916cd43dd8448eb211c80319c0"],
        ["c7ad6b7169203331"],
        [""],
        [{}],
    ]
    span = span_from_row(row)
    assert span.parent_span_id is None
    assert (span.start_ns, span.end_ns, span.kind, span.status_code) == (
        1_700_000_000_000_000_000,
        1_700_000_000_002_500_000,
        1,
        2,
    )
    assert span.attributes == {"gen_ai.tool.name": "lookup", "tracescore.tool.paused": True, "n": "3"}
    assert span.resource.service_name == "shop" and span.resource.scope_name == "my.scope"
    assert [(e.name, e.time_ns, e.attributes) for e in span.events] == [
        ("exception", 1_700_000_000_001_000_000, {"exception.message": "boom"})
    ]
    assert [(k.trace_id, k.span_id) for k in span.links] == [
        ("1f7651916cd43dd8448eb211c80319c0", "c7ad6b7169203331")
    ]


def test_selection_flags_without_clickhouse_are_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "collector.cli", "score", "--spec", "x.yaml", "--shard", "0/2"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "tracescore: --shard reads from ClickHouse: add --clickhouse URL (or drop --shard)"
    )
