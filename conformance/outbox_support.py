"""Shared by the outbox specs: an application database (a SQLite file of the test's own) with
the outbox in it, and ways to stage and inspect rows there as the application would.

The ledger is whichever provider the run chose; the source is always a SQLite file in
``tmp_path``, a database the ledger knows nothing about.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acta import Acta
from acta.outbox import OutboxSource, create_outbox


@dataclass
class Shop:
    """The application's own database, holding ``acta_outbox``."""

    path: Path

    @classmethod
    def create(cls, folder: Path) -> Shop:
        shop = cls(folder / "shop.sqlite3")
        with sqlite3.connect(shop.path) as conn:
            create_outbox(conn)
            conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        return shop

    def source(self, **options: Any) -> OutboxSource:
        return OutboxSource(url=str(self.path), **options)

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path)

    def stage(self, app: Acta, job: str, input: object = None, **options: Any) -> int:
        """Stage one request in its own committed transaction, next to an order row."""
        with self.connect() as conn:
            conn.execute("INSERT INTO orders DEFAULT VALUES")
            return app.add_to_outbox(job, input, connection=conn, **options)

    def stage_raw(self, **values: Any) -> int:
        """Write a row the way some other program (or another version of the app) might:
        straight into the table, bypassing add_to_outbox's checks. Any column may be given,
        with a value of any type SQLite stores (a text in a timestamp column, say)."""
        row = {
            "namespace": "default",
            "job_name": "ship",
            "input_codec": 1,
            "input": b"1",
            "priority": 0,
            "tags": "[]",
            "deadline_strict": 1,
            "staged_at": "2026-01-01 00:00:00.000",
            "lane": None,
            **values,
        }
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        with self.connect() as conn:
            cursor = conn.execute(f"INSERT INTO acta_outbox ({columns}) VALUES ({marks})", row)
            return int(cursor.lastrowid or 0)

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            return conn.execute(sql, params).fetchall()

    def staged(self) -> list[int]:
        return [r[0] for r in self.rows("SELECT id FROM acta_outbox ORDER BY id")]

    def quarantined(self) -> dict[int, str]:
        found = self.rows(
            "SELECT outbox_id, reason FROM acta_outbox_quarantine WHERE decided_at IS NULL"
        )
        return {row: reason for row, reason in found}
