"""A BFCL-style multi-turn agent for `tracescore demo` and the conversation tests: a small file system
(the environment), a scripted "model", one OpenTelemetry trace per turn, a state snapshot per turn.

BFCL's multi-turn sets judge a conversation turn by turn, after each turn comparing the environment's
state with the reference and checking that the calls the turn needed really ran with their results
(../shared/reference/matching-rules-bfcl-agentevals.md, §1.9). Its categories are reproduced here:
a base turn, a missing parameter (the model must ask and call nothing), a missing function (the model
must say the capability is missing and call nothing), and state carried across turns (the folder made
in turn 1 is where turn 4 saves). The spans follow the OpenTelemetry GenAI conventions; each turn is
one `invoke_agent` trace with `gen_ai.conversation.id` and `tracescore.turn.index`, and ends with a
`tracescore.state` event holding the environment's snapshot (docs/checks.md, "state").
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Status, StatusCode, Tracer


class ToolError(Exception):
    pass


@dataclass
class FileSystem:
    """The environment: folders by name, each with an id and files. Starts with one folder, like a
    BFCL entry's `initial_config`."""

    folders: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"archive": {"id": "f01", "files": ["2023.txt"]}}
    )
    next_id: int = 17

    def create_folder(self, name: str = "") -> dict[str, str]:
        if not name:
            raise ToolError("create_folder needs a folder name")
        folder_id = f"f{self.next_id}"
        self.next_id += 1
        self.folders[name] = {"id": folder_id, "files": []}
        return {"folder_id": folder_id}

    def list_folders(self) -> list[dict[str, str]]:
        return [{"name": name, "id": folder["id"]} for name, folder in sorted(self.folders.items())]

    def save_report(self, folder_id: str, name: str, text: str) -> dict[str, Any]:
        for folder_name, folder in self.folders.items():
            if folder["id"] == folder_id:
                folder["files"].append(name)
                return {"saved": True, "path": f"/{folder_name}/{name}", "bytes": len(text)}
        raise ToolError(f"no folder with id {folder_id!r}")

    def snapshot(self) -> dict[str, Any]:
        return {
            "folders": {
                name: dict(folder, files=list(folder["files"])) for name, folder in self.folders.items()
            }
        }


# A step's arguments may name an earlier result: the scripted model reads it the way a model reads a
# tool message (`{"$result": "create_folder", "key": "folder_id"}`).
Step = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Turn:
    user: str
    steps: tuple[Step, ...]
    answer: str


@dataclass(frozen=True)
class Conversation:
    task: str
    story: str
    turns: tuple[Turn, ...]
    mark_last: bool = False  # the harness sets tracescore.turn.last on the last turn


FROM_CREATED = {"$result": "create_folder", "key": "folder_id"}
_ASK = Turn("Save the report.", (), "Which text should the report hold?")
_NO_EMAIL = Turn("Email the report to Bob.", (), "I have no tool to send email, so I cannot do that.")

GOOD = Conversation(
    "bfcl:files",
    "asks when a parameter is missing, says when a function is missing, reuses the folder id",
    (
        Turn("Make a folder called reports.", (("create_folder", {"name": "reports"}),), "Created reports."),
        _ASK,
        _NO_EMAIL,
        Turn(
            "Save 'Q3 numbers' as q3.txt in it.",
            (("save_report", {"folder_id": FROM_CREATED, "name": "q3.txt", "text": "Q3 numbers"}),),
            "Saved.",
        ),
    ),
)
GUESSING = Conversation(
    "bfcl:files",
    "guesses the missing text in turn 2 and the folder id in turn 4",
    (
        GOOD.turns[0],
        Turn(
            "Save the report.",
            (("save_report", {"folder_id": FROM_CREATED, "name": "report.txt", "text": "TBD"}),),
            "Saved a report.",
        ),
        _NO_EMAIL,
        Turn(
            "Save 'Q3 numbers' as q3.txt in it.",
            (("save_report", {"folder_id": "f01", "name": "q3.txt", "text": "Q3 numbers"}),),
            "Saved.",
        ),
    ),
)
SHORT = Conversation("bfcl:files", "stops after three turns", GOOD.turns[:3])
REPAIRED = Conversation(
    "bfcl:repair",
    "turn 1's call errors; turn 2 makes the folder, then saves",
    (
        Turn("Make a folder called reports.", (("create_folder", {}),), "Something went wrong."),
        Turn(
            "Make it and save 'Q3 numbers' as q3.txt in it.",
            (
                ("create_folder", {"name": "reports"}),
                ("save_report", {"folder_id": FROM_CREATED, "name": "q3.txt", "text": "Q3 numbers"}),
            ),
            "Made it and saved.",
        ),
    ),
    mark_last=True,
)
CONVERSATIONS = (GOOD, GUESSING, SHORT, REPAIRED)

