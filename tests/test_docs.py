"""Docs that cannot rot: every stored table and column is described in docs/storage.md."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from collector.store.schema import create_schema_sql
from scoring import ensure_verdict_schema

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _documented_columns() -> dict[str, set[str]]:
    """Table name → column names from the markdown tables under each `## ` heading of storage.md."""
    text = (DOCS / "storage.md").read_text()
    documented: dict[str, set[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        heading = re.findall(r"`(\w+)`", line) if line.startswith(("## ", "`")) else []
        if heading:
            current = heading
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 4 and cells[0].startswith("`") and cells[1].startswith("`"):
            documented.setdefault(cells[0].strip("`"), set()).add(cells[1].strip("`"))
        elif len(cells) >= 3 and cells[0].startswith("`"):
            for table in current:
                documented.setdefault(table, set()).add(cells[0].strip("`"))
    return documented


def _schema_columns() -> dict[str, set[str]]:
    connection = duckdb.connect()
    for statement in create_schema_sql():
        connection.execute(statement)
    ensure_verdict_schema(connection)
    rows = connection.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall()
    columns: dict[str, set[str]] = {}
    for table, column in rows:
        columns.setdefault(table, set()).add(column)
    return columns


@pytest.mark.parametrize("table", sorted(_schema_columns()))
def test_every_column_is_documented(table: str) -> None:
    missing = _schema_columns()[table] - _documented_columns().get(table, set())
    assert not missing, f"docs/storage.md does not describe {table}: {sorted(missing)}"


def test_the_cli_reference_is_generated_from_the_cli() -> None:
    from collector.cli._reference import render

    assert (DOCS / "cli.md").read_text() == render(), "run: python -m collector.cli._reference > docs/cli.md"
