"""How a handler in the lab app leaves its witness rows, each committed at once.

The process keeps one connection of its own to the ledger's database (not acta's), in
autocommit mode, shared by its executor threads under a lock (the rows are tiny, and one
connection per thread would take dozens of server sessions for a fleet), so a row is durable
before the handler goes on: if the process is killed a moment later, the run is still counted.
``run`` records a handler run (job ref, ``ctx.execution``) in ``handler_runs``; ``record`` a
durable step body's run in the witness table (job ref, step name, ``ctx.execution``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from typing import Any

from acta.provider.statements import convert_params, replace_schema
from anvil.certify.ledger import RUN_INSERT
from anvil.checks import qualifier
from anvil.checks import witness as witnesses


class Sink:
    """Writes witness rows for the ledger at ``database`` (a SQLite path or a PostgreSQL DSN)."""

    def __init__(self, dialect: str, database: str, schema: str) -> None:
        self.dialect = dialect
        self.database = database
        self.insert = witnesses.prepare_insert(dialect, schema)
        style = "pyformat" if dialect == "postgres" else "named"
        self.run_insert, _ = convert_params(
            replace_schema(RUN_INSERT, qualifier(dialect, schema)), style
        )
        self._lock = threading.Lock()
        self._conn: Any = None

    def _connection(self) -> Any:
        if self._conn is None:
            if self.dialect == "postgres":
                import psycopg

                self._conn = psycopg.connect(self.database, autocommit=True)
            else:
                self._conn = sqlite3.connect(
                    self.database, isolation_level=None, timeout=60, check_same_thread=False
                )
        return self._conn

    def run(self, ctx: Any) -> None:
        """Record that this handler run (``ctx``: its job context) has begun."""
        row = {"job_ref": str(ctx.job), "execution": ctx.execution, "pid": os.getpid()}
        self._write(self.run_insert, row)

    def record(self, ref: object, step: str, execution: int, token: str | None = None) -> str:
        """Leave one step-body witness row; its token (``token``, else a fresh uuid) is
        returned for the caller's use (a handler that received a value from outside, such as
        a signal's payload, records that value, so a check can compare it with what was
        sent)."""
        token = token or str(uuid.uuid4())
        row = {
            "job_ref": str(ref),
            "step": step,
            "execution": execution,
            "pid": os.getpid(),
            "token": token,
        }
        self._write(self.insert, row)
        return token

    def close(self) -> None:
        """Close the connection (a later write opens another)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _write(self, sql: str, row: dict[str, Any]) -> None:
        with self._lock:
            try:
                self._connection().execute(sql, row)
            except Exception:
                # A cut connection (a terminated backend, a server restart): open a fresh one
                # and write again once; a second failure fails the handler run (retried).
                self._conn = None
                self._connection().execute(sql, row)


class NullSink(Sink):
    """For the producer, whose definitions never run a handler."""

    def __init__(self) -> None:
        pass

    def run(self, ctx: Any) -> None:
        raise AssertionError("the producer never runs handlers")

    def record(self, ref: object, step: str, execution: int, token: str | None = None) -> str:
        raise AssertionError("the producer never runs handlers")
