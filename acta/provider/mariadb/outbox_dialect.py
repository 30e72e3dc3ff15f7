"""MariaDB as an outbox source (acta.provider.outbox): the application's own MariaDB database.

The outbox tables go into the connection's database, or into the database named as the schema.
Instants are bound as naive UTC ``DATETIME(3)`` values, lists as JSON text (the relay reads a
batch of ids back with ``JSON_TABLE``), booleans as 0 and 1. A relay's claims are serialised by
its ``lock`` statement, which locks the one row of the outbox's claim lock table.

PyMySQL connections run statements through cursors; ``execute`` gives the outbox one cursor
per statement, holding its rows and the new row's id (``lastrowid``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from acta.errors import ConfigurationError


class MariadbOutbox:
    name = "mariadb"
    default_schema: str | None = None
    schemas = True
    begin = "BEGIN"
    stage_returns_id = False  # the cursor's lastrowid holds the AUTO_INCREMENT id

    def driver(self, conn: object) -> bool | None:
        for kind in type(conn).__mro__:
            if kind.__module__.partition(".")[0] == "pymysql" and kind.__name__ == "Connection":
                return False
        return None

    def connect(self, url: str) -> Any:
        import pymysql

        from acta.provider.mariadb.connect import Target

        target = Target.parse(url)
        try:
            return pymysql.connect(**(target.connect_kwargs(10) | {"autocommit": True}))
        except pymysql.err.Error as exc:
            raise ConfigurationError(str(target.unavailable(exc))) from None

    def adopt(self, conn: Any) -> None:
        from pymysql.constants import FIELD_TYPE

        conn.autocommit(True)  # BEGIN is the relay's to issue
        # Instants come back aware (UTC), and one PyMySQL cannot read stays its text, for the
        # relay to quarantine that row alone.
        conn.decoders[FIELD_TYPE.DATETIME] = _instant

    def execute(self, conn: Any, sql: str, params: Any = None) -> Any:
        """Run one statement on ``conn``; the cursor answers its rows and ``lastrowid``."""
        cursor = conn.cursor()
        cursor.execute(sql, params)
        return cursor

    def bind(self, value: Any) -> Any:
        if isinstance(value, datetime):
            utc = value.astimezone(UTC).replace(tzinfo=None)
            return utc.replace(microsecond=utc.microsecond // 1000 * 1000)
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, list):
            return json.dumps(value)
        return value


def _instant(text: str | bytes) -> datetime | str:
    value = text.decode() if isinstance(text, bytes) else text
    try:
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    except ValueError:
        return value


OUTBOX = MariadbOutbox()
