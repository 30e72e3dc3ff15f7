"""Connection pools of the PostgreSQL provider, opened on first use.

Sync callers (the producer surface, reads, the CLI) share one ``ConnectionPool``. Async callers
(the runtime) use an ``AsyncConnectionPool``, which belongs to the event loop it was opened on:
its background tasks live there. A call from another loop (a script that calls ``asyncio.run``
twice, the test host's own loop) gets a pool of its own and the old one is released. Each pool
is opened after one direct connection attempt, so a wrong DSN or a server that is down fails at
once with the host and the cause, instead of after the pool's timeout with neither.

The same holds once a pool is open and the server goes away: psycopg_pool replaces a broken
connection in the background, retrying with a growing backoff for minutes, while a caller's
``getconn`` waits the whole pool timeout for a connection that is not coming. Acta's pools
(``_FailFastPool`` and ``_AsyncFailFastPool``) remember that the pool's last attempt to connect
failed, wake the callers waiting at that moment, and have each of them try the server directly
(bounded by ``connect_timeout``): if that fails too, the caller gets ``PoolTimeout`` with the
cause at once (which the provider reports as ``DatabaseUnavailableError``); if it succeeds the
server is back and the caller waits for the pool as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from acta.provider.postgres.connect import Target

# Seconds a closing pool waits for its tasks and returned connections.
_CLOSE_SECONDS = 5.0

# A caller woken by a failed connection attempt asks the server again at most this many times
# before it gives up (the server flapping between up and down).
_RECHECKS = 3

SyncPool = ConnectionPool[psycopg.Connection[Any]]
AsyncPool = AsyncConnectionPool[psycopg.AsyncConnection[Any]]


class _Recheck(Exception):
    """Handed to waiting callers when the pool fails to connect: look at the server yourself."""


def _down(exc: BaseException) -> PoolTimeout:
    return PoolTimeout(f"the server does not accept connections: {exc}")


class _FailFastPool(SyncPool):
    """A sync pool whose callers learn within ``connect_timeout`` that the server is down.

    This overrides ``_connect`` and reads ``_waiting`` and ``_lock``, psycopg_pool's private
    names (checked with psycopg_pool 3.2 and 3.3); the test of a server going down under an
    open pool (tests/integration/test_postgres_pools_down.py) catches a change there.
    """

    failure: Exception | None = None
    """The error of the pool's last attempt to connect, if it failed; None once one works."""

    def _connect(self, timeout: float | None = None) -> psycopg.Connection[Any]:
        try:
            conn = super()._connect(timeout)
        except Exception as exc:
            self.failure = exc
            with self._lock:
                for waiting in self._waiting:
                    waiting.fail(_Recheck())  # a caller that already left ignores this
            raise
        self.failure = None
        return conn

    def getconn(self, timeout: float | None = None) -> psycopg.Connection[Any]:
        for _ in range(_RECHECKS):
            if self.failure is not None:
                self._probe()
            try:
                return super().getconn(timeout)
            except _Recheck:
                continue
        raise PoolTimeout("the server keeps failing new connections")

    def _probe(self) -> None:
        """Connect once, directly: raise ``PoolTimeout`` with the cause if that fails too."""
        try:
            self.connection_class.connect(str(self.conninfo), **self._resolve_kwargs()).close()
        except psycopg.Error as exc:
            raise _down(exc) from None
        self.failure = None  # the server answers: wait for the pool's own reconnection


class _AsyncFailFastPool(AsyncPool):
    """The async twin of ``_FailFastPool`` (same private names, same reasons)."""

    failure: Exception | None = None

    async def _connect(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 - psycopg_pool's signature
    ) -> psycopg.AsyncConnection[Any]:
        try:
            conn = await super()._connect(timeout)
        except Exception as exc:
            self.failure = exc
            async with self._lock:
                for waiting in self._waiting:
                    await waiting.fail(_Recheck())
            raise
        self.failure = None
        return conn

    async def getconn(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 - psycopg_pool's signature
    ) -> psycopg.AsyncConnection[Any]:
        for _ in range(_RECHECKS):
            if self.failure is not None:
                await self._probe()
            try:
                return await super().getconn(timeout)
            except _Recheck:
                continue
        raise PoolTimeout("the server keeps failing new connections")

    async def _probe(self) -> None:
        try:
            kwargs = await self._resolve_kwargs()
            conn = await self.connection_class.connect(str(self.conninfo), **kwargs)
        except psycopg.Error as exc:
            raise _down(exc) from None
        await conn.close()
        self.failure = None


