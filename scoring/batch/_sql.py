"""One spec's verdicts over many runs, as one DuckDB query (set-based scoring).

The query mirrors scoring/judge/run.py for the compiled subset (scoring/batch/_plan.py) step by step:
executions and requests are folded per run into the few facts each check needs; the checks, gates
and notes are derived from those facts; the verdict is assembled as JSON text in the key order of
`Verdict.to_dict`, so that `json.loads` of it gives exactly what the Python judge gives
(tests/scoring/batch/test_batch_parity.py holds the two to that).

Layers: `rq`, `answered`, `ex` (the rows, with their scope and their reconciliation entry), `ex_agg`
and `rq_agg` (facts per run), `base` (runs joined to their facts), `judged` (the checks, each a few
columns), `counted`, `verdict`.

Why this module is long: it is one query. Each check of the compiled subset is a short function that
adds its columns, in the order the Python judge makes its checks, so the query reads top to bottom
beside scoring/judge/run.py; cut into modules, the layers that refer to each other by name would sit
apart. Its helpers that stand alone (literals, JSON text, `matches_subset` in SQL) are modules already.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from scoring.batch import _sql_json as js
from scoring.batch import _sql_literal as lit
from scoring.batch._sql_match import subset
from scoring.spec.specs import Spec

# load_evidence's orders: the Python judge sees executions and requests in these.
_EXECUTION_ORDER = "ex.start_time, ex.span_id, ex.call_index"
_REQUEST_ORDER = "requested_at, position"
_CLEAN = "e.tool_name <> '' AND NOT e.error AND NOT e.paused AND NOT e.from_history"
_LEADER = "({table}.agent_path IS NULL OR NOT contains({table}.agent_path, '/'))"
# A family's (run, spec) rows name their spec (scoring/batch/_family.py).
_ROW_IDENTITY = ("spec_position", "spec_name", "spec_name_json", "spec_fingerprint", "spec_fingerprint_json")


def _compact(value: object) -> str:
    """scoring/checks/registry.py's rendering of an argument spec in a detail."""
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


@dataclass
class _Query:
    spec: Spec
    row_columns: list[str] = field(default_factory=list)
    execution_facts: list[tuple[str, str, str]] = field(default_factory=list)  # (name, aggregate, default)
    request_facts: list[tuple[str, str, str]] = field(default_factory=list)
    judged_columns: list[str] = field(default_factory=list)
    counter: int = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def per_execution(self, aggregate: str, default: str) -> str:
        name = self._name("x")
        self.execution_facts.append((name, aggregate, default))
        return name

    def per_request(self, aggregate: str, default: str) -> str:
        name = self._name("r")
        self.request_facts.append((name, aggregate, default))
        return name

    def judged(self, expression: str) -> str:
        """A column computed per run from the facts (and from earlier judged columns)."""
        name = self._name("j")
        self.judged_columns.append(f"{expression} AS {name}")
        return name


@dataclass(frozen=True)
class _Check:
    """One check's columns in `judged`: satisfied, detail, and its JSON."""

    satisfied: str
    detail: str
    json: str


