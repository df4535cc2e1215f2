"""What a convention adapter reads off a span: the convention-specific part of a tool execution.

Its own module so that adapters kept beside their emitter's shapes (`_logfire`) build it as the ones in
`conventions` do, without importing `conventions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from collector.model.domain import TOOL, Arguments


@dataclass(frozen=True, slots=True)
class Content:
    """The convention-specific part of an execution: which name, arguments, result and call id; and the
    error's message where the convention keeps it somewhere of its own (the status and the `exception`
    event are read for every convention); a user's declared convention's own error and pause signals
    (collector/recognise/declared/)."""

    convention: str
    tool_name: str
    arguments: Arguments
    result: Any
    call_id: str | None
    kind: str = TOOL
    error_message: str | None = None
    error: bool = False
    paused: bool = False
