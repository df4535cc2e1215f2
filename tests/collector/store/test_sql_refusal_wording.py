"""A refused statement is named in plain English: "an INSERT statement", "a DELETE statement" (issue 28)."""

from __future__ import annotations

import duckdb
import pytest

from collector.store.sql import SqlRefused, check_read_only


@pytest.mark.parametrize(
    ("sql", "wording"),
    [
        ("INSERT INTO t VALUES (1)", "this is an INSERT statement"),
        ("UPDATE t SET a = 2", "this is an UPDATE statement"),
        ("ALTER TABLE t ADD COLUMN b INTEGER", "this is an ALTER statement"),
        ("DELETE FROM t", "this is a DELETE statement"),
        ("CREATE TABLE u (a INTEGER)", "this is a CREATE statement"),
    ],
)
def test_the_refusal_uses_the_right_article(sql: str, wording: str) -> None:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (a INTEGER)")
    with pytest.raises(SqlRefused) as refused:
        check_read_only(connection, sql)
    assert str(refused.value).endswith(wording)