def _expected_tools(q: _Query, missing: list[str]) -> list[_Check]:
    checks = []
    for tool in dict.fromkeys(q.spec.expected_tools or []):
        name = lit.string(tool)
        ran = q.per_execution(f"bool_or(ex.seen AND ex.clean AND ex.tool = {name})", "false")
        tried = f"ex.seen AND ex.tool = {name} AND NOT ex.from_history"
        errored = q.per_execution(f"bool_or({tried} AND ex.error)", "false")
        paused = q.per_execution(f"bool_or({tried} AND ex.paused)", "false")
        requested = q.per_request(f"bool_or(seen AND unexecuted AND tool = {name})", "false")
        states = q.judged(
            f"concat_ws('; ', CASE WHEN {errored} THEN 'errored' END, CASE WHEN {paused} THEN 'paused' END, "
            f"CASE WHEN {requested} THEN 'requested but never executed' END)"
        )
        observed = js.array(
            [
                f"CASE WHEN {errored} THEN '\"errored\"' END",
                f"CASE WHEN {paused} THEN '\"paused\"' END",
                f"CASE WHEN {requested} THEN '\"requested but never executed\"' END",
            ]
        )
        how = f"CASE WHEN {states} = '' THEN '' ELSE ' (' || {states} || ')' END"
        detail = q.judged(
            f"CASE WHEN {ran} THEN {lit.string(f'{tool} ran cleanly')} "
            f"ELSE {lit.string(f'expected tool {tool} has no clean execution')} || {how} END"
        )
        check = js.obj(
            [
                ("kind", "'\"expected_tool\"'"),
                ("target", js.constant(tool)),
                ("satisfied", js.boolean(ran)),
                ("detail", js.value(detail)),
                ("expected", "'null'"),
                ("observed", f"CASE WHEN {ran} THEN 'null' ELSE {observed} END"),
            ]
        )
        missing.append(f"CASE WHEN NOT {ran} THEN to_json({name} || {how}) END")
        checks.append(_Check(ran, detail, q.judged(check)))
    return checks


def _arguments(q: _Query, failed: list[str]) -> list[_Check]:
    checks = []
    tools = list(q.spec.arguments or {})
    for tool in tools:
        name = lit.string(tool)
        calls = q.per_execution(f"count(*) FILTER (ex.seen AND ex.clean AND ex.tool = {name})", "0")
        for expected in q.spec.argument_specs(tool):
            shown = _compact(expected)
            if expected:
                match = subset(expected, "ex.arguments")
                met = q.per_execution(
                    f"bool_or(ex.seen AND ex.clean AND ex.tool = {name} AND {match})", "false"
                )
            else:  # `{}`: any clean call, captured arguments or not
                met = q.judged(f"{calls} > 0")
            detail = q.judged(
                f"CASE WHEN {met} THEN {lit.string(f'a clean {tool} call has arguments {shown}')} "
                f"WHEN {calls} = 0 "
                f"THEN {lit.string(f'no clean {tool} execution to match arguments {shown}')} "
                f"ELSE {lit.string(f'no clean {tool} execution matches arguments {shown} (')} "
                f"|| {calls} || ' clean call(s))' END"
            )
            check = js.obj(
                [
                    ("kind", "'\"arguments\"'"),
                    ("target", js.constant(tool)),
                    ("satisfied", js.boolean(met)),
                    ("detail", js.value(detail)),
                    ("expected", js.constant(expected)),
                    ("observed", js.integer(calls)),
                ]
            )
            failed.append(
                f"CASE WHEN NOT {met} THEN {js.constant({'tool': tool, 'arguments': expected})} END"
            )
            checks.append(_Check(met, detail, q.judged(check)))
    return checks


@dataclass(frozen=True)
class _Latency:
    """The latency checks that apply to a run, in the judge's order (known only per run)."""

    checks: str  # JSON text of the checks, comma-separated, or NULL
    notes: str  # details of the unsatisfied ones, '; '-separated, or NULL
    violations: str  # JSON text of every violation, comma-separated, or NULL
    satisfied: str
    total: str


