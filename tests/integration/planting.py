"""The planters the SQL-check tests share: a connection of the test's own to the ledger, with
the tables a family of checks reads made beside it and dropped afterwards."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime

from acta.provider.protocol import Provider
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
