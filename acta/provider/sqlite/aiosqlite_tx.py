"""Enqueue inside a caller's aiosqlite transaction (SQLAlchemy's async SQLite driver).

aiosqlite keeps its sqlite3 connection on a thread of its own, so acta cannot drive a verb on
that connection from here. Each statement goes through aiosqlite's public async API instead,
inside a savepoint of the caller's transaction, as the sync path does on a sqlite3 connection:
the caller's commit or rollback decides for the job too. The runner itself is the one in
``transport``; this module only performs its calls with ``await``.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, TypeVar

from acta.errors import DatabaseUnavailableError
from acta.provider.sqlite.transport import (
    RELEASE,
    Call,
    io_trouble,
    op_calls,
    savepoint_enter,
    savepoint_undo,
    transaction_instant,
)
from acta.provider.verb import Op, drive_async

if TYPE_CHECKING:
    from acta.provider.protocol import VerbFactory
    from acta.provider.statements import Statements

T = TypeVar("T")


def is_aiosqlite(conn: object) -> bool:
    """Whether ``conn`` is an aiosqlite connection (without importing aiosqlite)."""
    kind = type(conn)
    return kind.__module__.startswith("aiosqlite") and kind.__name__ == "Connection"


async def run_in_aiosqlite(
    statements: Statements, make: VerbFactory[T], conn: Any, where: str
) -> T:
    """Run the verb ``make()`` in a savepoint of the caller's transaction on ``conn``; an I/O
    failure of the file (``where``) is a DatabaseUnavailableError, as on acta's own path."""
    for sql in savepoint_enter(conn):
        await conn.execute(sql)
    now = transaction_instant()

    async def run_op(op: Op) -> Any:
        return await drive_async(op_calls(statements, op, now), lambda call: _call(conn, call))

    try:
        result = await drive_async(make(), run_op)
    except BaseException as exc:
        for sql in savepoint_undo(conn):
            await conn.execute(sql)
        trouble = io_trouble(exc) if isinstance(exc, sqlite3.Error) else None
        if trouble is not None:
            raise DatabaseUnavailableError(f"cannot write to {where}: {trouble}") from exc
        raise
    for sql in RELEASE:
        await conn.execute(sql)
    return result


async def _call(conn: Any, call: Call) -> Any:
    if call.kind == "many":
        await conn.executemany(call.sql, call.params)
        return None
    cursor = await conn.execute(call.sql, call.params)
    try:
        if call.kind == "rowcount":
            return cursor.rowcount
        return cursor.description, list(await cursor.fetchall())
    finally:
        await cursor.close()