def _latency(q: _Query) -> _Latency | None:
    if q.spec.latency is None or q.spec.latency.max_ms is None:
        return None
    bounds = q.spec.latency.max_ms
    named = [tool for tool in bounds if tool != "*"]
    key = "'*'"
    if named:
        names = ", ".join(lit.string(t) for t in named)
        key = f"CASE WHEN e.tool_name IN ({names}) THEN e.tool_name ELSE '*' END"
    wanted = ", ".join(lit.string(b) for b in bounds)
    q.row_columns.append(f"CASE WHEN {_CLEAN} AND ({key}) IN ({wanted}) THEN {key} END AS bound")
    entries = []
    for bound, limit in bounds.items():
        name = lit.string(bound)
        slower = (
            f"ex.seen AND ex.bound = {name} AND ex.duration > {lit.exact_double(limit)} "
            "AND NOT isnan(ex.duration)"
        )
        violation = js.obj(
            [
                ("tool", js.value("ex.tool")),
                ("span_id", js.value("ex.span_id")),
                ("duration_ms", js.value("ex.duration")),
                ("max_ms", js.constant(limit)),
            ]
        )
        runs = q.per_execution(f"count(*) FILTER (ex.seen AND ex.bound = {name})", "0")
        slow = q.per_execution(f"count(*) FILTER ({slower})", "0")
        # Written only for the slow executions: a CASE evaluates its branch for the rows that take it.
        violations = q.per_execution(
            f"string_agg(CASE WHEN {slower} THEN {violation} END, ',' ORDER BY {_EXECUTION_ORDER}) "
            f"FILTER ({slower})",
            "NULL",
        )
        slowest = q.per_execution(f"max(ex.duration) FILTER ({slower})", "NULL")
        target = "other tools" if bound == "*" else bound
        detail = q.judged(
            f"CASE WHEN {slow} > 0 THEN {slow} || ' of ' || {runs} || "
            f"{lit.string(f' {target} execution(s) slower than {limit:g} ms (slowest ')} "
            f"|| printf('%.4g', {slowest}) || ' ms)' "
            f"ELSE {runs} || {lit.string(f' {target} execution(s) within {limit:g} ms')} END"
        )
        check = js.obj(
            [
                ("kind", "'\"latency\"'"),
                ("target", js.constant(bound)),
                ("satisfied", js.boolean(f"{slow} = 0")),
                ("detail", js.value(detail)),
                ("expected", js.constant({"max_ms": limit})),
                ("observed", f"concat('[', {violations}, ']')"),
            ]
        )
        entries.append((runs, slow, detail, q.judged(check), violations, name))
    total = " + ".join(f"({runs} > 0)::INTEGER" for runs, *_ in entries)
    satisfied = " + ".join(f"({runs} > 0 AND {slow} = 0)::INTEGER" for runs, slow, *_ in entries)
    if len(entries) == 1:
        runs, slow, detail, check, violations, _ = entries[0]
        return _Latency(
            f"CASE WHEN {runs} > 0 THEN {check} END",
            f"CASE WHEN {slow} > 0 THEN {detail} END",
            violations,
            satisfied,
            total,
        )
    # A bound's check comes where its first clean execution is (the judge groups them in a dict).
    order = q.per_execution(
        f"list(ex.bound ORDER BY {_EXECUTION_ORDER}) FILTER (ex.seen AND ex.bound IS NOT NULL)", "[]"
    )
    structs = ", ".join(
        f"CASE WHEN {runs} > 0 THEN {{'at': list_position({order}, {name}), 'check': {check}, "
        f"'note': CASE WHEN {slow} > 0 THEN {detail} END, 'violations': {violations}}} END"
        for runs, slow, detail, check, violations, name in entries
    )
    ordered = q.judged(f"list_sort(list_filter([{structs}], lambda c: c IS NOT NULL))")
    return _Latency(
        f"nullif(array_to_string(list_transform({ordered}, lambda c: c.check), ','), '')",
        f"nullif(array_to_string(list_transform({ordered}, lambda c: c.note), '; '), '')",
        f"nullif(array_to_string(list_transform({ordered}, lambda c: c.violations), ','), '')",
        satisfied,
        total,
    )


