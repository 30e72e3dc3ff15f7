"""Shared helpers for the integration tests: look at the ledger file the way an operator would.

The ``ledger`` fixture opens its own short-lived sqlite3 connections to the per-test ledger, so
assertions about rows (how many jobs, what the views show) never go through the code under
test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta.provider.protocol import Provider

PREFIX = "acta_"
TABLES = (
    "namespaces",
    "definitions",
    "jobs",
    "job_tags",
    "runtime",
    "events",
    "results",
    "workers",
)


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
def ledger(acta_provider: Provider) -> Ledger:
    path = getattr(acta_provider, "path", None)
    if not isinstance(path, Path):
        pytest.skip("these assertions read a SQLite ledger file directly")
    return Ledger(path)
