"""Testing: tracescore inside a user's test suite or notebook, with no server, no ports and no file.

Owns: the public, stable Python API (`score_spans`, `score_file`, `Recording`, `Scoring`) and the
pytest plugin (the `tracescore` fixture and the `tracescore_rollouts` marker, registered through the
`pytest11` entry point). Spans go the way an OTLP request's go in `serve`: encoded by the OTel SDK's own
OTLP encoder, decoded by the decode stage, recognised and prepared, through the one writer (run
tracking, resolution, completion) into an in-memory DuckDB with the stored schema, then judged by
`score_records`, the function `tracescore score` uses. So a verdict here is the verdict `serve` gives.
Takes in: OTel SDK `ReadableSpan`s (as an in-memory exporter or this stage's `SpanCapture` collects
them), domain `Span`s, or an OTLP export file (protobuf or JSON `ExportTraceServiceRequest`, one a line).
Hands on: verdicts as `Verdict` objects and as the exact JSON of `tracescore score --format json`;
failed assertions as text that names each failing check and lists the run's executions.

Public:
- `recording`: `Recording` (spans loaded into a private in-memory store: `runs()`, `score(spec)`),
  `Scoring` (its verdicts, `json()`, `text()`, `explain()`), `score_spans`, `score_file`, `SpecLike`.
- `otlp_input`: `spans_from_sdk` (SDK spans through the OTLP encoder and our decoder),
  `spans_from_file` (an OTLP export file).
- `capture`: `SpanCapture` (a span processor that keeps every ended span of a tracer provider).
- `pytest_plugin`: the fixture and the marker (pytest loads it; not imported by users).
- `explain`: `explain` (a failing verdict's checks and its run's executions, as text).
"""

from collector.testing.capture import SpanCapture
from collector.testing.otlp_input import spans_from_file, spans_from_sdk
from collector.testing.recording import Recording, Scoring, SpecLike, score_file, score_spans

__all__ = [
    "Recording",
    "Scoring",
    "SpanCapture",
    "SpecLike",
    "score_file",
    "score_spans",
    "spans_from_file",
    "spans_from_sdk",
]
