"""The statement loader: placeholders, casts, and the same statement names in every dialect."""

from __future__ import annotations

import re

import pytest

from acta.errors import SchemaError
from acta.provider import registry
from acta.provider.protocol import SERVER_STATEMENTS
from acta.provider.registry import ProviderEntry
from acta.provider.statements import Statements, convert_params


def test_now_with_a_cast_is_one_placeholder_then_the_cast() -> None:
    sql, names = convert_params("COALESCE(:now::timestamptz, now())", "pyformat")
    assert sql == "COALESCE(%(now)s::timestamptz, now())"
    assert names == ("now",)


def test_casts_after_columns_and_literals_are_not_placeholders() -> None:
    text = "SELECT x::bigint, 'a:b'::text, :id::bigint FROM t WHERE y = :id"
    sql, names = convert_params(text, "pyformat")
    assert sql == "SELECT x::bigint, 'a:b'::text, %(id)s::bigint FROM t WHERE y = %(id)s"
    assert names == ("id",)


def test_array_placeholders_are_sent_in_binary_and_scalars_stay_automatic() -> None:
    text = "SELECT * FROM unnest(:ids::bigint[], :names::text[]) WHERE :now::timestamptz > x"
    sql, names = convert_params(text, "pyformat")
    assert sql == (
        "SELECT * FROM unnest(%(ids)b::bigint[], %(names)b::text[]) WHERE %(now)s::timestamptz > x"
    )
    assert names == ("ids", "names", "now")
    assert convert_params("SELECT :ids::bigint[]", "named")[0] == "SELECT :ids::bigint[]"


def test_numeric_style_numbers_each_name_once_in_order_and_keeps_percent_signs() -> None:
    text = "SELECT :b::bigint, :a, 'x%' FROM t -- :c\nWHERE y = :b AND z LIKE :a"
    sql, names = convert_params(text, "numeric")
    assert sql == "SELECT $1::bigint, $2, 'x%' FROM t -- :c\nWHERE y = $1 AND z LIKE $2"
    assert names == ("b", "a")


def test_postgres_statements_come_numbered_with_values_in_their_order() -> None:
    statements = Statements("acta.provider.postgres", lambda body: body, "pyformat")
    one = statements["fused_enqueue_one"]
    assert "%(" not in one.numbered and "$1" in one.numbered
    params = {name: f"value of {name}" for name in one.params}
    assert one.values(params) == [f"value of {name}" for name in one.params]
    with pytest.raises(SchemaError, match="needs parameter"):
        one.values({})


def test_named_style_keeps_placeholders_and_casts() -> None:
    sql, names = convert_params("SELECT :a::int, :b", "named")
    assert sql == "SELECT :a::int, :b"
    assert names == ("a", "b")


def test_quotes_and_comments_hide_colons_and_percent_signs_are_doubled() -> None:
    text = (
        "-- :not_a_param\nSELECT ':nor_this', \"col:x\" FROM t /* :nope */ "
        "WHERE n LIKE 'x%' AND k = :k"
    )
    sql, names = convert_params(text, "pyformat")
    assert names == ("k",)
    assert "LIKE 'x%%'" in sql and sql.endswith("k = %(k)s")


def _names(entry: ProviderEntry) -> frozenset[str]:
    return Statements(entry.package, lambda text: text, "named").names()


def test_every_dialect_defines_the_same_statement_names() -> None:
    """Portable statements exist in every registered dialect; the server statements exist
    exactly where the provider says it has them (Capabilities.fused)."""
    found = {entry.name: _names(entry) for entry in registry.entries()}
    portable = {name: names - SERVER_STATEMENTS for name, names in found.items()}
    assert all(found.values()), "a dialect defines no statements"
    union = set().union(*portable.values())
    for entry in registry.entries():
        assert sorted(union - portable[entry.name]) == [], f"missing on {entry.title}"
        server = found[entry.name] & SERVER_STATEMENTS
        if entry.capabilities.fused:
            assert sorted(SERVER_STATEMENTS - server) == [], f"server statements on {entry.title}"
        else:
            assert sorted(server) == [], f"{entry.title} must not define server statements"


def _postgres_functions() -> dict[str, str]:
    """The body of every function the PostgreSQL migrations create, by name."""
    from importlib import resources

    folder = resources.files("acta.provider.postgres") / "migrations"
    bodies: dict[str, str] = {}
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        text = path.read_text("utf-8")
        for match in re.finditer(r"CREATE FUNCTION \{schema\}\.(\w+)\((.*?)\$body\$;", text, re.S):
            bodies[match.group(1)] = match.group(2)
    return bodies


def test_postgres_statements_use_the_database_clock_when_now_is_null() -> None:
    pytest.importorskip("psycopg")
    statements = Statements("acta.provider.postgres", lambda text: text, "pyformat")
    functions = _postgres_functions()
    for name in sorted(statements.names()):
        statement = statements[name]
        if "now" not in statement.params:
            continue
        called = re.search(r"\{schema\}\.(\w+)\(", statement.sql)
        if called is None or "p_now => %(now)s::timestamptz" not in statement.sql:
            assert "COALESCE(%(now)s::timestamptz, now())" in statement.sql, name
            continue
        # A statement that hands now to a ledger function: the function falls back instead,
        # and uses its p_now nowhere else.
        body = functions[called.group(1)]
        uses = body.count("p_now") - 1  # the parameter's own declaration
        assert uses > 0, name
        assert body.count("COALESCE(p_now, now())") == uses, name


def test_sqlite_statements_use_the_database_clock_when_now_is_null() -> None:
    statements = Statements("acta.provider.sqlite", lambda text: text, "named")
    for name in sorted(statements.names()):
        statement = statements[name]
        if "now" in statement.params:
            assert "COALESCE(:now, strftime('%Y-%m-%d %H:%M:%f', 'now'))" in statement.sql, name
