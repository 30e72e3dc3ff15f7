"""SQLite as an outbox source (acta.provider.outbox): the application's own SQLite file.

The outbox table sits in the main database (SQLite has no schemas). Instants are stored as UTC
text with milliseconds, the ledger's own spelling (it sorts by time), lists as JSON text (the
relay reads a batch of ids back with ``json_each``), booleans as 0 and 1. A relay transaction
takes the write lock at once (``BEGIN IMMEDIATE``), which serialises two relays' claims.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acta.errors import ConfigurationError
from acta.provider.sqlite import sqlite_path


def instant_text(value: datetime) -> str:
    """UTC text with milliseconds: the outbox's (and the ledger's) spelling on SQLite."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "milliseconds")


class SqliteOutbox:
    name = "sqlite"
    default_schema: str | None = None
    schemas = False
    begin = "BEGIN IMMEDIATE"
    stage_returns_id = False  # sqlite3 reports the new row's id as the cursor's lastrowid

    def driver(self, conn: object) -> bool | None:
        # The class and its bases are looked at, so an application's subclass counts too.
        for kind in type(conn).__mro__:
            package = kind.__module__.partition(".")[0]
            if package == "sqlite3":
                return False
            if package == "aiosqlite" and kind.__name__ == "Connection":
                return True
        return None

    def connect(self, url: str) -> sqlite3.Connection:
        path = sqlite_path(url) or url
        if path != ":memory:" and not Path(path).is_file():
            # Connecting would create an empty file, and the relay would fail on it later.
            raise ConfigurationError(
                f"no outbox source database at {path!r}: the file does not exist "
                "(create the outbox there with `acta outbox schema --dialect sqlite`)"
            )
        return sqlite3.connect(path, timeout=30)

    def adopt(self, conn: Any) -> None:
        conn.isolation_level = None  # BEGIN IMMEDIATE is the relay's to issue

    def bind(self, value: Any) -> Any:
        if isinstance(value, datetime):
            return instant_text(value)
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, list):
            return json.dumps(value)
        return value

    def execute(self, conn: Any, sql: str, params: Any = None) -> Any:
        return conn.execute(sql) if params is None else conn.execute(sql, params)


OUTBOX = SqliteOutbox()
