"""What a provider offers acta's test machinery: fresh ledgers, and a way in beside acta.

The pytest plugin (acta_testing.plugin) and the conformance suite never branch on a dialect:
they ask the chosen provider's registry entry for its ``TestSupport`` (the ``SUPPORT`` value of
the module the entry names) and use the protocols below. Nothing here imports a driver or
pytest; the support modules import their driver when first used.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from acta.provider.protocol import Provider
from acta.provider.statements import convert_params, replace_schema

Params = Mapping[str, Any]

# The ledger's own tables (codes and migrations aside), for tests that count or snapshot rows.
LEDGER_TABLES = (
    "namespaces",
    "definitions",
    "jobs",
    "job_tags",
    "runtime",
    "events",
    "results",
    "workers",
)


_SESSION: weakref.WeakSet[Provider] = weakref.WeakSet()


def keep_for_session(provider: Provider) -> Provider:
    """Mark ``provider`` as one the test ledgers keep from test to test (its pools stay open):
    a test host closing must leave its connections alone."""
    _SESSION.add(provider)
    return provider


def kept_for_session(provider: Provider) -> bool:
    """Whether the test ledgers keep ``provider`` open for the session (``keep_for_session``)."""
    return provider in _SESSION


class ProviderUnavailable(Exception):
    """The provider cannot be used for this test session (driver missing, server down)."""


@dataclass(frozen=True, slots=True)
class LedgerLocation:
    """Where a provider keeps its ledger: enough to open a connection of one's own to it.

    ``qualifier`` is what the ``{schema}.`` token of acta's SQL files stands for in this ledger
    (``acta_`` on SQLite, ``"acta".`` on PostgreSQL); ``path`` is the SQLite file and ``dsn``
    the server DSN (it may hold a password: do not print it); ``paramstyle`` is the driver's
    placeholder style ("named" for sqlite3, "pyformat" for psycopg).
    """

    dialect: str
    schema: str
    qualifier: str
    path: Path | None = None
    dsn: str | None = None
    paramstyle: str = "named"

    def prepare(self, text: str) -> str:
        """``text`` written once for every provider, made ready for this ledger's driver: each
        ``{schema}.`` token resolved and each ``:name`` placeholder in the driver's style
        (where pyformat doubles a literal ``%``)."""
        sql, _ = convert_params(replace_schema(text, self.qualifier), self.paramstyle)
        return sql


class Operator(Protocol):
    """A connection of the test's own to one ledger, as an operator would open it. Text given
    to it is already prepared (``LedgerLocation.prepare``)."""

    integrity_error: type[Exception]
    """The driver's error for a write the schema's constraints refuse."""

    def rows(self, text: str, params: Params) -> list[tuple[Any, ...]]: ...

    def execute(self, text: str, params: Params) -> int:
        """Run one statement in a transaction of its own; the number of rows changed."""
        ...

    def refuse_inserts(self, table: str, name: str, when: str, message: str) -> list[str]:
        """Install trigger ``name`` refusing rows inserted into the ledger table ``table`` when
        ``when`` (SQL over ``NEW``) holds, with ``message``; return the statements that undo
        it (in ``{schema}.`` form, to prepare and run through ``execute`` when the test
        ends)."""
        ...

    def close(self) -> None: ...


class FreshDatabase(Protocol):
    """A database of the provider with no ledger of this test in it yet. ``target`` is what
    ``Acta(...)`` takes; schemas made through ``schema()`` are removed when the test ends."""

    target: str

    def schema(self, name: str) -> str:
        """A schema name this test may create (unique on a shared server)."""
        ...

    def qualified(self, schema: str, name: str) -> str:
        """How this dialect names the ledger table ``name`` of ``schema`` in SQL."""
        ...

    def tables(self, schema: str) -> set[str]:
        """The ledger tables ``schema`` has."""
        ...

    def contents(self) -> frozenset[str]:
        """What exists now (files of the test's folder, or the server's schemas), to show that
        naming a ledger created nothing."""
        ...

    def close(self) -> None: ...


class TestLedgers(Protocol):
    """One test session's source of ledgers (a template file, a pool of schemas)."""

    def ledger(self, folder: Path) -> AbstractContextManager[Provider]:
        """A provider on a fresh, empty, migrated ledger of its own for the block; ``folder``
        is the test's own temporary folder."""
        ...

    def operator(self, location: LedgerLocation) -> Operator: ...

    def keep(self, provider: Provider) -> str:
        """Keep the ledger of ``provider`` (one ``ledger`` made) after its block: never emptied,
        handed on or dropped, for a failed test's author to read (``--acta-keep``). Returns
        where it is, without a password. Optional: the plugin says when a provider lacks it."""
        ...

    def fresh_database(self, folder: Path) -> FreshDatabase: ...

    def finish(self) -> list[str]:
        """Release everything; return what tests left behind, for the session to fail on."""
        ...


class TestSupport(Protocol):
    """A provider's test support, the ``SUPPORT`` value of the module its entry names."""

    server: bool
    """The provider needs a database server (reached through ``--acta-dsn``): without one its
    tests skip, and with ``CI=true`` such a skip fails."""

    def open_session(self, dsn: str, worker: str, base: Path) -> TestLedgers:
        """The ledgers of one test process (``worker`` is the xdist worker id, ``base`` its
        temporary folder); ProviderUnavailable when it cannot run here."""
        ...

    def location(self, provider: Provider) -> LedgerLocation: ...

    def snapshot_dump(self, dsn: str) -> str:
        """Migrate a throwaway ledger with the default schema name, dump its catalog
        (``provider.dump_schema()``) and remove it again (acta.provider.snapshot)."""
        ...

    def caller_transaction(self, provider: Provider) -> AbstractContextManager[Any]:
        """A driver connection of the application's own to ``provider``'s database, inside an
        open transaction that commits when the block ends: what an application hands to
        ``enqueue(..., tx=...)`` (the transactional-enqueue specs run inside it)."""
        ...
