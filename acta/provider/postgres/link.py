"""A PostgreSQL connection as acta's transaction logic sees it: the one place that differs
between psycopg's sync and async connections.

The transaction and retry logic (``acta.provider.postgres.transaction``) is written once, as
coroutines over a ``Link``. An ``AsyncLink`` awaits psycopg's async connection; a ``SyncLink``
calls the sync one from coroutines that never suspend, so the sync provider runs the very same
logic to completion without an event loop (``finish``). Only these thin adapters come in two.

Statements run through psycopg's raw cursors with ``$n`` placeholders
(``Statement.numbered``): psycopg then sends acta's SQL as it is instead of parsing its
``%(name)s`` placeholders in Python, which it does on every call for texts over 4 KiB.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from acta.provider.postgres.arrays import ListsDumper
from acta.provider.postgres.connect import utc_dict_row
from acta.provider.statements import Statement
from acta.provider.verb import Op

T = TypeVar("T")
DictCursor = psycopg.RawCursor[dict[str, Any]]
AsyncDictCursor = psycopg.AsyncRawCursor[dict[str, Any]]


class Link(Protocol):
    """One connection with its cursor, in the terms the transaction logic needs."""

    @property
    def conn(self) -> psycopg.BaseConnection[Any]: ...

    async def execute(self, op: Op, statement: Statement) -> Any:
        """Run one statement of a verb and fetch what ``op`` asks for."""
        ...

    async def raw(self, sql: str) -> None:
        """Run acta's own fixed SQL (savepoints)."""
        ...

    async def set_autocommit(self, on: bool) -> None: ...

    async def commit(self) -> None: ...

    async def rollback(self) -> None: ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[None]:
        """BEGIN ... COMMIT (ROLLBACK on error) on an autocommit connection."""
        ...


class Links(Protocol):
    """Where links come from: a pool of acta's own connections."""

    def connection(self) -> contextlib.AbstractAsyncContextManager[Link]: ...

    async def check(self) -> None:
        """Drop the idle connections the server closed (after a lost connection)."""
        ...


def idle_autocommit(conn: psycopg.BaseConnection[Any]) -> bool:
    """Whether no transaction is open on ``conn`` and none would be opened implicitly."""
    return conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE


class SyncLink:
    """A psycopg ``Connection`` behind coroutines that never suspend."""

    def __init__(self, conn: psycopg.Connection[Any], cur: DictCursor) -> None:
        self.conn: psycopg.Connection[Any] = conn
        self.cur = cur

    async def execute(self, op: Op, statement: Statement) -> Any:
        cur = self.cur
        if op.fetch == "many":
            cur.executemany(statement.numbered, _rows(statement, op))
            return None
        cur.execute(statement.numbered, _values(statement, op), prepare=False)
        if op.fetch == "rowcount":
            return cur.rowcount
        return cur.fetchone() if op.fetch == "one" else cur.fetchall()

    async def raw(self, sql: str) -> None:
        self.cur.execute(sql, prepare=False)

    async def set_autocommit(self, on: bool) -> None:
        self.conn.autocommit = on

    async def commit(self) -> None:
        self.conn.commit()

    async def rollback(self) -> None:
        self.conn.rollback()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        with self.conn.transaction():
            yield


