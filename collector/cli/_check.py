"""`tracescore check SPECS…` (and `doctor --specs`): spec files validated exactly as `serve` loads them,
before they ship; with data (`--db`, or the server holding it), what the specs name that the data never
showed.

Validation is serve's own path: `--plugin` modules imported as serve imports them, then
`scoring.load_specs` on each file and on the whole set (names unique across files), so a file `check`
passes is a file `serve` starts with, and one it refuses, serve refuses with the same message. Each
broken file gets its line (serve stops at the first).

Warnings, from the stored runs: a tool a spec expects (or bounds) that no execution or request ever
named, and a `select` key or value no complete run has (with the closest seen, as `score` says when it
scored nothing). A warning does not change the exit code unless `--strict` (then 1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from collector.cli import _client as client
from collector.cli._gate import Connect, ServerQuery
from collector.cli._unscored import Query, Seen, closest, complete_runs, run_filter
from collector.serve.server import PluginError, load_plugins
from scoring import Spec, SpecError, load_specs
from scoring.spec.files import spec_files

EXIT_OK, EXIT_WARNED, EXIT_INVALID = 0, 1, 2
_TOOLS_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class Checked:
    """One line of the verdict on the spec files: `ok` (a file and what it holds) or `fail`."""

    status: str  # ok | fail
    subject: str
    detail: str


def validate(paths: Sequence[Path], plugins: Sequence[str] = ()) -> tuple[list[Checked], list[Spec]]:
    """Every file's verdict, and the specs when all of them load (as serve would load them)."""
    try:
        load_plugins(tuple(plugins))
    except PluginError as exc:
        return [Checked("fail", "plugins", str(exc))], []
    lines: list[Checked] = []
    for path in paths:
        try:
            files = spec_files(path)
        except SpecError as exc:
            lines.append(Checked("fail", str(path), str(exc)))
            continue
        for file in files:
            try:
                specs = load_specs([file])
            except (SpecError, OSError) as exc:  # as serve's reload: a file it cannot read is refused
                lines.append(Checked("fail", str(file), str(exc)))
                continue
            names = ", ".join(s.name for s in specs)
            lines.append(Checked("ok", str(file), f"{len(specs)} spec(s): {names}"))
    if any(line.status == "fail" for line in lines):
        return lines, []
    try:
        return lines, load_specs(list(paths))  # what only the whole set shows: a name used twice
    except (SpecError, OSError) as exc:
        return [*lines, Checked("fail", ", ".join(str(p) for p in paths), str(exc))], []


def _tools_named(spec: Spec) -> set[str]:
    """Tools the spec expects to see run or bounds; forbidden tools are meant never to be seen."""
    names = set(spec.expected_names)
    if spec.latency is not None:
        for bounds in (spec.latency.max_ms, spec.latency.p50_ms, spec.latency.p95_ms, spec.latency.p99_ms):
            names |= {tool for tool in bounds or {} if tool != "*"}
    for turn in [*(spec.turns or []), *([spec.conversation] if spec.conversation else [])]:
        names |= _tools_named(turn)
    return names


def unseen(query: Query, specs: Sequence[Spec]) -> Iterator[str]:
    """What the specs name that the stored data never showed, one line each."""
    rows = query(
        "SELECT DISTINCT tool_name FROM (SELECT tool_name FROM executions UNION ALL "
        f"SELECT tool_name FROM tool_requests) WHERE tool_name IS NOT NULL LIMIT {_TOOLS_LIMIT}"
    )
    tools = sorted(str(r[0]) for r in rows)
    complete = int(query(f"SELECT count(*) FROM ({complete_runs()})")[0][0])
    if complete == 0:
        yield "the data holds no complete run: nothing to compare the specs with"
        return
    seen = Seen(query, run_filter())
    for spec in specs:
        for tool in sorted(_tools_named(spec) - set(tools)):
            hint = closest(tool, tools) if tools else "no tool was ever seen"
            yield f"spec {spec.name!r}: tool {tool!r} never ran nor was requested in the data ({hint})"
        for problem in seen.select_problems(spec.select):
            yield f"spec {spec.name!r}: {problem}"


@contextmanager
def _data(args: argparse.Namespace, connect_file: Connect) -> Iterator[tuple[Query, str] | None]:
    """Where the data is: a running server (for `--db` or `--server`), the file, or none given."""
    if args.db is None and args.server is None:
        yield None
        return
    server = client.discover(args.db or Path("tracescore.duckdb"), args.server)
    if server is not None:
        yield ServerQuery(server), server
        return
    connection = connect_file(args.db)
    try:
        yield (lambda sql: connection.execute(sql).fetchall()), str(args.db)
    finally:
        connection.close()


def run_check(args: argparse.Namespace, connect_file: Connect) -> int:
    lines, specs = validate(args.specs, args.plugins or ())
    for line in lines:
        if line.status == "ok":
            print(f"ok    {line.subject}: {line.detail}")
        else:
            print(f"tracescore: {line.detail}", file=sys.stderr)
    if not specs:
        return EXIT_INVALID
    with _data(args, connect_file) as data:
        if data is None:
            return EXIT_OK
        query, source = data
        warnings = list(unseen(query, specs))
    for warning in warnings:
        print(f"warn  {warning}")
    if not warnings:
        print(f"ok    every tool and select value the specs name is in {source}")
    return EXIT_WARNED if warnings and args.strict else EXIT_OK