def _names(q: _Query, where: str) -> str:
    """Sorted distinct names of the tools strict mode or forbidden_tools looks at that meet `where`
    (`{tool}` stands for the name): clean executions, or every attempt when attempts count."""
    attempts = q.spec.counts_attempts
    state = "ex.clean OR ((ex.error OR ex.paused) AND NOT ex.from_history)" if attempts else "ex.clean"
    ran = q.per_execution(
        f"list(ex.tool) FILTER (ex.seen AND ({state}) AND ex.tool <> '' "
        f"AND {where.replace('{tool}', 'ex.tool')})",
        "[]",
    )
    if not attempts:
        return f"list_sort(list_distinct({ran}))"
    asked = q.per_request(
        f"list(tool) FILTER (seen AND unexecuted AND tool <> '' AND {where.replace('{tool}', 'tool')})", "[]"
    )
    return f"list_sort(list_distinct(list_concat({ran}, {asked})))"


@dataclass
class _Gates:
    json: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _gates(q: _Query, additional: str) -> _Gates:
    gates = _Gates()
    if not q.spec.allows_additional:
        failed = f"len({additional}) > 0"
        listed = f"array_to_string({additional}, ', ')"
        detail = f"CASE WHEN {failed} THEN 'unexpected tools: ' || {listed} ELSE 'no unexpected tools' END"
        gates.json.append(
            js.obj(
                [
                    ("kind", "'\"strict\"'"),
                    ("target", "'\"additional_tools\"'"),
                    ("satisfied", js.boolean(f"NOT ({failed})")),
                    ("detail", js.value(detail)),
                    ("expected", js.constant(q.spec.counts_attempts)),
                    ("observed", "'null'"),
                ]
            )
        )
        gates.notes.append(f"CASE WHEN {failed} THEN 'unexpected tools not allowed: ' || {listed} END")
        gates.failed.append(failed)
    if q.spec.forbidden_tools:
        forbidden = ", ".join(lit.string(t) for t in q.spec.forbidden_tools)
        hits = q.judged(_names(q, f"{{tool}} IN ({forbidden})"))
        failed = f"len({hits}) > 0"
        verb = "attempted" if q.spec.counts_attempts else "ran"
        detail = q.judged(
            f"CASE WHEN {failed} "
            f"THEN {lit.string(f'forbidden tools {verb}: ')} || array_to_string({hits}, ', ') "
            "ELSE 'no forbidden tool ran' END"
        )
        gates.json.append(
            js.obj(
                [
                    ("kind", "'\"forbidden_tools\"'"),
                    ("target", "'\"forbidden_tools\"'"),
                    ("satisfied", js.boolean(f"NOT ({failed})")),
                    ("detail", js.value(detail)),
                    ("expected", js.constant(list(q.spec.forbidden_tools))),
                    ("observed", js.value(hits)),
                ]
            )
        )
        gates.notes.append(f"CASE WHEN {failed} THEN {detail} END")
        gates.failed.append(failed)
    return gates


_REQUEST_REFERENCE = js.obj(
    [
        ("span_id", js.value("{r}.span_id")),
        ("position", js.integer("{r}.position")),
        ("round", js.integer("{r}.round")),
        ("encoding", js.value("{r}.encoding")),
    ]
)


