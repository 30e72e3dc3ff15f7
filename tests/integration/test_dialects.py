"""Every dialect builds the same ledger: its migrations reproduce its checked-in schema.sql, and
its codes table says what the Python enums say.

A failing snapshot test means a migration changed without its snapshot (or the reverse):
regenerate with ``python -m acta.provider.snapshot`` and review the diff
(docs/internals/migrations.md).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acta.model.codes import ALL_FAMILIES
from acta.provider import snapshot
from acta.provider.sqlite import SqliteProvider

if TYPE_CHECKING:
    from acta_testing.schemas import PostgresSchemas

CODES_SQL = "SELECT family, code, name, description FROM {table} ORDER BY family, code"


def _enum_codes() -> list[tuple[str, int, str, str]]:
    rows = [(cls.family(), int(m), m.label, m.description) for cls in ALL_FAMILIES for m in cls]
    return sorted(rows)


@pytest.fixture
def pg_schemas(request: pytest.FixtureRequest) -> PostgresSchemas:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    return schemas


def test_sqlite_migrations_reproduce_schema_sql() -> None:
    assert snapshot.dump("sqlite") == snapshot.stored("sqlite")


def test_postgres_migrations_reproduce_schema_sql(pg_schemas: PostgresSchemas) -> None:
    # A fresh schema with a random name: the dump replaces it with {schema}.
    assert snapshot.dump("postgres", pg_schemas.dsn) == snapshot.stored("postgres")


def test_sqlite_codes_match_the_enums(tmp_path: Path) -> None:
    provider = SqliteProvider(tmp_path / "ledger.sqlite3")
    provider.migrate()
    provider.close()
    with closing(sqlite3.connect(tmp_path / "ledger.sqlite3")) as conn:
        rows = conn.execute(CODES_SQL.format(table=provider.qualify("codes"))).fetchall()
    assert sorted(rows) == _enum_codes()


def test_postgres_codes_match_the_enums(pg_schemas: PostgresSchemas) -> None:
    import psycopg

    with pg_schemas.provider() as provider, psycopg.connect(pg_schemas.dsn) as conn:
        rows: list[Any] = conn.execute(
            CODES_SQL.format(table=f'"{provider.schema}".codes')
        ).fetchall()
    assert sorted(rows) == _enum_codes()


def test_views_have_the_same_columns_on_both_providers(
    tmp_path: Path, pg_schemas: PostgresSchemas
) -> None:
    import psycopg

    provider = SqliteProvider(tmp_path / "ledger.sqlite3")
    provider.migrate()
    provider.close()
    views = ("jobs_view", "workers_view", "events_view", "lanes_view", "gates_view", "meters_view")
    with closing(sqlite3.connect(tmp_path / "ledger.sqlite3")) as conn:
        on_sqlite = {
            view: [r[1] for r in conn.execute(f"PRAGMA table_info({provider.qualify(view)})")]
            for view in views
        }
    with pg_schemas.provider() as pg, psycopg.connect(pg_schemas.dsn) as conn:
        on_postgres = {
            view: [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
                    (pg.schema, view),
                )
            ]
            for view in views
        }
    assert all(on_sqlite[v] for v in views)
    assert on_postgres == on_sqlite
