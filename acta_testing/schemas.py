"""Throwaway ledgers for tests, and where a provider keeps its ledger.

Each provider's test support (named by its registry entry, acta.provider.registry) makes the
ledgers: SQLite copies a template file migrated once per test process
(acta.provider.sqlite.testing); PostgreSQL hands out a pool of migrated schemas emptied between
tests (acta.provider.postgres.testing, ``PostgresSchemas``). This module keeps the names tests
and the noxfile import, and ``ledger_location``, which tells a test where a provider keeps its
ledger so the test can read it through a connection of its own, as an operator would.
"""

from __future__ import annotations

from acta.provider import registry
from acta.provider.postgres.testing import (
    PostgresSchemas,
    PostgresUnavailable,
    postgres_unavailable,
)
from acta.provider.protocol import Provider
from acta.provider.sqlite.testing import sqlite_copy, sqlite_template
from acta.provider.testing import LEDGER_TABLES, LedgerLocation

__all__ = [
    "LEDGER_TABLES",
    "LedgerLocation",
    "PostgresSchemas",
    "PostgresUnavailable",
    "ledger_location",
    "postgres_unavailable",
    "sqlite_copy",
    "sqlite_template",
]


def ledger_location(provider: Provider) -> LedgerLocation:
    """Where ``provider`` (the ``acta_provider`` fixture, say) keeps its ledger."""
    try:
        entry = registry.entry(provider.dialect)
    except Exception:
        raise TypeError(f"no direct access to a {provider.dialect} ledger") from None
    return entry.support().location(provider)
