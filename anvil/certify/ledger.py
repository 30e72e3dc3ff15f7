"""The ledger a certification run writes to, and the two tables it keeps beside acta's.

A run gets a ledger of its own: a fresh SQLite file, or a fresh PostgreSQL schema (named for
the run, dropped afterwards unless asked to keep it). Next to acta's tables the run keeps:

- the witness table (``anvil.checks.witness``): each durable step body run leaves a row;
- the handler-runs table, ``{schema}.handler_runs``: each handler run leaves a row (job ref,
  ``ctx.execution``, pid) as its first act, so a duplicate execution is counted from rows
  rather than guessed;
- the expected table, ``{schema}.expected``: one row per job the producer enqueued (or tried
  to, inside a transaction it then rolled back), naming its workload and the terminal status
  it must end in. The loss and outcome checks join it with the ledger.

``Ledger`` also holds a connection of the run's own (never acta's) for the fault injector's
queries and the checks.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acta import Acta
from acta.provider.testing import LedgerLocation
from anvil.checks import qualifier
from anvil.checks import witness as witnesses

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
GONE = 0
"""The ``expected.outcome`` of a job that must not exist (its enqueue was rolled back)."""

_TABLES = {
    "postgres": (
        "CREATE TABLE IF NOT EXISTS {schema}.expected ("
        " job_ref text PRIMARY KEY, workload text NOT NULL, outcome smallint NOT NULL)",
        "CREATE TABLE IF NOT EXISTS {schema}.handler_runs ("
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, job_ref text NOT NULL,"
        " execution bigint NOT NULL, pid integer NOT NULL)",
        "CREATE INDEX IF NOT EXISTS handler_runs_by_job ON {schema}.handler_runs"
        " (job_ref, execution)",
    ),
    "sqlite": (
        "CREATE TABLE IF NOT EXISTS {schema}.expected ("
        " job_ref TEXT PRIMARY KEY, workload TEXT NOT NULL, outcome INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS {schema}.handler_runs ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT, job_ref TEXT NOT NULL,"
        " execution INTEGER NOT NULL, pid INTEGER NOT NULL)",
        "CREATE INDEX IF NOT EXISTS {schema}.handler_runs_by_job ON {schema}.handler_runs"
        " (job_ref, execution)",
    ),
}
RUN_INSERT = (
    "INSERT INTO {schema}.handler_runs (job_ref, execution, pid) "
    "VALUES (:job_ref, :execution, :pid)"
)


@dataclass
class Ledger:
    """Where the run's ledger is, and a connection of the run's own to it."""

    database: str
    location: LedgerLocation
    conn: Any
    owned: bool = True  # the run made this PostgreSQL schema (and drops it afterwards)

    @property
    def dialect(self) -> str:
        return self.location.dialect

    @property
    def schema(self) -> str:
        return self.location.schema

    def rows(self, text: str, **params: Any) -> list[tuple[Any, ...]]:
        """Rows of ``text`` (``{schema}.`` tokens, ``:name`` parameters)."""
        cursor = self.conn.execute(self.location.prepare(text), params)
        return list(cursor.fetchall()) if cursor.description else []

    def value(self, text: str, **params: Any) -> Any:
        [[found]] = self.rows(text, **params)
        return found

    def expect(self, workload: str, refs: Iterable[object], outcome: int) -> None:
        """Record that each of ``refs`` must end in status ``outcome`` (GONE: must not exist)."""
        sql = self.location.prepare(
            "INSERT INTO {schema}.expected (job_ref, workload, outcome) "
            "VALUES (:ref, :workload, :outcome)"
        )
        params = [{"ref": str(r), "workload": workload, "outcome": outcome} for r in refs]
        if self.dialect == "postgres":
            with self.conn.cursor() as cursor:
                cursor.executemany(sql, params)
        else:
            self.conn.executemany(sql, params)

    def close(self) -> None:
        self.conn.close()


def open_ledger(
    provider: str, work: Path, dsn: str | None = None, schema: str | None = None
) -> Ledger:
    """A migrated, empty ledger with the witness and expected tables: a SQLite file under
    ``work``, or on the PostgreSQL server at ``dsn`` a new schema, or ``schema`` when given
    (one that exists, migrated and empty, such as a test session's)."""
    if provider == "sqlite":
        path = work / "ledger.sqlite3"
        path.unlink(missing_ok=True)
        app = Acta(str(path), apply_migrations=True)
        app.migrate()
        app.close()
        location = LedgerLocation("sqlite", "acta", qualifier("sqlite", "acta"), path=path)
        # A long busy timeout: workers (and the lock-holding fault) hold the write lock.
        conn = sqlite3.connect(path, isolation_level=None, timeout=60)
        ledger = Ledger(str(path), location, conn)
    elif provider == "postgres":
        import psycopg

        server = dsn or DEFAULT_DSN
        owned = schema is None
        if schema is None:
            schema = f"certify_{uuid.uuid4().hex[:12]}"
            app = Acta(server, schema=schema, apply_migrations=True)
            app.migrate()
            app.close()
        location = LedgerLocation(
            "postgres", schema, qualifier("postgres", schema), dsn=server, paramstyle="pyformat"
        )
        ledger = Ledger(server, location, psycopg.connect(server, autocommit=True), owned)
    else:
        raise ValueError(f"provider {provider!r} is not one of sqlite, postgres")
    create_tables(ledger.conn, ledger.location)
    return ledger


def create_tables(conn: Any, location: LedgerLocation) -> None:
    """Make the witness, expected and handler-runs tables beside the ledger at ``location``
    (``conn``: an autocommit connection of one's own to it)."""
    witnesses.create(conn, location.dialect, location.schema)
    for ddl in _TABLES[location.dialect]:
        conn.execute(location.prepare(ddl))


def drop_tables(conn: Any, location: LedgerLocation) -> None:
    """Remove them again, so the ledger is left with acta's tables only."""
    witnesses.drop(conn, location.dialect, location.schema)
    for table in ("expected", "handler_runs"):
        conn.execute(location.prepare(f"DROP TABLE IF EXISTS {{schema}}.{table}"))


def reconnect(ledger: Ledger) -> None:
    """A fresh connection of the run's own (after a PostgreSQL restart cut the old one)."""
    if ledger.dialect != "postgres":
        return
    import psycopg

    try:
        ledger.conn.close()
    finally:
        ledger.conn = psycopg.connect(ledger.database, autocommit=True)


def drop(ledger: Ledger) -> None:
    """Remove a PostgreSQL run's schema, or only the run's own tables from a schema it was
    given (a SQLite file goes with the run's working folder)."""
    if ledger.dialect != "postgres":
        return
    if ledger.owned:
        ledger.conn.execute(f'DROP SCHEMA IF EXISTS "{ledger.schema}" CASCADE')
    else:
        drop_tables(ledger.conn, ledger.location)
