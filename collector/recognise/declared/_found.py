"""What a declared convention read off a span, apart from the models and matchers: recognition imports
it on every start, and it loads nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from collector.model.domain import TOOL, Arguments


@dataclass(frozen=True, slots=True)
class DeclaredContent:
    """What a declared convention read off a span."""

    convention: str
    tool_name: str
    arguments: Arguments
    result: Any
    call_id: str | None
    error: bool
    error_message: str | None
    paused: bool
    kind: str = TOOL
