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

from acta.provider.statements import parse_blocks
from anvil.checks import Connection, dialect_file, resolve

INSERT = (
    "INSERT INTO {schema}.witness (job_ref, step, execution, pid, token) "
    "VALUES (:job_ref, :step, :execution, :pid, :token)"
)
"""One body run: job ref, step name, ``ctx.execution``, the process id, a fresh uuid."""


def _resolve(text: str, dialect: str, schema: str) -> str:
    sql, _ = resolve(text, dialect, schema)
    return sql


def _ddl(dialect: str) -> dict[str, str]:
    """The dialect's ``witness_table`` and ``witness_index`` statements (its provider folder's
    ``checks/witness.sql``)."""
    found = dialect_file(dialect, "witness.sql")
    return parse_blocks(found.read_text("utf-8"), f"{dialect}/checks/witness.sql")


def prepare_insert(dialect: str, schema: str = "acta") -> str:
    """``INSERT`` ready for the driver of ``dialect`` (its entry's paramstyle)."""
    return _resolve(INSERT, dialect, schema)


def create(connection: Connection, dialect: str, schema: str = "acta") -> None:
    """Make the witness table (and its index) next to the ledger ``schema``; an autocommit
    connection, or one whose caller commits."""
    ddl = _ddl(dialect)
    connection.execute(_resolve(ddl["witness_table"], dialect, schema))
    connection.execute(_resolve(ddl["witness_index"], dialect, schema))


def drop(connection: Connection, dialect: str, schema: str = "acta") -> None:
    """Remove the witness table, so the ledger is left with acta's tables only."""
    connection.execute(_resolve("DROP TABLE IF EXISTS {schema}.witness", dialect, schema))


def rows(connection: Connection, dialect: str, schema: str = "acta") -> list[tuple[Any, ...]]:
    """Every witness row as (job_ref, step, execution, pid, token), in commit order."""
    sql = "SELECT job_ref, step, execution, pid, token FROM {schema}.witness ORDER BY id"
    return [tuple(row) for row in connection.execute(_resolve(sql, dialect, schema)).fetchall()]
