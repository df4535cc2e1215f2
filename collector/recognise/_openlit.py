"""OpenLIT's LangChain tool spans (openlit 1.45.0, `instrumentation/langchain/__init__.py`): two things its
GenAI `execute_tool` span says differently from the conventions.

- **The call id of a tool that raised is LangChain's run id.** `on_tool_start` sets
  `gen_ai.tool.call.id = str(run_id)` (the callback's run UUID), and only `on_tool_end` replaces it with
  the `tool_call_id` of the ToolMessage the tool returned; `on_tool_error` leaves it. A UUID there, on a
  span of that scope, is not the model's id: it is dropped, so the model's request of the run (same
  tool, same arguments; the `chat` span's `gen_ai.output.messages`) joins the execution and gives it
  its id (`call_id_source = request`).
- **The result is `str()` of LangChain's ToolMessage**, `content='18°C, light rain' name='get_weather'
  tool_call_id='call_paris'` (pydantic's `field=repr(value)` pairs, separated by spaces; `on_tool_end`
  writes `truncate_content(output)`). A shape rule, read wherever a result has it: the text starts with
  `content=` followed by a Python literal, and `tool_call_id=` follows it; the literal is the result.
  Read as literal syntax, never evaluated (`_python_literal`); anything else is kept as it came.

The arguments are `str()` of the tool's input dict, `{'city': 'Paris'}`, which `_content` reads as a
Python literal (a shape rule for every convention).
"""

from __future__ import annotations

import re
from typing import Any

from collector.recognise._python_literal import NotALiteral, python_literal

OPENLIT_LANGCHAIN_SCOPE = "openlit.instrumentation.langchain"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_CONTENT = "content="
_FIELD = re.compile(r" [a-z_]+=")
# A ToolMessage's text is a tool's answer; past this the repr is not parsed (ast's cost grows with it).
_MAX_TEXT = 256 * 1024


def model_call_id(call_id: str | None, scope: str) -> str | None:
    """The span's call id, unless it is OpenLIT's LangChain run id (a tool that raised)."""
    if call_id is not None and scope == OPENLIT_LANGCHAIN_SCOPE and _UUID.match(call_id):
        return None
    return call_id


def _literal(text: str) -> tuple[bool, Any]:
    """A string, list or dict written as a Python literal (the content a ToolMessage's repr holds)."""
    try:
        value = python_literal(text, containers_only=False)
    except NotALiteral:
        return False, None
    return isinstance(value, (str, list, dict)), value


def tool_message_content(result: Any) -> Any:
    """The content of a ToolMessage written as `str()`, else the result as it came."""
    if not (isinstance(result, str) and result.startswith(_CONTENT) and " tool_call_id=" in result):
        return result
    if len(result) > _MAX_TEXT:
        return result
    # The content's literal ends where the next ` field=` begins: the first boundary at which the text
    # before it is a whole literal (a string or a list of content blocks).
    for boundary in _FIELD.finditer(result, len(_CONTENT)):
        ok, value = _literal(result[len(_CONTENT) : boundary.start()])
        if ok:
            return value
    return result
