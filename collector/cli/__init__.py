"""The `tracescore` command: every subcommand, and how it talks to a person or a log pipeline.

Owns: the argument parser and `main` (the console script's entry point), `score`, `report`, `diff`,
`sql` and `watch` (on the file, or through a running server's API found beside it), the CI gate
(`score`/`report` exit 3 when nothing was scored, saying why; JUnit XML; GitHub Actions annotations),
`check` (specs validated as serve loads them), `demo` and its scripted agent, `doctor`, `export`,
terminal and JSON logging, and the generated CLI reference.
Takes in: a command line.
Hands on: output for people (text, JSON, HTML) and an exit code; `serve` runs the serve stage.

A new subcommand: its arguments in `_parser`, its run in `_main`, its work in a module of its own here.

Public:
- `main`, re-exported here: the entry point (`tracescore = "collector.cli:main"`); `python -m
  collector.cli` runs it too.

Private: `_main`, `_parser`, `_scoring_commands`, `_client`, `_demo`, `_demo_agent`,
`_demo_conversation` (the demo's BFCL-style multi-turn agent), `_doctor`, `_logging`, `_serve_status`,
`_reference`; the CI gate: `_parser_ci` (its flags and `check`'s), `_gate` (exit 3, `--wait`),
`_unscored` (why nothing was scored, asked of any store through SQL), `_gate_clickhouse`, `_junit`,
`_github` (annotations), `_check`, `_doctor_scopes` (doctor's lines of the instrumentation scopes seen).
"""

from collector.cli._main import main

__all__ = ["main"]
