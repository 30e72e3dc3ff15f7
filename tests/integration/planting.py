"""The planters the SQL-check tests share: a connection of the test's own to the ledger, with
the tables a family of checks reads made beside it and dropped afterwards."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import datetime

from acta.provider.protocol import Provider
from acta.provider.testing import LedgerLocation
from acta_testing.schemas import ledger_location
from anvil.certify.ledger import create_tables, drop_tables
from anvil.checks import witness as witnesses
from anvil.checks.plant import Planter


@contextlib.contextmanager
def certify_planter(provider: Provider, base: datetime) -> Iterator[Planter]:
    """With the certification's tables (expected jobs, witnesses, fault log)."""
    found = Planter(ledger_location(provider), base)
    create_tables(found.conn, found.location)
    try:
        yield found
    finally:
        drop_tables(found.conn, found.location)
        found.close()


@contextlib.contextmanager
def witness_planter(provider: Provider, base: datetime) -> Iterator[Planter]:
    """With only the witness table that handlers write their side effects to."""
    found = Planter(ledger_location(provider), base)
    witnesses.create(found.conn, found.dialect, found.location.schema)
    try:
        yield found
    finally:
        witnesses.drop(found.conn, found.dialect, found.location.schema)
        found.close()


def write_witness(location: LedgerLocation, ref: str, step: str, execution: int) -> None:
    """What a handler does to witness a side effect: one witness row, on a connection of its
    own, committed before it returns."""
    row = {"job_ref": ref, "step": step, "execution": execution, "pid": 1, "token": step}
    sql = witnesses.prepare_insert(location.dialect, location.schema)
    if location.dialect == "sqlite":
        lite = sqlite3.connect(str(location.path), isolation_level=None, timeout=10)
        try:
            lite.execute(sql, row)
        finally:
            lite.close()
    else:
        import psycopg

        with psycopg.connect(str(location.dsn), autocommit=True) as conn:
            conn.execute(sql, row)
