"""What both SQLite transports share: binding, row shaping, the statement runner, the savepoint
around a caller's transaction, and the reading of SQLite's error codes.

acta drives a verb on a sqlite3 connection of its own (``provider.py``) or, inside a caller's
transaction, on an aiosqlite connection (``aiosqlite_tx.py``). The work per statement is the
same; only the call into the driver differs (plain or awaited). So the runner is written once
as a generator of ``Call`` values, driven like a verb (``acta.provider.statements.op_calls``,
the seam through which a statement may also be a program of several calls): each transport
only knows how to perform a ``Call`` on its connection. This module imports neither
transport, so they import it and not each other.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from acta.clock import database_now_text
from acta.provider.statements import Call as Call
from acta.provider.statements import Calls, Statement, Statements
from acta.provider.statements import op_calls as generic_op_calls
from acta.provider.verb import Fetch, Op

SAVEPOINT = "acta_enqueue"
RELEASE = (f"RELEASE {SAVEPOINT}",)
UNDO = (f"ROLLBACK TO {SAVEPOINT}", f"RELEASE {SAVEPOINT}")


# -- values in and out ------------------------------------------------------------------------


def _bind(value: object) -> object:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetimes cannot be bound; use timezone-aware UTC")
        # Millisecond text sorts like the instant and matches strftime('%f'). isoformat pads
        # the year to four digits, which strftime("%Y") does not do below year 1000.
        utc = value.astimezone(UTC).replace(tzinfo=None)
        return utc.isoformat(" ", "milliseconds")
    return value


def _instant(text: object) -> object:
    if isinstance(text, str):
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    return text


def transaction_instant() -> str:
    """The one instant every statement of a new transaction binds as ``:now`` when the verb
    leaves it to the database (production clocks bind NULL). SQLite would otherwise read the
    OS clock once per statement, so one transaction's events could carry several instants;
    PostgreSQL's now() is the transaction's start, and SQLite now behaves the same."""
    # The OS clock as SQLite reads it, never Python's (which a test library may have frozen).
    return database_now_text()


def bind_params(params: Mapping[str, Any], now: str | None = None) -> dict[str, object]:
    """One statement's parameters as sqlite3 takes them (instants as millisecond text); a
    ``now`` left NULL becomes the transaction's instant ``now`` when one is given."""
    out = {k: _bind(v) for k, v in params.items()}
    if now is not None and "now" in out and out["now"] is None:
        out["now"] = now
    return out


def shape_rows(description: Any, raw_rows: list[Any], fetch: str) -> Any:
    """Rows as dicts, instants (columns ``at`` and ``*_at``) as aware UTC datetimes; the first
    row or None for ``fetch == "one"``."""
    names = [d[0] for d in description] if description else []
    timed = [i for i, n in enumerate(names) if n == "at" or n.endswith("_at")]
    out = []
    for raw in raw_rows:
        row = dict(zip(names, raw, strict=True))
        for i in timed:
            row[names[i]] = _instant(raw[i])
        out.append(row)
    if fetch == "one":
        return out[0] if out else None
    return out


# -- the statement runner ---------------------------------------------------------------------


def op_calls(statements: Statements, op: Op, now: str | None) -> Calls:
    """The driver calls that run ``op`` (a plain statement or a statement program: see
    ``acta.provider.statements.op_calls``), every statement binding ``now``."""

    def one(statement: Statement, fetch: Fetch, params: Any) -> Calls:
        return (yield from statement_calls(statement.sql, fetch, params, now))

    return (yield from generic_op_calls(statements, op, one))


def statement_calls(sql: str, fetch: Fetch, params: Any, now: str | None) -> Calls:
    """The driver calls of one statement, and its result as the verb expects it."""
    if fetch == "many":
        yield Call("many", sql, [bind_params(p, now) for p in params])
        return None
    bound = bind_params(params, now)
    if fetch == "rowcount":
        count = yield Call("rowcount", sql, bound)
        if count < 0:
            # Python's sqlite3 reports -1 for DML that starts with WITH; ask SQLite itself.
            _, rows = yield Call("rows", "SELECT changes()", {})
            count = rows[0][0]
        return count
    # All rows, even for "one": the statement must finish so RETURNING writes complete.
    description, rows = yield Call("rows", sql, bound)
    return shape_rows(description, list(rows), fetch)


def call_sqlite3(conn: sqlite3.Connection, call: Call) -> Any:
    """Perform ``call`` on a plain sqlite3 connection."""
    if call.kind == "many":
        conn.executemany(call.sql, call.params)
        return None
    cur = conn.execute(call.sql, call.params)
    try:
        if call.kind == "rowcount":
            return cur.rowcount
        return cur.description, cur.fetchall()
    finally:
        cur.close()


# -- a savepoint inside the caller's transaction ----------------------------------------------


def savepoint_enter(conn: Any) -> list[str]:
    """The statements that open acta's savepoint on a caller's connection (sqlite3 or
    aiosqlite). A savepoint keeps the batch atomic inside the caller's transaction, and makes it
    a transaction of its own when the caller had none open (autocommit connections)."""
    out = []
    if not conn.in_transaction and begins_implicitly(conn):
        # The driver opens a transaction before the first write and leaves it to the caller's
        # commit() or rollback(); the enqueue must belong to it too, even as that first write.
        out.append(f"BEGIN {conn.isolation_level or ''}".rstrip())
    out.append(f"SAVEPOINT {SAVEPOINT}")
    return out


def savepoint_undo(conn: Any) -> tuple[str, ...]:
    """The statements that take the batch back after a failure. SQLite itself rolls the whole
    transaction back on some errors (a full disk, an I/O error): then no savepoint is left."""
    return UNDO if conn.in_transaction else ()


def begins_implicitly(conn: Any) -> bool:
    """Whether the driver, not the caller, opens this connection's transactions."""
    legacy = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)
    mode = getattr(conn, "autocommit", legacy)  # Python 3.12+ sqlite3: True, False or legacy
    return mode is False or (mode == legacy and conn.isolation_level is not None)


# -- errors -----------------------------------------------------------------------------------

_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
# The I/O class of errors: the file, not the statement, is the trouble. Each maps to what the
# operator should do about it.
_IO_ADVICE = {
    sqlite3.SQLITE_READONLY: (
        "the database is read-only: make the file, its -wal and -shm files and their folder "
        "writable, and the file system mounted read-write"
    ),
    sqlite3.SQLITE_FULL: (
        "the disk is full: free space on the file system that holds the database and its -wal file"
    ),
    sqlite3.SQLITE_IOERR: "a disk I/O error: check the disk and the file system",
    sqlite3.SQLITE_CANTOPEN: (
        "the database file (or its -wal or -shm file) cannot be opened: check that the "
        "folder exists and is writable"
    ),
}


def _primary(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF  # extended codes keep the primary low byte


def is_busy(exc: sqlite3.Error) -> bool:
    """Another connection holds the lock (worth waiting for and trying again)."""
    code = _primary(exc)
    if code is not None and code != sqlite3.SQLITE_ERROR:
        return code in _BUSY
    text = str(exc).lower()  # errors raised by the driver itself carry no SQLite code
    return "locked" in text or "busy" in text


def io_trouble(exc: sqlite3.Error) -> str | None:
    """What is wrong with the file and what to do, for the I/O class of errors; None for the
    rest (a constraint, a bug), which stay as they are."""
    advice = _IO_ADVICE.get(_primary(exc) or 0)
    if advice is None:
        return None
    name = getattr(exc, "sqlite_errorname", None) or "SQLITE_ERROR"
    return f"{advice}; then try again ({name}: {exc})"