def _reconciliation(q: _Query) -> str:
    """scoring/checks/reconcile.py: every call of the (scoped) run, and counts by state."""
    calls = q.per_execution(f"string_agg(ex.entry, ',' ORDER BY {_EXECUTION_ORDER}) FILTER (ex.seen)", "NULL")
    unexecuted_call = js.obj(
        [
            ("tool", js.value("tool")),
            ("state", "'\"requested_never_executed\"'"),
            ("span_id", "'null'"),
            ("call_id", js.value("call_id")),
            ("request", _REQUEST_REFERENCE.replace("{r}", "rq")),
            ("matched_by", "'null'"),
        ]
    )
    unexecuted = q.per_request(
        f"string_agg({unexecuted_call}, ',' ORDER BY {_REQUEST_ORDER}) FILTER (seen AND unexecuted)", "NULL"
    )
    count = {
        state: q.per_execution(f"count(*) FILTER (ex.seen AND ex.state = '{state}')", "0")
        for state in ("clean", "errored", "paused", "from_history", "unnamed")
    }
    never = q.per_request("count(*) FILTER (seen AND unexecuted)", "0")
    unanswered = q.per_execution("count(*) FILTER (ex.seen AND NOT ex.answered AND NOT ex.from_history)", "0")
    requests = q.per_request("count(*) FILTER (seen)", "0")
    counts = [
        ("clean", js.integer(count["clean"])),
        ("errored", js.integer(count["errored"])),
        ("paused", js.integer(count["paused"])),
        ("requested_never_executed", js.integer(never)),
        ("executed_without_request", js.integer(unanswered)),
        ("from_history", js.integer(count["from_history"])),
    ]
    # `unnamed` is a key only once such a call is seen (the judge adds it to a dict as it goes).
    unnamed = count["unnamed"]
    with_unnamed = js.obj([*counts, ("unnamed", js.integer(unnamed))])
    counts_json = f"CASE WHEN {unnamed} > 0 THEN {with_unnamed} ELSE {js.obj(counts)} END"
    everything = f"concat('[', concat_ws(',', {calls}, {unexecuted}), ']')"
    reconciliation = js.obj(
        [("counts", counts_json), ("requests_captured", js.boolean(f"{requests} > 0")), ("calls", everything)]
    )
    return js.obj([("reconciliation", reconciliation)])


def _entry() -> str:
    """An execution's entry in the reconciliation (computed per row, before the rows are folded)."""
    same_id = (
        "e.call_id IS NOT NULL AND e.call_id = a.call_id AND e.call_id_source IS DISTINCT FROM 'request'"
    )
    return js.obj(
        [
            ("tool", js.value("e.tool_name")),
            ("state", "concat('\"', state, '\"')"),  # one of five names: nothing to escape
            ("span_id", js.value("e.span_id")),
            ("call_id", js.value("e.call_id")),
            (
                "request",
                f"CASE WHEN a.span_id IS NULL THEN 'null' ELSE {_REQUEST_REFERENCE.replace('{r}', 'a')} END",
            ),
            (
                "matched_by",
                f"CASE WHEN a.span_id IS NULL THEN 'null' WHEN {same_id} THEN '\"call_id\"' "
                "ELSE '\"name_arguments_order\"' END",
            ),
        ]
    )


def _rows(q: _Query, runs: str, rows: str | None) -> tuple[str, str]:
    """The executions and requests of the runs the spec sees; `rows` None means every run's (no row
    range to apply: the facts of runs not judged are dropped by the join to the runs)."""
    leader = q.spec.scope == "leader"

    # scoring/judge/_scope.py: handoffs to tools no check names are not seen, nor are their requests.
    names = ", ".join(lit.string(t) for t in sorted(q.spec.named_tools))
    unnamed = f"tool_name NOT IN ({names})" if names else "true"
    unseen = f"SELECT run_id, tool_name FROM executions WHERE kind = 'handoff' AND {unnamed}"
    visible = {
        "e": f"NOT (e.kind = 'handoff' AND e.{unnamed})" if names else "e.kind <> 'handoff'",
        "t": f"NOT EXISTS (SELECT 1 FROM ({unseen}) h "
        "WHERE h.run_id = t.run_id AND h.tool_name = t.tool_name)",
    }

    def where(table: str) -> str:
        if rows is None:
            return f"WHERE ({visible[table]})"
        return (
            f"WHERE {rows.replace('{table}', table)} AND {table}.run_id IN (SELECT run_id FROM {runs}) "
            f"AND ({visible[table]})"
        )

    requests = (
        "SELECT run_id, span_id, position, round, encoding, tool_name AS tool, call_id, execution_span_id, "
        "coalesce(execution_call_index, 0) AS execution_call_index, "
        f"requested_at, {_LEADER.replace('{table}', 't') if leader else 'true'} AS seen, "
        f"execution_span_id IS NULL AS unexecuted FROM tool_requests t {where('t')}"
    )
    state = (
        "CASE WHEN e.from_history THEN 'from_history' WHEN e.error THEN 'errored' "
        "WHEN e.paused THEN 'paused' WHEN e.tool_name <> '' THEN 'clean' ELSE 'unnamed' END"
    )
    executions = (
        "SELECT e.run_id, e.span_id, e.call_index, e.tool_name AS tool, e.error, e.paused, e.from_history, "
        "e.arguments, "
        f"coalesce(e.duration_ms, 0.0) AS duration, e.start_time, "
        f"{_LEADER.replace('{table}', 'e') if leader else 'true'} AS seen, {_CLEAN} AS clean, state, "
        f"a.span_id IS NOT NULL AS answered, {_entry()} AS entry"
        + "".join(f", {c}" for c in q.row_columns)
        + f" FROM (SELECT *, {state} AS state FROM executions e {where('e')}) e "
        "LEFT JOIN answered a ON a.run_id = e.run_id AND a.execution_span_id = e.span_id "
        "AND a.execution_call_index = e.call_index"
    )
    return executions, requests