class Pools:
    """The sync pool and the async pool (with its loop) of one provider."""

    def __init__(
        self,
        target: Target,
        *,
        min_size: int,
        max_size: int,
        connect_timeout: float,
        pool_timeout: float,
    ) -> None:
        self.target = target
        self._connect = target.connect_kwargs(connect_timeout)
        self._args: dict[str, Any] = {
            "kwargs": self._connect,
            "min_size": min_size,
            "max_size": max_size,
            "timeout": pool_timeout,
            "name": "acta",
            "open": False,
        }
        # Two locks: a sync caller probing a slow server must not hold up an event loop.
        self._lock = threading.Lock()
        self._alock = threading.Lock()
        self._sync: SyncPool | None = None
        self._async: _AsyncSlot | None = None

    def sync(self) -> SyncPool:
        with self._lock:
            if self._sync is None:
                try:
                    psycopg.Connection.connect(self.target.dsn, **self._connect).close()
                except psycopg.Error as exc:
                    raise self.target.unavailable(exc) from None
                pool: SyncPool = _FailFastPool(self.target.dsn, **self._args)
                pool.open(wait=False)
                self._sync = pool
            return self._sync

    async def for_loop(self) -> AsyncPool:
        loop = asyncio.get_running_loop()
        stale = None
        with self._alock:
            slot = self._async
            if slot is None or slot.loop is not loop:
                stale = slot
                slot = self._async = _AsyncSlot(loop, self._open_async)
        if stale is not None:
            stale.release()
        try:
            return await asyncio.shield(slot.opening)
        except Exception:
            with self._alock:
                if self._async is slot and slot.opening.done():
                    self._async = None  # let the next call try again
            raise

    async def _open_async(self) -> AsyncPool:
        try:
            probe = await psycopg.AsyncConnection.connect(self.target.dsn, **self._connect)
            await probe.close()
        except psycopg.Error as exc:
            raise self.target.unavailable(exc) from None
        pool: AsyncPool = _AsyncFailFastPool(self.target.dsn, **self._args)
        await pool.open(wait=False)
        return pool

    def close(self) -> None:
        with self._lock:
            pool, self._sync = self._sync, None
        with self._alock:
            slot, self._async = self._async, None
        if pool is not None:
            pool.close()
        if slot is not None:
            slot.release()

    async def aclose(self) -> None:
        with self._alock:
            slot, self._async = self._async, None
        if slot is not None and slot.loop is asyncio.get_running_loop():
            await slot.aclose()
        elif slot is not None:
            slot.release()
        # Closing the sync pool joins its worker threads: keep that off the event loop.
        await asyncio.get_running_loop().run_in_executor(None, self.close)


class _AsyncSlot:
    """An async pool and the event loop it belongs to (its tasks live on that loop).

    Once the pool is open a guard task waits beside it. ``asyncio.run`` (any ``Runner``)
    cancels every remaining task when its main coroutine returns; a pool task hit by that
    cancellation while it is connecting takes it for a failed connection, schedules another
    attempt and waits on its queue, and the loop then waits for it forever. The guard is
    cancelled in the same sweep and closes the pool, which stops those tasks. An application
    that never closes acta therefore still exits.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, open_pool: Callable[[], Awaitable[AsyncPool]]
    ) -> None:
        self.loop = loop
        self.guard: asyncio.Task[None] | None = None
        self.opening: asyncio.Task[AsyncPool] = loop.create_task(self._open(open_pool))

    async def _open(self, open_pool: Callable[[], Awaitable[AsyncPool]]) -> AsyncPool:
        pool = await open_pool()
        self.guard = asyncio.get_running_loop().create_task(_close_when_cancelled(pool))
        return pool

    def _opened(self) -> AsyncPool | None:
        task = self.opening
        if task.done() and not task.cancelled() and task.exception() is None:
            return task.result()
        return None

    async def aclose(self) -> None:
        """Close the pool; call on its own loop."""
        try:
            pool = await self.opening
        except Exception:
            return  # it never opened: nothing to close
        if self.guard is not None and not self.guard.done():
            self.guard.cancel()  # the guard closes the pool on its way out
            await asyncio.gather(self.guard, return_exceptions=True)
        else:
            await pool.close(timeout=_CLOSE_SECONDS)

    def release(self) -> None:
        """Close the pool from anywhere: on its loop if that loop can still run, else by
        dropping the idle connections' sockets (a closed loop runs no task ever again)."""
        if self.loop.is_closed():
            pool = self._opened()
            if pool is not None:
                _abandon(pool)
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            _keep(self.loop.create_task(self.aclose()))
        elif self.loop.is_running():
            asyncio.run_coroutine_threadsafe(self.aclose(), self.loop)
        elif running is None:
            self.loop.run_until_complete(self.aclose())
        else:
            pool = self._opened()
            if pool is not None:
                _abandon(pool)


async def _close_when_cancelled(pool: AsyncPool) -> None:
    try:
        await asyncio.Event().wait()  # only a cancellation ends this wait
    finally:
        await pool.close(timeout=_CLOSE_SECONDS)


_pending: set[asyncio.Task[None]] = set()


def _keep(task: asyncio.Task[None]) -> None:
    # asyncio keeps only weak references to tasks; hold it until it finishes.
    _pending.add(task)
    task.add_done_callback(_pending.discard)


def _abandon(pool: AsyncPool) -> None:
    """Best effort for a pool whose event loop is gone (a script that called ``asyncio.run``
    twice, a test loop closed before teardown): its close() can never run, so close the idle
    connections' sockets directly, and mark the pool closed so that its finalizer does not try
    to stop workers on the dead loop. This reaches into the pool's private state; if that
    changes, the cost is a warning at garbage collection, not a failure."""
    with contextlib.suppress(Exception):
        for conn in list(pool._pool):
            conn.pgconn.finish()
        pool._closed = True
