"""tracescore's collector: OTLP in, tool executions durably in DuckDB.

The public surface is small on purpose; everything in `_modules` may move.

Each public name is imported when first read (issue 33): every decode worker runs this file on its way
to `collector.decode`, and eager imports here loaded DuckDB (~17 MiB resident), YAML and the server's
settings into processes that only decode.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collector.decode.decoded import DecodedRequest, UndecodableRequest
    from collector.decode.from_json import decode_json
    from collector.decode.from_protobuf import decode_protobuf
    from collector.model.domain import Arguments, Span, ToolExecution, ToolRequest
    from collector.recognise.conventions import recognise_execution
    from collector.recognise.requests import extract_requests
    from collector.serve.settings import ServeSettings
    from collector.store.schema import SCHEMA_VERSION

# Where each public name lives.
_HOMES = {
    "DecodedRequest": "collector.decode.decoded",
    "UndecodableRequest": "collector.decode.decoded",
    "decode_json": "collector.decode.from_json",
    "decode_protobuf": "collector.decode.from_protobuf",
    "Arguments": "collector.model.domain",
    "Span": "collector.model.domain",
    "ToolExecution": "collector.model.domain",
    "ToolRequest": "collector.model.domain",
    "recognise_execution": "collector.recognise.conventions",
    "extract_requests": "collector.recognise.requests",
    "ServeSettings": "collector.serve.settings",
    "SCHEMA_VERSION": "collector.store.schema",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # read once: later reads find it here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