def verdict_query(spec: Spec, runs: str, rows: str | None = "true", *, named_by_row: bool = False) -> str:
    """SELECT ord, the `verdicts` columns and `verdict` (its JSON), one row per run of `runs`.

    `runs` is a relation of the runs to judge (run_id, trace_id, task_id, version, ord); `rows` a
    condition on executions and requests (`{table}` is their alias) that narrows the scan, such as an
    ingest_seq range DuckDB prunes by row-group min/max, or None when `runs` holds every complete run
    (reading every row is then cheaper than looking each up).

    `named_by_row`: `runs` holds a row per run and spec of a family (scoring/batch/_family.py), whose
    `spec_name`, `spec_fingerprint` (and their JSON texts) name each verdict instead of `spec`'s, and
    whose `spec_position` is selected last."""
    q = _Query(spec)
    missing: list[str] = []
    failed_arguments: list[str] = []
    fixed = _expected_tools(q, missing) + _arguments(q, failed_arguments)
    latency = _latency(q)
    expected = ", ".join(lit.string(t) for t in sorted(spec.expected_names))
    additional = q.judged(_names(q, f"{{tool}} NOT IN ({expected})" if expected else "true"))
    gates = _gates(q, additional)
    reconciliation = _reconciliation(q)
    n_all = q.per_execution("count(*)", "0")
    n_seen = q.per_execution("count(*) FILTER (ex.seen)", "0")
    executions_sql, requests_sql = _rows(q, runs, rows)

    satisfied = " + ".join(
        [f"{c.satisfied}::INTEGER" for c in fixed] + [latency.satisfied if latency else "0"]
    )
    total = " + ".join([str(len(fixed)), latency.total if latency else "0"])
    checks = js.array([c.json for c in fixed] + ([latency.checks] if latency else []))
    violations = js.array([latency.violations] if latency else [])
    notes = [f"CASE WHEN {n_all} = 0 THEN 'run has no tool executions' END"]
    notes += [f"CASE WHEN NOT {c.satisfied} THEN {c.detail} END" for c in fixed]
    notes += gates.notes
    if latency:
        notes.append(latency.notes)
    if spec.latency is not None and spec.latency.max_ms is not None:
        notes.append(
            "CASE WHEN checks_total = 0 THEN "
            "'no check applied: no clean execution of a tool with a latency bound' END"
        )
    if spec.scope == "leader":
        notes.append(
            f"CASE WHEN {n_all} > {n_seen} "
            f"THEN ({n_all} - {n_seen}) || ' member execution(s) left out (scope: leader)' END"
        )
    verdict = js.obj(
        [
            ("run_id", js.value("run_id")),
            ("trace_id", js.value("trace_id")),
            ("task", js.value("task_id")),
            ("spec", "spec_name_json" if named_by_row else js.constant(spec.name)),
            ("spec_fingerprint", "spec_fingerprint_json" if named_by_row else js.constant(spec.fingerprint)),
            ("profile", "'\"default\"'"),
            ("passed", js.boolean("passed")),
            ("value", js.value("value")),
            ("label", "'\"' || label || '\"'"),
            ("checks", "checks"),
            ("missing_tools", "missing_tools"),
            ("additional_tools", "additional_tools"),
            ("failed_argument_checks", "failed_argument_checks"),
            ("latency_violations", "latency_violations"),
            ("reason", js.value("reason")),
            ("run_version", js.integer("version")),
            ("gates", "gates"),
            ("detail", "detail"),
            ("schema_version", "'1'"),
        ]
    )

    def facts(alias: str, items: list[tuple[str, str, str]]) -> list[str]:
        return [f"coalesce({alias}.{n}, {d}) AS {n}" for n, _, d in items]

    base_columns = ", ".join(facts("x", q.execution_facts) + facts("r", q.request_facts))
    identity = [lit.string(spec.name), lit.string(spec.fingerprint), ""]
    if named_by_row:
        base_columns += ", " + ", ".join(f"c.{n}" for n in _ROW_IDENTITY)
        identity = ["spec_name", "spec_fingerprint", ", spec_position"]
    execution_aggregates = ", ".join(f"{a} AS {n}" for n, a, _ in q.execution_facts)
    request_aggregates = ", ".join(f"{a} AS {n}" for n, a, _ in q.request_facts) or "count(*) AS r0"
    return f"""
WITH rq AS ({requests_sql}),
answered AS (
    SELECT run_id, execution_span_id, execution_call_index, span_id, position, round, encoding, call_id
    FROM rq
    WHERE seen AND execution_span_id <> ''
    QUALIFY row_number() OVER (
        PARTITION BY run_id, execution_span_id, execution_call_index
        ORDER BY requested_at DESC NULLS FIRST, position DESC) = 1
),
ex AS ({executions_sql}),
ex_agg AS (SELECT ex.run_id, {execution_aggregates} FROM ex GROUP BY ex.run_id),
rq_agg AS (SELECT rq.run_id, {request_aggregates} FROM rq GROUP BY rq.run_id),
base AS (
    SELECT c.run_id, c.trace_id, c.task_id, c.version, c.ord, {base_columns}
    FROM {runs} c LEFT JOIN ex_agg x ON x.run_id = c.run_id LEFT JOIN rq_agg r ON r.run_id = c.run_id
),
judged AS (SELECT *, {", ".join(q.judged_columns)} FROM base),
counted AS (
    SELECT *, {satisfied} AS checks_satisfied, {total} AS checks_total,
        {" OR ".join(gates.failed) or "false"} AS gate_failed
    FROM judged
),
decided AS (
    SELECT *,
        checks_satisfied = checks_total AND NOT gate_failed AS passed,
        CASE WHEN checks_satisfied = checks_total AND NOT gate_failed THEN 'pass' ELSE 'fail' END AS label,
        CASE WHEN checks_total = 0 THEN NULL ELSE checks_satisfied / checks_total END AS value,
        nullif(concat_ws('; ', {", ".join(notes)}), '') AS reason,
        {checks} AS checks,
        {js.array(missing)} AS missing_tools,
        {js.value(additional)} AS additional_tools,
        {js.array(failed_arguments)} AS failed_argument_checks,
        {violations} AS latency_violations,
        {js.array(gates.json)} AS gates,
        {reconciliation} AS detail
    FROM counted
)
SELECT ord, run_id, trace_id, task_id, {identity[0]} AS spec,
    {identity[1]} AS spec_fingerprint, 'default' AS profile, label, passed, value, reason,
    checks, missing_tools, additional_tools, failed_argument_checks, latency_violations,
    version AS run_version, 1 AS schema_version, {verdict} AS verdict{identity[2]}
FROM decided
"""
