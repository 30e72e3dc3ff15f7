"""PostgreSQL as an outbox source (acta.provider.outbox): a schema of the application's database.

The outbox table goes into a schema of the caller's choice, ``public`` by default. psycopg binds
instants as timestamptz and lists as arrays, so values go as they are; a timestamptz Python
cannot hold (``infinity``, years past 9999) is read as its text, for the relay to quarantine
that one row instead of failing the batch. The relay's claims are serialised by its ``lock``
statement (an advisory lock), so a plain ``BEGIN`` opens its transactions.
"""

from __future__ import annotations

from functools import cache
from typing import Any


class PostgresOutbox:
    name = "postgres"
    default_schema: str | None = "public"
    schemas = True
    begin = "BEGIN"
    stage_returns_id = True  # INSERT ... RETURNING id

    def driver(self, conn: object) -> bool | None:
        for kind in type(conn).__mro__:
            if kind.__module__.partition(".")[0] != "psycopg":
                continue
            if kind.__name__ in ("Connection", "AsyncConnection"):
                return kind.__name__ == "AsyncConnection"
        return None

    def connect(self, url: str) -> Any:
        import psycopg

        return psycopg.connect(url, autocommit=True)

    def adopt(self, conn: Any) -> None:
        conn.autocommit = True
        conn.adapters.register_loader("timestamptz", _lenient_loader())

    def bind(self, value: Any) -> Any:
        return value  # psycopg binds lists as arrays, datetimes as timestamptz

    def execute(self, conn: Any, sql: str, params: Any = None) -> Any:
        return conn.execute(sql) if params is None else conn.execute(sql, params)


@cache
def _lenient_loader() -> type:
    from psycopg import DataError
    from psycopg.types.datetime import TimestamptzLoader

    class Lenient(TimestamptzLoader):
        def load(self, data: Any) -> Any:
            try:
                return super().load(data)
            except DataError:
                return bytes(data).decode()

    return Lenient


OUTBOX = PostgresOutbox()
