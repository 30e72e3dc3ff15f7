"""Shared by every conformance spec: the ``acta_conformance`` mark and direct database access.

Each spec is written once and runs on the provider chosen with ``--acta-provider`` (see
docs/internals/design.md, "Conformance"). ``ledger`` reads the test's ledger the way an operator
would, through a connection of its own (the provider's operator connection from its test
support: sqlite3 on the file, psycopg on the test's schema), never through the code under
test. Its SQL is written once for every provider, in the dialect of acta's own .sql files:
``{schema}.`` before each ledger table or view and ``:name`` placeholders with a dict of
parameters::

    ledger.value("SELECT count(*) FROM {schema}.jobs_view WHERE status = :status",
                 {"status": "ready"})

``fresh_database`` is the chosen provider's database with no ledger made for the test yet, for
specs about naming and creating one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acta.provider.protocol import Provider
from acta_testing import LedgerLocation, ledger_location
from acta_testing.plugin import CONFORMANCE, SCHEDULES, chosen_provider
from acta_testing.schemas import LEDGER_TABLES

if TYPE_CHECKING:
    from acta.provider.testing import TestLedgers

__all__ = ["FreshDatabase", "Ledger"]

HERE = Path(__file__).parent
TABLES = LEDGER_TABLES
Params = Mapping[str, Any]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under conformance/ is a spec (the plugin counts and polices them). Specs pin
    what production does, so their hosts run declared schedules and acta's periodic system
    jobs (``acta_schedules``), which a user's test host leaves idle; a module about the host's
    own defaults says ``HOST_DEFAULTS = True`` to keep them."""
    mark = getattr(pytest.mark, CONFORMANCE)
    schedules = getattr(pytest.mark, SCHEDULES)
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(mark)
            module = getattr(item, "module", None)
            if not getattr(module, "HOST_DEFAULTS", False):
                item.add_marker(schedules)


@pytest.fixture(autouse=True)
def _provider_is_there(_acta_ledgers: TestLedgers) -> None:
    """A spec that needs no ledger still says which provider it ran on: without the server
    it skips (fails under CI=true) like the specs that do need one."""


class Ledger:
    """Direct access to one test's ledger, whatever the provider."""

    def __init__(self, location: LedgerLocation, ledgers: TestLedgers) -> None:
        self.location = location
        self.dialect = location.dialect
        self._operator = ledgers.operator(location)
        self._undo: list[str] = []

    # -- reading and writing ----------------------------------------------------------------

    def rows(self, sql: str, params: Params | None = None) -> list[tuple[Any, ...]]:
        return self._operator.rows(self.location.prepare(sql), params or {})

    def value(self, sql: str, params: Params | None = None) -> Any:
        [[found]] = self.rows(sql, params)
        return found

    def execute(self, sql: str, params: Params | None = None) -> int:
        """Run one statement in a transaction of its own; returns the number of rows changed."""
        return self._operator.execute(self.location.prepare(sql), params or {})

    def integrity_error(self) -> type[Exception]:
        """The driver's error for a write the schema's constraints refuse."""
        return self._operator.integrity_error

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
        self._undo.extend(self._operator.refuse_inserts(table, name, when, message))
        return self._operator.integrity_error

    def close(self) -> None:
        try:
            for statement in reversed(self._undo):
                self.execute(statement)
        finally:
            self._operator.close()


@pytest.fixture
def ledger(acta_provider: Provider, _acta_ledgers: TestLedgers) -> Iterator[Ledger]:
    found = Ledger(ledger_location(acta_provider), _acta_ledgers)
    yield found
    found.close()


class FreshDatabase:
    """A database of the chosen provider with no ledger of this test in it yet, for specs about
    naming, creating and migrating one. ``target`` is what ``Acta(...)`` takes (a SQLite path
    or the server DSN); schemas made through ``schema()`` are dropped when the test ends. The
    provider's test support does the work (acta.provider.testing.FreshDatabase)."""

    def __init__(self, dialect: str, ledgers: TestLedgers, folder: Path) -> None:
        self.dialect = dialect
        self._fresh = ledgers.fresh_database(folder)
        self.target = self._fresh.target

    def schema(self, name: str) -> str:
        """A schema name this test may create (on a server: unique, and dropped afterwards)."""
        return self._fresh.schema(name)

    def qualified(self, schema: str, name: str) -> str:
        """How this dialect names the ledger table ``name`` of ``schema`` in SQL."""
        return self._fresh.qualified(schema, name)

    def missing_tables(self, schema: str) -> set[str]:
        """The ledger tables ``schema`` lacks."""
        return set(TABLES) - self._fresh.tables(schema)

    def contents(self) -> frozenset[str]:
        """What exists now: the files of the test's folder on SQLite; on a server its schemas
        (other than the test and benchmark schemas concurrent sessions come and go with)."""
        return self._fresh.contents()

    def close(self) -> None:
        self._fresh.close()


@pytest.fixture
def fresh_database(
    request: pytest.FixtureRequest, _acta_ledgers: TestLedgers, tmp_path: Path
) -> Iterator[FreshDatabase]:
    found = FreshDatabase(chosen_provider(request.config), _acta_ledgers, tmp_path)
    yield found
    found.close()
