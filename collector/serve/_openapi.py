"""The OpenAPI 3.1 description of the HTTP API, served at /api/v1/openapi.json.

tests/collector/serve/test_online.py checks that every route the server registers is described here.

Why this module is long: it is one document, data and no logic, one entry per route; split, a reader
would have to assemble the API from several files to see it whole.
"""

from __future__ import annotations

from typing import Any

_ERROR = {
    "description": "the request is wrong; `error` says how",
    "content": {
        "application/json": {"schema": {"type": "object", "properties": {"error": {"type": "string"}}}}
    },
}


def _param(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema or {"type": "string"},
    }


def _json_body(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "description": description, "content": {"application/json": {"schema": schema}}}


_VERDICT = {
    "type": "object",
    "description": "DESIGN §7: one run judged against one spec (see docs/scoring.md)",
    "required": [
        "run_id",
        "trace_id",
        "spec",
        "spec_fingerprint",
        "passed",
        "value",
        "label",
        "checks",
        "missing_tools",
        "additional_tools",
        "failed_argument_checks",
        "latency_violations",
        "reason",
    ],
    "properties": {
        "run_id": {"type": "string"},
        "trace_id": {"type": "string"},
        "task": {"type": ["string", "null"]},
        "spec": {"type": "string"},
        "spec_fingerprint": {"type": "string"},
        "profile": {"type": "string"},
        "passed": {"type": ["boolean", "null"]},
        "value": {"type": ["number", "null"]},
        "label": {"enum": ["pass", "fail", "error"]},
        "checks": {"type": "array", "items": {"type": "object"}},
        "gates": {"type": "array", "items": {"type": "object"}},
        "missing_tools": {"type": "array", "items": {"type": "string"}},
        "additional_tools": {"type": "array", "items": {"type": "string"}},
        "failed_argument_checks": {"type": "array", "items": {"type": "object"}},
        "latency_violations": {"type": "array", "items": {"type": "object"}},
        "reason": {"type": ["string", "null"]},
        "run_version": {"type": "integer"},
        "schema_version": {"type": "integer"},
        "scored_at": {"type": "string", "format": "date-time"},
        "detail": {"type": "object", "description": "request/execution reconciliation, latency history"},
        "conversation_id": {
            "type": "string",
            "description": "only on a conversation verdict (a spec with turns); run_id holds it too",
        },
        "turns": {
            "type": "array",
            "description": "only on a conversation verdict: each turn's run judged against the spec's turn",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "run_id": {"type": "string"},
                    "passed": {"type": "boolean"},
                    "reason": {"type": ["string", "null"]},
                    "checks": {"type": "array", "items": {"type": "object"}},
                },
            },
        },
    },
}
_TASK_RESULT = {
    "type": "object",
    "properties": {
        k: {"type": t}
        for k, t in {
            "task": ["string", "null"],
            "spec": "string",
            "spec_fingerprint": "string",
            "n_runs": "integer",
            "n_scored": "integer",
            "n_passed": "integer",
            "n_errors": "integer",
            "pass_rate": ["number", "null"],
            "mean_value": ["number", "null"],
            "k": "integer",
            "pass_at_k": ["number", "null"],
            "pass_hat_k": ["number", "null"],
            "in_learning_zone": "boolean",
            "latency": ["object", "null"],
            "latency_passed": ["boolean", "null"],
            "execution_latency": ["object", "null"],
        }.items()
    },
}
# The run window of `score`, `report` and `compare` (--since, --until, --where; docs/scoring.md).
_WINDOW = {
    "since": {
        "type": ["string", "null"],
        "format": "date-time",
        "description": "only runs that started (first span) at or after this; UTC unless it has an offset",
    },
    "until": {
        "type": ["string", "null"],
        "format": "date-time",
        "description": "only runs that started before",
    },
    "where": {
        "type": "object",
        "additionalProperties": {"oneOf": [{"type": ["string", "number", "boolean"]}, {"type": "array"}]},
        "description": "run attribute (resource or root-span attribute, or task, agent, session, run, "
        "service.name) to a value or a list of values (any of), compared as a spec's `select`; every key "
        "must match",
    },
}
_SPECS_BODY = {
    "type": "object",
    "required": ["specs"],
    "properties": {
        "specs": {"type": "array", "items": {"type": "object"}, "description": "specs as in docs/scoring.md"},
        "run": {"type": "string"},
        "task": {"type": "string"},
        "store": {"type": "boolean", "default": True},
        "k": {"type": "integer", "minimum": 1},
        **_WINDOW,
    },
}

