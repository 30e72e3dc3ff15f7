"""Shared by every conformance spec: the ``acta_conformance`` mark and direct database access.

Each spec is written once and runs on the provider chosen with ``--acta-provider`` (see
docs/internals/design.md, "Conformance"). ``ledger`` reads the test's ledger the way an operator
would, through a connection of its own (sqlite3 on the file, psycopg on the test's schema),
never through the code under test. Its SQL is written once for every provider, in the dialect
of acta's own .sql files: ``{schema}.`` before each ledger table or view and ``:name``
placeholders with a dict of parameters::

    ledger.value("SELECT count(*) FROM {schema}.jobs_view WHERE status = :status",
                 {"status": "ready"})

``fresh_database`` is the chosen provider's database with no ledger made for the test yet, for
specs about naming and creating one.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta.provider.protocol import Provider
from acta_testing import LedgerLocation, ledger_location
from acta_testing.plugin import CONFORMANCE, chosen_provider
from acta_testing.schemas import LEDGER_TABLES

HERE = Path(__file__).parent
TABLES = LEDGER_TABLES
Params = Mapping[str, Any]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under conformance/ is a spec (the plugin counts and polices them)."""
    mark = getattr(pytest.mark, CONFORMANCE)
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(mark)


@pytest.fixture(autouse=True)
def _provider_is_there(request: pytest.FixtureRequest) -> None:
    """A spec that needs no ledger still says which provider it ran on: without the server
    it skips (fails under CI=true) like the specs that do need one."""
    if chosen_provider(request.config) == "postgres":
        request.getfixturevalue("_acta_postgres_schemas")


class Ledger:
    """Direct access to one test's ledger, whatever the provider."""

    def __init__(self, location: LedgerLocation) -> None:
        self.location = location
        self.dialect = location.dialect
        self._pg: Any = None  # one psycopg connection per test, opened on first use
        self._undo: list[str] = []

    # -- reading and writing ----------------------------------------------------------------

    def rows(self, sql: str, params: Params | None = None) -> list[tuple[Any, ...]]:
        text = self.location.prepare(sql)
        if self.dialect == "sqlite":
            with closing(sqlite3.connect(self._path)) as conn:
                return conn.execute(text, dict(params or {})).fetchall()
        return list(self._postgres().execute(text, dict(params or {})).fetchall())

    def value(self, sql: str, params: Params | None = None) -> Any:
        [[found]] = self.rows(sql, params)
        return found

    def execute(self, sql: str, params: Params | None = None) -> int:
        """Run one statement in a transaction of its own; returns the number of rows changed."""
        text = self.location.prepare(sql)
        if self.dialect == "sqlite":
            with closing(sqlite3.connect(self._path, isolation_level=None)) as conn:
                conn.execute("PRAGMA foreign_keys = ON")  # as acta's own connections have it
                conn.execute("BEGIN IMMEDIATE")
                changed = conn.execute(text, dict(params or {})).rowcount
                conn.execute("COMMIT")
                return changed
        conn = self._postgres()
        with conn.transaction():
            return int(conn.execute(text, dict(params or {})).rowcount)

    def integrity_error(self) -> type[Exception]:
        """The driver's error for a write the schema's constraints refuse."""
        if self.dialect == "sqlite":
            return sqlite3.IntegrityError
        import psycopg

        return psycopg.IntegrityError

    def count(self, table: str) -> int:
        assert table in TABLES, table
        return int(self.value(f"SELECT count(*) FROM {{schema}}.{table}"))

    def user_jobs(self) -> int:
        """Jobs that are not acta's own (the recovery slot appears once a worker registers)."""
        return int(
            self.value(
                "SELECT count(*) FROM {schema}.jobs j "
                "JOIN {schema}.definitions d ON d.id = j.definition_id "
                "WHERE d.name NOT LIKE 'sys.%'"
            )
        )

    def snapshot(self) -> dict[str, int]:
        """Row counts of every ledger table: equal snapshots mean nothing was written."""
        return {table: self.count(table) for table in TABLES}

    # -- making the database refuse a write ---------------------------------------------------

    def refuse_inserts(self, table: str, when: str, message: str) -> type[Exception]:
        """Make the database itself refuse a row inserted into ``table`` when the condition
        ``when`` (SQL over ``NEW``) holds, with ``message``; returns the driver's integrity
        error class, which is what the caller then sees. Undone when the test ends."""
        assert table in TABLES and "'" not in message, (table, message)
        name = f"acta_test_refuse_{table}"
        if self.dialect == "sqlite":
            self.execute(
                f"CREATE TRIGGER {name} BEFORE INSERT ON {{schema}}.{table} WHEN {when} "
                f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )
            self._undo.append(f"DROP TRIGGER IF EXISTS {name}")
            return sqlite3.IntegrityError
        import psycopg

        self.execute(
            f"CREATE FUNCTION {{schema}}.{name}() RETURNS trigger LANGUAGE plpgsql AS $body$ "
            f"BEGIN IF {when} THEN "
            f"RAISE EXCEPTION '{message}' USING ERRCODE = 'check_violation'; "
            "END IF; RETURN NEW; END $body$"
        )
        self._undo.append(f"DROP FUNCTION IF EXISTS {{schema}}.{name}() CASCADE")
        self.execute(
            f"CREATE TRIGGER {name} BEFORE INSERT ON {{schema}}.{table} "
            f"FOR EACH ROW EXECUTE FUNCTION {{schema}}.{name}()"
        )
        return psycopg.IntegrityError

    # -- connections --------------------------------------------------------------------------

    @property
    def _path(self) -> Path:
        assert self.location.path is not None
        return self.location.path

    def _postgres(self) -> Any:
        if self._pg is None:
            import psycopg

            self._pg = psycopg.connect(
                self.location.dsn or "",
                autocommit=True,
                application_name="acta-test-operator",
                connect_timeout=10,
            )
            # A statement stuck behind a lock the code under test leaked fails, not hangs.
            self._pg.execute("SET lock_timeout = '10s'")
        return self._pg

    def close(self) -> None:
        try:
            for statement in reversed(self._undo):
                self.execute(statement)
        finally:
            if self._pg is not None:
                self._pg.close()


