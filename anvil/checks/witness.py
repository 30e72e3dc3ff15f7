"""The witness table: where a workload's step bodies record each time they really ran.

The ledger knows when a step was recorded, not how often its body ran: a body that ran and
was killed before its result was stored leaves nothing in acta's tables. So the durable-step
checks (``durable_steps_once``, ``durable_amo_once``) also read a table the workload keeps
next to the ledger, ``{schema}.witness`` (``"<schema>".witness`` on PostgreSQL,
``<schema>_witness`` in a SQLite file), not part of acta's schema. Each run of a step body
inserts one row, in a transaction of its own that commits before the body returns, carrying
the job ref, the step name and the handler's ``ctx.execution``: the one fact that tells a
legitimate re-run (its earlier execution never recorded the step) from a forbidden one.

``create`` and ``drop`` make and remove the table; ``INSERT`` is the statement a body runs
(resolve it with ``LedgerLocation.prepare`` or ``prepare_insert``).
"""

from __future__ import annotations

from typing import Any

from acta.provider.statements import convert_params, replace_schema
from anvil.checks import Connection, qualifier

_DDL = {
    # id orders the rows as they were committed (an identity without cache); at is the
    # server's clock when the row was written, for the reader (the checks go by execution).
    "postgres": (
        "CREATE TABLE IF NOT EXISTS {schema}.witness ("
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " job_ref text NOT NULL, step text NOT NULL, execution bigint NOT NULL,"
        " pid integer NOT NULL, token text NOT NULL,"
        " at timestamptz NOT NULL DEFAULT clock_timestamp())"
    ),
    "sqlite": (
        "CREATE TABLE IF NOT EXISTS {schema}.witness ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " job_ref TEXT NOT NULL, step TEXT NOT NULL, execution INTEGER NOT NULL,"
        " pid INTEGER NOT NULL, token TEXT NOT NULL,"
        " at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')))"
    ),
}
_INDEX = "CREATE INDEX IF NOT EXISTS {name} ON {schema}.witness (job_ref, step, execution)"

INSERT = (
    "INSERT INTO {schema}.witness (job_ref, step, execution, pid, token) "
    "VALUES (:job_ref, :step, :execution, :pid, :token)"
)
"""One body run: job ref, step name, ``ctx.execution``, the process id, a fresh uuid."""


def _resolve(text: str, dialect: str, schema: str) -> str:
    style = "pyformat" if dialect == "postgres" else "named"
    sql, _ = convert_params(replace_schema(text, qualifier(dialect, schema)), style)
    return sql


def prepare_insert(dialect: str, schema: str = "acta") -> str:
    """``INSERT`` ready for the driver of ``dialect`` (psycopg's or sqlite3's placeholders)."""
    return _resolve(INSERT, dialect, schema)


def create(connection: Connection, dialect: str, schema: str = "acta") -> None:
    """Make the witness table (and its index) next to the ledger ``schema``; an autocommit
    connection, or one whose caller commits."""
    connection.execute(_resolve(_DDL[dialect], dialect, schema))
    # A PostgreSQL index name lives in the table's schema; SQLite's are file-wide.
    name = "witness_runs" if dialect == "postgres" else f"{schema}_witness_runs"
    connection.execute(_resolve(_INDEX.replace("{name}", name), dialect, schema))


def drop(connection: Connection, dialect: str, schema: str = "acta") -> None:
    """Remove the witness table, so the ledger is left with acta's tables only."""
    connection.execute(_resolve("DROP TABLE IF EXISTS {schema}.witness", dialect, schema))


def rows(connection: Connection, dialect: str, schema: str = "acta") -> list[tuple[Any, ...]]:
    """Every witness row as (job_ref, step, execution, pid, token), in commit order."""
    sql = "SELECT job_ref, step, execution, pid, token FROM {schema}.witness ORDER BY id"
    return [tuple(row) for row in connection.execute(_resolve(sql, dialect, schema)).fetchall()]
