"""tracescore's collector: OTLP in, tool executions durably in DuckDB.

The public surface is small on purpose; everything in `_modules` may move.
"""

from collector._conventions import recognise_execution
from collector._decode_json import decode_json
from collector._decode_pb import decode_protobuf
from collector._decoded import DecodedRequest, UndecodableRequest
from collector._model import Arguments, Span, ToolExecution, ToolRequest
from collector._requests import extract_requests
from collector._schema import SCHEMA_VERSION
from collector._settings import ServeSettings

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