@pytest.fixture
def ledger(acta_provider: Provider) -> Iterator[Ledger]:
    found = Ledger(ledger_location(acta_provider))
    yield found
    found.close()


class FreshDatabase:
    """A database of the chosen provider with no ledger of this test in it yet, for specs about
    naming, creating and migrating one. ``target`` is what ``Acta(...)`` takes (a SQLite path
    or the PostgreSQL DSN); schemas made through ``schema()`` are dropped when the test ends."""

    def __init__(self, dialect: str, target: str, folder: Path | None = None) -> None:
        self.dialect = dialect
        self.target = target
        self._folder = folder
        self._made: list[str] = []
        self._dsn = target
        if dialect == "postgres":
            from acta.provider.postgres.connect import Target

            self._dsn = Target(target).dsn  # what libpq accepts, whatever scheme was given

    def schema(self, name: str) -> str:
        """A schema name this test may create (PostgreSQL: unique, and dropped afterwards)."""
        if self.dialect == "sqlite":
            return name
        made = f"acta_t_{secrets.token_hex(3)}_{name}"
        self._made.append(made)
        return made

    def qualified(self, schema: str, name: str) -> str:
        """How this dialect names the ledger table ``name`` of ``schema`` in SQL."""
        return f"{schema}_{name}" if self.dialect == "sqlite" else f"{schema}.{name}"

    def missing_tables(self, schema: str) -> set[str]:
        """The ledger tables ``schema`` lacks."""
        return set(TABLES) - self._tables(schema)

    def _tables(self, schema: str) -> set[str]:
        if self.dialect == "sqlite":
            with closing(sqlite3.connect(self.target)) as conn:
                rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                prefix = f"{schema}_"
                return {n.removeprefix(prefix) for (n,) in rows if n.startswith(prefix)}
        rows = self._postgres("SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema])
        return {name for (name,) in rows}

    def contents(self) -> frozenset[str]:
        """What exists now: the files of the test's folder on SQLite; on PostgreSQL the schemas
        (other than the test and benchmark schemas concurrent sessions come and go with)."""
        if self.dialect == "sqlite":
            assert self._folder is not None
            return frozenset(p.name for p in self._folder.iterdir())
        rows = self._postgres(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'acta\\_t\\_%' "
            "AND nspname NOT LIKE 'acta\\_bench\\_%' AND nspname NOT LIKE 'pg\\_temp\\_%' "
            "AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'"
        )
        return frozenset(name for (name,) in rows)

    def _postgres(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(
            self._dsn, autocommit=True, application_name="acta-test-operator"
        ) as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        if self._made:
            import psycopg
            from psycopg import sql

            with psycopg.connect(self._dsn, autocommit=True) as conn:
                for name in self._made:
                    conn.execute(
                        sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                    )


@pytest.fixture
def fresh_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FreshDatabase]:
    dialect = chosen_provider(request.config)
    if dialect == "postgres":
        schemas = request.getfixturevalue("_acta_postgres_schemas")
        found = FreshDatabase("postgres", schemas.dsn)
    else:
        folder = tmp_path / "fresh"
        folder.mkdir()
        found = FreshDatabase("sqlite", str(folder / "jobs.sqlite3"), folder)
    yield found
    found.close()
