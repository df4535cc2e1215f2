"""tracescore's collector: OTLP in, tool executions durably in DuckDB.

The public surface is small on purpose; everything in `_modules` may move.
"""

from collector.decode.decoded import DecodedRequest, UndecodableRequest
from collector.decode.from_json import decode_json
from collector.decode.from_protobuf import decode_protobuf
from collector.model.domain import Arguments, Span, ToolExecution, ToolRequest
from collector.recognise.conventions import recognise_execution
from collector.recognise.requests import extract_requests
from collector.serve.settings import ServeSettings
from collector.store.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Arguments",
    "DecodedRequest",
    "ServeSettings",
    "Span",
    "ToolExecution",
    "ToolRequest",
    "UndecodableRequest",
    "decode_json",
    "decode_protobuf",
    "extract_requests",
    "recognise_execution",
]
