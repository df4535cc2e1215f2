"""The format proven on a real SDK: the `vercel_ai` adapter written as a conventions file
(collector/recognise/declared/vercel_ai.yaml) reads every span of every recorded framework trace
(tests/frameworks/fixtures, what the instrumentations really exported) exactly as the Python adapter
does: the same spans claimed, every field of every execution equal."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collector.decode.from_json import decode_json
from collector.model.domain import Span
from collector.recognise.conventions import recognise_execution
from collector.recognise.declared import active
from collector.recognise.declared.files import built_in_conventions
from tests.frameworks.matrix import CELLS


def _recorded_spans() -> Iterator[tuple[str, Span]]:
    for cell in sorted(c.fixture for c in CELLS):
        for line in (cell / "otlp.jsonl").read_bytes().splitlines():
            for span in decode_json(line).spans:
                yield cell.name, span


SPANS = list(_recorded_spans())


@pytest.fixture(autouse=True)
def _none_in_force() -> Iterator[None]:
    active.install(None)
    yield
    active.install(None)


def test_the_vercel_ai_file_reads_every_recorded_span_as_the_adapter_does() -> None:
    by_adapter = [recognise_execution(span) for _, span in SPANS]
    active.install(built_in_conventions("vercel_ai.yaml"))
    by_file = [recognise_execution(span) for _, span in SPANS]
    differ = [
        (cell, span.name, adapter, declared)
        for (cell, span), adapter, declared in zip(SPANS, by_adapter, by_file, strict=True)
        if adapter != declared
    ]
    assert differ == []
    claimed = {cell for (cell, _), e in zip(SPANS, by_file, strict=True) if e and e.convention == "vercel_ai"}
    # The cells whose spans the file claims are the Vercel AI SDK's legacy-telemetry ones.
    assert claimed and all(cell.startswith("vercel-ai-legacy") for cell in claimed), claimed
