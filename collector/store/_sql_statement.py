"""Which SQL the read-only SQL API accepts: one SELECT-like statement, nothing that acts.

This check gives a person one clear line; it is not what keeps the data safe. The statement it passes
runs inside a read-only DuckDB transaction (collector/store/sql.py), where every write fails on the
database whatever this check decided.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb

# Statement types that only read. DESCRIBE, SHOW, SUMMARIZE, FROM-first, VALUES and a PIVOT with an
# explicit IN list parse as SELECT.
_READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}

# Table functions that act rather than read. A read-only transaction still lets `checkpoint()` fold the
# WAL into the file (no stored value changes, but the server's checkpointer owns when that happens) and
# `truncate_duckdb_logs()` clear DuckDB's log; `query()` and `json_execute_serialized_sql()` run SQL
# text this check cannot see. The rest change settings (refused anyway: the configuration is locked),
# named here so the answer says why.
_ACTING_FUNCTIONS = frozenset(
    {
        "checkpoint",
        "force_checkpoint",
        "truncate_duckdb_logs",
        "query",
        "json_execute_serialized_sql",
        "enable_logging",
        "disable_logging",
        "enable_profiling",
        "disable_profiling",
        "add_grammar_extension",
        "remove_grammar_extension",
        "register_external_resource",
        "register_external_resource_type",
        "create_external_resource",
        "deregister_external_resource",
        "destroy_external_resource",
    }
)
_ANALYZE = {"analyze", "analyse"}


class SqlRefused(ValueError):
    """The statement would write, or is not one statement: refused before it runs."""


def one_statement(connection: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    """The single statement `sql` holds; refused when it does not parse or holds more than one."""
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlRefused(f"cannot parse the query: {exc}") from exc
    if len(statements) != 1:
        raise SqlRefused(f"send exactly one statement (got {len(statements)})")
    return statements[0]


def check_read_only(connection: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    """The one statement of `sql` if it only reads; SqlRefused, with a sentence saying why, if not."""
    statement = one_statement(connection, sql)
    try:
        kind = statement.type
    except ValueError as exc:  # a type DuckDB's Python enum does not name (UPDATE EXTENSIONS, in 2.0)
        raise SqlRefused(f"only read-only queries are allowed; this statement is not one ({exc})") from exc
    if kind == duckdb.StatementType.MULTI:
        raise SqlRefused(
            "this statement runs as several (a PIVOT without an IN list does); "
            "name the pivoted values: PIVOT … ON column IN ('a', 'b') USING …"
        )
    if kind not in _READ_ONLY:
        raise SqlRefused(
            f"only read-only queries are allowed (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN); "
            f"this is {'an' if kind.name[0] in 'AEIOU' else 'a'} {kind.name} statement"
        )
    if kind == duckdb.StatementType.EXPLAIN:
        if _explain_analyzes(statement.query):
            raise SqlRefused(
                "EXPLAIN ANALYZE runs the statement it explains and is not allowed; "
                "EXPLAIN (without ANALYZE) shows the plan"
            )
        return statement
    for name in _table_functions(connection, statement.query):
        if name in _ACTING_FUNCTIONS:
            raise SqlRefused(f"{name}() acts on the database or runs other SQL; it is not allowed here")
    return statement


def _explain_analyzes(text: str) -> bool:
    """Whether an EXPLAIN statement is EXPLAIN ANALYZE, in any spelling: `EXPLAIN ANALYZE …`,
    `EXPLAIN ANALYSE …`, `EXPLAIN (ANALYZE, FORMAT json) …`, with comments anywhere between."""
    words = _words(text)
    if len(words) < 2:
        return False
    if words[1] in _ANALYZE:
        return True
    if words[1] != "(":
        return False
    depth = 0
    for word in words[1:]:
        if word == "(":
            depth += 1
        elif word == ")":
            depth -= 1
            if depth == 0:
                return False
        elif word in _ANALYZE:
            return True
    return False


def _words(text: str) -> list[str]:
    """DuckDB's own tokens of `text`, comments left out, lower-cased; an opening parenthesis glued to
    the next token (the tokenizer does not split it off) comes out on its own."""
    tokens = duckdb.tokenize(text)
    out: list[str] = []
    for i, (start, kind) in enumerate(tokens):
        if kind == duckdb.token_type.comment:
            continue
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        word = text[start:end].strip().lower()
        while word.startswith("("):
            out.append("(")
            word = word[1:].strip()
        for part in word.replace(",", " ").replace(")", " ) ").split():
            out.append(part)
    return out


def _table_functions(connection: duckdb.DuckDBPyConnection, text: str) -> Iterator[str]:
    """The name of every table function a SELECT calls, at any depth (subqueries, CTEs, joins),
    from DuckDB's own parse tree."""
    try:
        ((serialized,),) = connection.execute("SELECT json_serialize_sql(?)", [text]).fetchall()
    except duckdb.Error as exc:
        raise SqlRefused(f"cannot parse the query: {exc}") from exc
    tree = json.loads(serialized)
    if tree.get("error"):
        raise SqlRefused(f"cannot check this query: {tree.get('error_message', 'unknown error')}")
    yield from _walk(tree)


def _walk(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if node.get("type") == "TABLE_FUNCTION" and isinstance(node.get("function"), dict):
            name = node["function"].get("function_name")
            if isinstance(name, str):
                yield name.lower()
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)
