"""A request's spans made ready for the writer: decoded, recognised and turned into rows.

This is most of the Python work of ingest (bench/README.md), and none of it needs the writer's state,
so it can run in a decode worker process (collector/decode/pool.py) as well as in the server's own.
What comes out crosses the process boundary: the rows as an Arrow table, recognition's records
pickled compactly (collector/model/domain.py `compact_pickle`), and the counts the receivers answer with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from collector.decode.decoded import DecodedRequest
from collector.decode.from_json import decode_json
from collector.decode.from_protobuf import decode_protobuf
from collector.model.domain import OWN_SCOPE, Span
from collector.recognise.declared import active as declared_conventions
from collector.recognise.span import recognise
from collector.store.rows import PreparedSpans, spans_table

Encoding = Literal["protobuf", "json"]


def prepare_spans(spans: Sequence[Span]) -> PreparedSpans:
    return PreparedSpans(
        [(s.trace_id, s.span_id) for s in spans], [recognise(s) for s in spans], spans_table(spans, 0, 0)
    )


@dataclass(slots=True)
class PreparedRequest:
    """One OTLP request, ready: its spans for the writer (those tracescore emitted itself left out) and
    what the receivers answer and count."""

    spans: PreparedSpans
    received: int  # every span in the request, good or rejected
    rejected: int
    own_ignored: int
    error_message: str  # the partial_success message: spans rejected, attributes dropped; else empty


def prepare_decoded(decoded: DecodedRequest) -> PreparedRequest:
    spans = [s for s in decoded.spans if s.resource.scope_name != OWN_SCOPE]
    return PreparedRequest(
        prepare_spans(spans),
        received=len(decoded.spans) + decoded.rejected,
        rejected=decoded.rejected,
        own_ignored=len(decoded.spans) - len(spans),
        error_message=decoded.error_message(),
    )


def prepare_request(
    body: bytes, encoding: Encoding, conventions: declared_conventions.Sources | None = None
) -> PreparedRequest:
    """Decode (raises UndecodableRequest), recognise and build rows: a decode worker's one job.
    `conventions`: the user's declared conventions the server recognises with (a worker compiles them
    once, when they change)."""
    declared_conventions.ensure(conventions)
    decoded = decode_protobuf(body) if encoding == "protobuf" else decode_json(body)
    return prepare_decoded(decoded)
