"""Shared by the tenant and retired-enqueue specs: a transaction of the application's own on
the ledger's database, inside which an enqueue runs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from acta.provider.protocol import Provider
from acta_testing.schemas import ledger_location


@contextmanager
def caller_transaction(provider: Provider) -> Iterator[Any]:
    """A connection of the application's own, in an open transaction that commits at the end
    (the enqueue under test runs inside it)."""
    where = ledger_location(provider)
    if where.dialect == "sqlite":
        conn = sqlite3.connect(str(where.path), isolation_level=None)
        conn.execute("BEGIN")
        try:
            yield conn
            conn.execute("COMMIT")
        finally:
            conn.close()
    else:
        import psycopg

        assert where.dsn is not None
        with psycopg.connect(where.dsn) as pg:
            yield pg
            pg.commit()