class AsyncLink:
    """A psycopg ``AsyncConnection``."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], cur: AsyncDictCursor) -> None:
        self.conn: psycopg.AsyncConnection[Any] = conn
        self.cur = cur

    async def execute(self, op: Op, statement: Statement) -> Any:
        cur = self.cur
        if op.fetch == "many":
            await cur.executemany(statement.numbered, _rows(statement, op))
            return None
        await cur.execute(statement.numbered, _values(statement, op), prepare=False)
        if op.fetch == "rowcount":
            return cur.rowcount
        return await cur.fetchone() if op.fetch == "one" else await cur.fetchall()

    async def raw(self, sql: str) -> None:
        await self.cur.execute(sql, prepare=False)

    async def set_autocommit(self, on: bool) -> None:
        await self.conn.set_autocommit(on)

    async def commit(self) -> None:
        await self.conn.commit()

    async def rollback(self) -> None:
        await self.conn.rollback()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with self.conn.transaction():
            yield


def binary_lists(cur: psycopg.RawCursor[Any] | psycopg.AsyncRawCursor[Any]) -> None:
    """Send lists (the batch arrays of the fused statements) in binary, on this cursor only: a
    raw cursor's parameters take each type's default format, text for lists, which costs the
    server a parse of every element. Flat int lists go as ``bigint[]`` by a quicker path
    (``acta.provider.postgres.arrays``)."""
    cur.adapters.register_dumper(list, ListsDumper)


def _values(statement: Statement, op: Op) -> list[Any]:
    return statement.values(cast(Mapping[str, Any], op.params))


def _rows(statement: Statement, op: Op) -> list[list[Any]]:
    return [statement.values(row) for row in cast(Sequence[Mapping[str, Any]], op.params)]


@contextlib.asynccontextmanager
async def sync_link(conn: psycopg.Connection[Any]) -> AsyncIterator[Link]:
    # A raw cursor on any connection, the caller's own included: it changes nothing on it.
    with psycopg.RawCursor(conn, row_factory=utc_dict_row) as cur:
        binary_lists(cur)
        yield SyncLink(conn, cur)


@contextlib.asynccontextmanager
async def async_link(conn: psycopg.AsyncConnection[Any]) -> AsyncIterator[Link]:
    async with psycopg.AsyncRawCursor(conn, row_factory=utc_dict_row) as cur:
        binary_lists(cur)
        yield AsyncLink(conn, cur)


# One cursor per pooled connection of acta's own, made on first use and kept on the connection
# while it lives. A new cursor per verb copied the adapters map and looked up every
# parameter's dumper again, about 50 us of a single enqueue. A pooled connection serves one
# verb at a time, so its cursor does too; a caller's connection still gets a fresh cursor
# (``sync_link``), since acta must leave nothing behind on it. The cursor is an attribute of
# the connection, not the value of a weak mapping keyed by it: the cursor refers to its
# connection, so such a mapping would keep every connection alive.
_CURSOR = "_acta_cursor"


C = TypeVar("C", DictCursor, AsyncDictCursor)


def _kept_cursor(conn: object, make: Callable[[], C]) -> C:
    """The cursor ``conn`` keeps, made by ``make`` on first use (or after it was closed)."""
    cur: C | None = getattr(conn, _CURSOR, None)
    if cur is None or cur.closed:
        cur = make()
        binary_lists(cur)
        setattr(conn, _CURSOR, cur)
    return cur


class SyncLinks:
    """Links over the sync pool."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[Any]]) -> None:
        self.pool = pool

    def connection(self) -> _Lease:
        return _Lease(self.pool)

    async def check(self) -> None:
        self.pool.check()


class _Lease:
    """A sync pool's connection for one attempt, as a link: taken on entry, given back on exit.

    A class rather than a generator-based context manager, and the pool's getconn and putconn
    rather than its ``connection()``: the attempt commits or rolls back itself, and the two
    generator frames and the connection's own ``with`` block around them cost about 10 us of a
    single enqueue. ``putconn`` still discards a connection that broke and rolls back one left
    inside a transaction."""

    __slots__ = ("conn", "pool")

    def __init__(self, pool: ConnectionPool[psycopg.Connection[Any]]) -> None:
        self.pool = pool

    async def __aenter__(self) -> Link:
        conn = self.conn = self.pool.getconn()
        cur = _kept_cursor(conn, lambda: psycopg.RawCursor(conn, row_factory=utc_dict_row))
        return SyncLink(conn, cur)

    async def __aexit__(self, *exc: object) -> None:
        self.pool.putconn(self.conn)


class AsyncLinks:
    """Links over the async pool of the running event loop."""

    def __init__(self, pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]]) -> None:
        self.pool = pool

    def connection(self) -> _AsyncLease:
        return _AsyncLease(self.pool)

    async def check(self) -> None:
        await self.pool.check()


class _AsyncLease:
    """The async twin of ``_Lease``."""

    __slots__ = ("conn", "pool")

    def __init__(self, pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]]) -> None:
        self.pool = pool

    async def __aenter__(self) -> Link:
        conn = self.conn = await self.pool.getconn()
        cur = _kept_cursor(conn, lambda: psycopg.AsyncRawCursor(conn, row_factory=utc_dict_row))
        return AsyncLink(conn, cur)

    async def __aexit__(self, *exc: object) -> None:
        await self.pool.putconn(self.conn)


def finish(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine over sync links to its end, without an event loop: nothing in it ever
    suspends (a SyncLink's coroutines call the driver directly)."""
    coro = make()
    try:
        coro.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coro.close()
    raise RuntimeError("a coroutine over sync links suspended; it must not")
