"""Enqueue inside a caller's aiosqlite transaction (SQLAlchemy's async SQLite driver).

aiosqlite keeps its sqlite3 connection on a thread of its own, so acta cannot drive a verb on
that connection from here. Each statement goes through aiosqlite's public async API instead,
inside a savepoint of the caller's transaction, as the sync path does on a sqlite3 connection:
the caller's commit or rollback decides for the job too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from acta.provider.verb import Op, drive_async

if TYPE_CHECKING:
    from acta.provider.protocol import VerbFactory
    from acta.provider.statements import Statements

T = TypeVar("T")
_SAVEPOINT = "acta_enqueue"


def is_aiosqlite(conn: object) -> bool:
    """Whether ``conn`` is an aiosqlite connection (without importing aiosqlite)."""
    kind = type(conn)
    return kind.__module__.startswith("aiosqlite") and kind.__name__ == "Connection"


async def run_in_aiosqlite(statements: Statements, make: VerbFactory[T], conn: Any) -> T:
    if not conn.in_transaction and conn.isolation_level is not None:
        # The driver opens transactions before the first write and the caller's commit or
        # rollback closes them; the enqueue must belong to that transaction even when it is
        # its first write.
        await conn.execute(f"BEGIN {conn.isolation_level or ''}".rstrip())
    await conn.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        result = await drive_async(make(), lambda op: _run_op(statements, conn, op))
    except BaseException:
        await conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
        await conn.execute(f"RELEASE {_SAVEPOINT}")
        raise
    await conn.execute(f"RELEASE {_SAVEPOINT}")
    return result


async def _run_op(statements: Statements, conn: Any, op: Op) -> Any:
    from acta.provider.sqlite.provider import bind_params, shape_rows

    sql = statements[op.statement].sql
    if op.fetch == "many":
        await conn.executemany(sql, [bind_params(p) for p in op.params])
        return None
    cursor = await conn.execute(sql, bind_params(op.params))
    try:
        if op.fetch == "rowcount":
            count = cursor.rowcount
            if count < 0:  # sqlite3 reports -1 for DML that starts with WITH
                changes = await conn.execute("SELECT changes()")
                count = (await changes.fetchone())[0]
            return count
        return shape_rows(cursor.description, list(await cursor.fetchall()), op.fetch)
    finally:
        await cursor.close()
