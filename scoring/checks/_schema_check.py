"""`schema`: every clean execution of a tool validates against its JSON Schema (one check per tool).

The schema comes from the spec (`schema: {TOOL: <JSON Schema>}`) or from the tool definitions captured
in the run's own traces (`schema: from_trace`). A tool with no clean execution has nothing to validate
and makes no check, as a latency bound that applies to nothing (require the call with expected_tools).
"""

from __future__ import annotations

from typing import Any

from scoring.checks.registry import Scoped, register_check
from scoring.evidence.runs import Execution
from scoring.spec.jsonschema import schema_problem, violations
from scoring.spec.specs import Spec
from scoring.verdict.record import CheckResult

_KIND = "schema"
_SOURCES = "gen_ai.tool.definitions or llm.tools.*.tool.json_schema"


def _call_failures(schema: Any, call: Execution) -> list[dict[str, Any]]:
    where = {"span_id": call.span_id, "call_id": call.call_id}
    if not call.arguments_valid:  # kept raw by the collector: fails, never crashes
        return [
            {
                **where,
                "pointer": "",
                "rule": "json",
                "schema_pointer": "",
                "message": "arguments are not valid JSON",
            }
        ]
    if call.arguments is None:
        message = "arguments were not captured (content capture off?), so cannot be validated"
        return [{**where, "pointer": "", "rule": "captured", "schema_pointer": "", "message": message}]
    return [
        {
            **where,
            "pointer": v.pointer,
            "rule": v.rule,
            "schema_pointer": v.schema_pointer,
            "message": v.message,
        }
        for v in violations(schema, call.arguments)
    ]


def _judge_tool(tool: str, schema: Any, calls: list[Execution], expected: Any) -> CheckResult:
    failures: list[dict[str, Any]] = []
    bad_calls = 0
    for call in calls:
        found = _call_failures(schema, call)
        failures.extend(found)
        bad_calls += bool(found)
    if not failures:
        detail = f"{len(calls)} clean {tool} call(s) valid against its schema"
    else:
        first = failures[0]
        detail = (
            f"{bad_calls} of {len(calls)} clean {tool} call(s) break its schema: call {first['span_id']} at "
            f"{first['pointer'] or '/'} breaks {first['rule']}: {first['message']}"
        )
    return CheckResult(_KIND, tool, not failures, detail, expected=expected, observed=failures)


@register_check(_KIND)
def schema(spec: Spec, evidence: Scoped) -> list[CheckResult]:
    if spec.schema_ is None:
        return []
    if isinstance(spec.schema_, dict):
        return [
            _judge_tool(tool, tool_schema, calls, tool_schema)
            for tool, tool_schema in spec.schema_.items()
            if (calls := evidence.clean_of(tool))
        ]
    definitions = evidence.definitions()  # only now: reading stored spans costs a query
    results = []
    for tool in dict.fromkeys(e.tool_name for e in evidence.clean):
        calls = evidence.clean_of(tool)
        definition = definitions.get(tool)
        if definition is None:
            detail = f"no definition of {tool} captured in the run's traces ({_SOURCES})"
            results.append(CheckResult(_KIND, tool, False, detail, expected="from_trace", observed=[]))
            continue
        source = {"from_trace": {"span_id": definition.span_id, "attribute": definition.source}}
        expected = {**source, "schema": definition.schema}
        problem = schema_problem(definition.schema)
        if problem:
            detail = f"the definition of {tool} captured on span {definition.span_id} is {problem}"
            results.append(CheckResult(_KIND, tool, False, detail, expected=expected, observed=[]))
            continue
        results.append(_judge_tool(tool, definition.schema, calls, expected))
    return results