# The references, as BFCL's would be: the state after each turn, the calls each turn needed.
SPECS = """
name: bfcl-files
select: {task: "bfcl:files"}
turns:
  - expected_tools: [create_folder]         # turn 1, base
    results: {create_folder: {values: {folder_id: {regex: "f[0-9]+"}}}}
    state: {/folders/reports/files: {any_of: [[]]}}
  - expect_no_tool_calls: true              # turn 2, missing parameter: ask, call nothing
    state: {/folders/reports/files: {any_of: [[]]}}
  - expect_no_tool_calls: true              # turn 3, missing function: say so, call nothing
    state: {/folders/reports/files: {any_of: [[]]}}
  - expected_tools: [save_report]           # turn 4, state carried over from turn 1
    results: {save_report: {values: {saved: {any_of: [true]}}}}
    state: {/folders/reports/files: {any_of: [[q3.txt]]}}
flows:
  - {from: create_folder.result.folder_id, to: save_report.arguments.folder_id}
---
name: bfcl-repair
select: {task: "bfcl:repair"}
turns:
  - expected_tools: [create_folder]
    state: {/folders/reports/files: {any_of: [[]]}}
  - expected_tools: [save_report]
    state: {/folders/reports/files: {any_of: [[q3.txt]]}}
flows:
  - {from: create_folder.result.folder_id, to: save_report.arguments.folder_id}
"""


def _resolve(arguments: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    resolved = {}
    for key, given in arguments.items():
        if isinstance(given, dict) and "$result" in given:
            resolved[key] = results.get(given["$result"], {}).get(given["key"])
        else:
            resolved[key] = given
    return resolved


def _execute(
    tracer: Tracer, tools: dict[str, Callable[..., Any]], name: str, arguments: dict[str, Any]
) -> Any:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": f"call_{uuid.uuid4().hex[:12]}",
        "gen_ai.tool.call.arguments": json.dumps(arguments),
    }
    with tracer.start_as_current_span(
        f"execute_tool {name}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            result = tools[name](**arguments)
        except (ToolError, TypeError) as exc:
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            return None
        span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        return result


def run_conversation(tracer: Tracer, conversation: Conversation, conversation_id: str | None = None) -> str:
    """Every turn of the conversation, one trace each, against a fresh environment; returns its id."""
    conversation_id = conversation_id or f"conv-{uuid.uuid4().hex[:12]}"
    environment = FileSystem()
    tools: dict[str, Callable[..., Any]] = {
        "create_folder": environment.create_folder,
        "list_folders": environment.list_folders,
        "save_report": environment.save_report,
    }
    results: dict[str, Any] = {}
    for index, turn in enumerate(conversation.turns, 1):
        agent: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "files-agent",
            "gen_ai.conversation.id": conversation_id,
            "tracescore.task.id": conversation.task,
            "tracescore.turn.index": index,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": turn.user}]}]
            ),
        }
        if conversation.mark_last and index == len(conversation.turns):
            agent["tracescore.turn.last"] = True
        with tracer.start_as_current_span("invoke_agent files-agent", attributes=agent) as root:
            for name, arguments in turn.steps:
                result = _execute(tracer, tools, name, _resolve(arguments, results))
                if result is not None:
                    results[name] = result
            root.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": turn.answer}]}]),
            )
            root.add_event("tracescore.state", {"tracescore.state.json": json.dumps(environment.snapshot())})
    return conversation_id