_REPORT_BODY = {
    "type": "object",
    "required": ["specs"],
    "properties": {
        "specs": {"type": "array", "items": {"type": "object"}, "description": "specs as in docs/scoring.md"},
        "task": {"type": "string"},
        "k": {"type": "integer", "minimum": 1},
        "include": {
            "type": "array",
            "items": {"enum": ["history", "latency", "failing", "all"]},
            "description": "sections to add; when present the answer is a report object, not an array",
        },
        "history_bucket": {
            "enum": ["auto", "second", "minute", "hour", "day", "week"],
            "default": "auto",
            "description": "auto: the finest bucket with at most 60 per spec",
        },
        **_WINDOW,
    },
}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
_REPORT = {
    "type": "object",
    "description": "the same document as `tracescore report --format json --include all` "
    "(docs/scoring.md#the-report)",
    "required": ["generated_at", "specs", "sections", "tasks"],
    "properties": {
        "generated_at": {"type": "string", "format": "date-time"},
        "specs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "fingerprint": {"type": "string"}},
            },
        },
        "sections": {"type": "array", "items": {"enum": ["history", "latency", "failing"]}},
        "tasks": {"type": "array", "items": _TASK_RESULT},
        "history_bucket": {"enum": ["second", "minute", "hour", "day", "week"]},
        "history": {
            "type": "array",
            "description": "per spec and bucket of run completion time: the latest stored verdict per run",
            "items": {
                "type": "object",
                "properties": {
                    "spec": {"type": "string"},
                    "start": {"type": "string", "format": "date-time"},
                    "end": {"type": "string", "format": "date-time"},
                    "n_scored": {"type": "integer"},
                    "n_passed": {"type": "integer"},
                    "n_errors": {"type": "integer"},
                    "pass_rate": _NUMBER_OR_NULL,
                },
            },
        },
        "tool_latency": {
            "type": "array",
            "description": "per tool: clean execution durations in the runs scored (nearest-rank)",
            "items": {
                "type": "object",
                "properties": {
                    "tool": {"type": "string"},
                    "n": {"type": "integer"},
                    "n_errored": {"type": "integer"},
                    **{f"{k}_ms": {"type": "number"} for k in ("min", "p50", "p95", "p99", "max", "mean")},
                    "histogram": {
                        "type": "object",
                        "properties": {
                            "scale": {"enum": ["linear", "log"]},
                            "edges_ms": {"type": "array", "items": {"type": "number"}},
                            "counts": {"type": "array", "items": {"type": "integer"}},
                        },
                    },
                },
            },
        },
        "failing_runs_total": {"type": "integer"},
        "failing_runs": {
            "type": "array",
            "description": "fail and error verdicts, most recently completed run first (at most 500)",
            "items": {
                "type": "object",
                "properties": {
                    "run_id": {"type": "string"},
                    "trace_id": {"type": "string"},
                    "task": {"type": ["string", "null"]},
                    "spec": {"type": "string"},
                    "label": {"enum": ["fail", "error"]},
                    "value": _NUMBER_OR_NULL,
                    "reason": {"type": ["string", "null"]},
                    "run_version": {"type": "integer"},
                    "completed_at": {"type": ["string", "null"], "format": "date-time"},
                },
            },
        },
    },
}


