"""Shared by the integration tests: what is specific to one provider, or not a ledger behaviour.

Behaviour specs that must hold on every provider live in conformance/. The tests here pin their
provider: SQLite unless a module overrides ``acta_provider`` (the PostgreSQL modules do), so
``--acta-provider`` does not change what they test. The ``ledger`` fixture opens its own
short-lived sqlite3 connections to the per-test ledger file, so assertions about rows never go
through the code under test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta.provider.protocol import Provider
from acta.provider.sqlite import SqliteProvider
from acta_testing.schemas import LEDGER_TABLES, sqlite_copy

PREFIX = "acta_"
TABLES = LEDGER_TABLES


class Ledger:
    """Direct, read-mostly access to a SQLite ledger file (table prefix ``acta_``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(self.path)) as conn:
            return conn.execute(sql, tuple(params)).fetchall()

    def value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        [[found]] = self.rows(sql, params)
        return found

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write in its own transaction; returns the number of rows changed."""
        with closing(sqlite3.connect(self.path, isolation_level=None)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            changed = conn.execute(sql, tuple(params)).rowcount
            conn.execute("COMMIT")
            return changed

    def count(self, table: str) -> int:
        return int(self.value(f"SELECT count(*) FROM {PREFIX}{table}"))

    def user_jobs(self) -> int:
        """Jobs that are not acta's own (the recovery slot appears once a worker registers)."""
        return int(
            self.value(
                f"SELECT count(*) FROM {PREFIX}jobs j "
                f"JOIN {PREFIX}definitions d ON d.id = j.definition_id "
                "WHERE d.name NOT LIKE 'sys.%'"
            )
        )

    def snapshot(self) -> dict[str, int]:
        """Row counts of every ledger table: equal snapshots mean nothing was written."""
        return {table: self.count(table) for table in TABLES}


@pytest.fixture
def acta_provider(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqliteProvider]:
    """A fresh SQLite ledger for this test, whatever ``--acta-provider`` says."""
    provider = SqliteProvider(
        sqlite_copy(tmp_path_factory.getbasetemp(), tmp_path / "ledger.sqlite3")
    )
    yield provider
    provider.close()


@pytest.fixture(params=["sqlite", "postgres"])
def either_dialect(
    request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Provider]:
    """A fresh ledger on each dialect in turn, whatever ``--acta-provider`` says (a test file
    takes it as its ``acta_provider`` to run everything twice)."""
    if request.param == "sqlite":
        provider = SqliteProvider(
            sqlite_copy(tmp_path_factory.getbasetemp(), tmp_path / "ledger.sqlite3")
        )
        yield provider
        provider.close()
        return
    schemas = request.getfixturevalue("_acta_postgres_schemas")
    with schemas.provider(max_connections=4) as provider:
        yield provider


@pytest.fixture
def ledger(acta_provider: SqliteProvider) -> Ledger:
    return Ledger(acta_provider.path)