def _ok(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "tracescore",
        "version": "1",
        "description": "Health, verdicts, task results and read-only SQL of a running tracescore serve. "
        "OTLP itself is served at POST /v1/traces (see docs/receivers.md). Every route answers 421 to a "
        "Host it does not know, 403 to a request from another site's web page (an Origin that is not "
        "the API's own), and, with a token configured, 401 without it; every POST takes "
        "Content-Type: application/json only (415 otherwise). No CORS header is ever sent "
        "(docs/security.md).",
    },
    "paths": {
        "/healthz": {
            "get": {"summary": "the process is up", "responses": {"200": _ok("up", {"type": "object"})}}
        },
        "/readyz": {
            "get": {
                "summary": "ready to accept spans: not draining, storage healthy, memory budget not spent",
                "responses": {
                    "200": _ok("ready", {"type": "object"}),
                    "503": _ok("not ready; `reason` says why", {"type": "object"}),
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics",
                "responses": {
                    "200": {
                        "description": "text exposition format",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    }
                },
            }
        },
        "/api/v1/openapi.json": {
            "get": {"summary": "this document", "responses": {"200": _ok("OpenAPI", {})}}
        },
        "/api/v1/runs": {
            "get": {
                "summary": "runs, most recently completed first",
                "parameters": [
                    _param("task", "task id"),
                    _param("status", "complete or open"),
                    _param("since", "completed at or after (ISO 8601)"),
                    _param("limit", "at most", {"type": "integer"}),
                ],
                "responses": {
                    "200": _ok("runs", {"type": "array", "items": {"type": "object"}}),
                    "400": _ERROR,
                },
            }
        },
        "/api/v1/verdicts": {
            "get": {
                "summary": "stored verdicts (latest version per run and spec unless all_versions)",
                "parameters": [
                    _param("run", "run id"),
                    _param("task", "task id"),
                    _param("spec", "spec name"),
                    _param("label", "pass, fail or error"),
                    _param("since", "scored at or after (ISO 8601)"),
                    _param("until", "scored before (ISO 8601)"),
                    _param("all_versions", "true: every version of a run", {"type": "boolean"}),
                    _param("limit", "at most", {"type": "integer"}),
                ],
                "responses": {"200": _ok("verdicts", {"type": "array", "items": _VERDICT}), "400": _ERROR},
            }
        },
        "/api/v1/verdicts/watch": {
            "get": {
                "summary": "new verdicts as they are judged (stored after), at least once, one JSON per line",
                "parameters": [
                    _param("spec", "spec name"),
                    _param("run", "run id"),
                    _param(
                        "existing",
                        "true: first the verdicts that match already (stored or being stored)",
                        {"type": "boolean"},
                    ),
                ],
                "responses": {
                    "200": {
                        "description": "a stream that ends when the server stops",
                        "content": {"application/x-ndjson": {"schema": _VERDICT}},
                    }
                },
            }
        },
        "/api/v1/tasks": {
            "get": {
                "summary": "per-task aggregates over the latest stored verdicts",
                "parameters": [
                    _param("task", "task id"),
                    _param("spec", "spec name"),
                    _param(
                        "k", "k for pass@k and pass^k (default: each task's rollouts)", {"type": "integer"}
                    ),
                ],
                "responses": {
                    "200": _ok("task results", {"type": "array", "items": _TASK_RESULT}),
                    "400": _ERROR,
                },
            }
        },
        "/api/v1/specs": {
            "get": {
                "summary": "the specs in force and the last reload error",
                "responses": {"200": _ok("specs", {"type": "object"})},
            }
        },
        "/api/v1/sql": {
            "post": {
                "summary": "one read-only statement (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN), run "
                "in a read-only transaction; at most 10,000 rows (more: `truncated`) and 32 MiB (more: "
                "400); 10 s from arrival (then 504); 503 with Retry-After while the SQL lane is full",
                "requestBody": _json_body(
                    "the query",
                    {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}}},
                ),
                "responses": {
                    "200": _ok(
                        "rows",
                        {
                            "type": "object",
                            "properties": {
                                "columns": {"type": "array"},
                                "rows": {"type": "array"},
                                "truncated": {"type": "boolean"},
                            },
                        },
                    ),
                    "400": _ERROR,
                    "503": _ERROR,
                    "504": _ERROR,
                },
            }
        },
        "/api/v1/export": {
            "post": {
                "summary": "one table of docs/export.md's layout for a time window, as an Arrow IPC stream "
                "(`tracescore export` while the server runs; the client writes the Parquet files)",
                "requestBody": _json_body(
                    "the table and the window (spans by start, verdicts by their run's start)",
                    {
                        "type": "object",
                        "required": ["table"],
                        "properties": {
                            "table": {"enum": ["otel_traces", "scores"]},
                            "since": {"type": ["string", "null"], "format": "date-time"},
                            "until": {"type": ["string", "null"], "format": "date-time"},
                        },
                    },
                ),
                "responses": {
                    "200": {
                        "description": "the rows, with the columns of docs/export.md",
                        "content": {"application/vnd.apache.arrow.stream": {}},
                    },
                    "400": _ERROR,
                    "500": _ERROR,
                },
            }
        },
        "/api/v1/values": {
            "get": {
                "summary": "the values of one run attribute among the complete runs of a window, the "
                "most recently first seen first (as `tracescore compare --by KEY` chooses its two)",
                "parameters": [
                    _param("key", "run attribute (default service.version)"),
                    _param("since", "runs that started at or after (ISO 8601)"),
                    _param("until", "runs that started before (ISO 8601)"),
                    _param("where", "KEY=VALUE, repeatable: as --where"),
                    _param("task", "task id"),
                ],
                "responses": {
                    "200": _ok(
                        "values",
                        {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "value": {"type": "string"},
                                    "n_runs": {"type": "integer"},
                                    "first_start": {"type": "string", "format": "date-time"},
                                    "last_start": {"type": "string", "format": "date-time"},
                                },
                            },
                        },
                    ),
                    "400": _ERROR,
                    "504": _ERROR,
                },
            }
        },
        # The live UI's reads (docs/ui.md); each needs the token as the rest of the API does.
        "/api/v1/ui": {
            "get": {
                "summary": "what the live UI needs once: the --trace-url template and the specs in force",
                "responses": {
                    "200": _ok(
                        "settings",
                        {
                            "type": "object",
                            "properties": {
                                "trace_url": {"type": ["string", "null"]},
                                "specs": {"type": "array", "items": {"type": "string"}},
                            },
                        },
                    )
                },
            }
        },
        "/api/v1/runs/page": {
            "get": {
                "summary": "one page of runs, newest completion first, each with its latest label per spec; "
                "`next` is the `after` of the following page (null on the last)",
                "parameters": [
                    _param("task", "task id"),
                    _param("spec", "runs with a verdict of this spec"),
                    _param(
                        "label", "pass, fail or error: the latest verdict's (of `spec`, else of any spec)"
                    ),
                    _param("service", "service.name"),
                    _param("version", "service.version (as where=service.version=VALUE)"),
                    _param("where", "KEY=VALUE, repeatable: as --where"),
                    _param("since", "runs that started at or after (ISO 8601)"),
                    _param("until", "runs that started before (ISO 8601)"),
                    _param("after", "the `next` of the page before"),
                    _param("limit", "runs per page, 1 to 200 (default 50)", {"type": "integer"}),
                ],
                "responses": {
                    "200": _ok(
                        "a page",
                        {
                            "type": "object",
                            "properties": {
                                "runs": {"type": "array", "items": {"type": "object"}},
                                "next": {"type": ["string", "null"]},
                            },
                        },
                    ),
                    "400": _ERROR,
                    "504": _ERROR,
                },
            }
        },
        "/api/v1/run": {
            "get": {
                "summary": "one run: its traces, executions in order with the request each answers, requests "
                "never executed, and its latest verdict per spec",
                "parameters": [{**_param("run", "run id"), "required": True}],
                "responses": {"200": _ok("the run", {"type": "object"}), "400": _ERROR, "404": _ERROR},
            }
        },
        "/api/v1/task": {
            "get": {
                "summary": "one task's pass rate over time per spec and its tools' clean latency (the "
                "report's `history` and `latency`, from stored verdicts)",
                "parameters": [
                    {**_param("task", "task id"), "required": True},
                    _param("history_bucket", "auto, or a bucket of `tracescore report --history-bucket`"),
                ],
                "responses": {"200": _ok("the task", {"type": "object"}), "400": _ERROR},
            }
        },
        "/api/v1/conversation": {
            "get": {
                "summary": "one conversation: its turns in order with their verdicts, and its own verdicts "
                "(per-turn results)",
                "parameters": [{**_param("conversation", "conversation id"), "required": True}],
                "responses": {
                    "200": _ok("the conversation", {"type": "object"}),
                    "400": _ERROR,
                    "404": _ERROR,
                },
            }
        },
        "/api/v1/score": {
            "post": {
                "summary": "score complete runs against the given specs (as `tracescore score`)",
                "requestBody": _json_body("specs and filters", _SPECS_BODY),
                "responses": {"200": _ok("verdicts", {"type": "array", "items": _VERDICT}), "400": _ERROR},
            }
        },
        "/api/v1/report": {
            "post": {
                "summary": "per-task statistics for the given specs (as `tracescore report`); with "
                "`include`, the whole report: pass-rate history, tool latency, failing runs",
                "requestBody": _json_body("specs, filters and sections", _REPORT_BODY),
                "responses": {
                    "200": _ok(
                        "without `include`: the task results; with it: the report",
                        {"oneOf": [{"type": "array", "items": _TASK_RESULT}, _REPORT]},
                    ),
                    "400": _ERROR,
                    "504": _ERROR,
                },
            }
        },
    },
}
