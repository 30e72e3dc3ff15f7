"""``ctx.lock(key, timeout=...)``: a short critical section inside a running handler.

The context managers here only check their arguments at the call site and hand the work to the
run's durable port (``DurableOps.lock_acquire`` / ``lock_release``, in ``acta.runtime.locks``),
which waits on the runtime clock and writes under the run's lease. ``AsyncLock`` is what an
async handler's ``async with`` gets; ``SyncLock`` is the blocking twin for sync handlers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from types import TracebackType
from typing import Any, Protocol, TypeVar

from acta.duration import parse_duration
from acta.names import validate_key

LOCK_KEY_MAX = 200
"""The longest lock key (the same rule as concurrency keys and lanes)."""

T = TypeVar("T")


class LockOps(Protocol):
    """What a lock needs of the run's durable port."""

    async def lock_acquire(self, key: str, limit: timedelta | None) -> None: ...
    async def lock_release(self, key: str) -> None: ...


def check_lock(key: object, timeout: object) -> tuple[str, timedelta | None]:
    """A lock's key and timeout, checked: an ``InvalidNameError`` or ``ValidationError``
    names the argument, before anything is written."""
    checked = validate_key(key, field="key", max_length=LOCK_KEY_MAX)  # type: ignore[arg-type]
    if timeout is None:
        return checked, None
    return checked, parse_duration(timeout, field="timeout", allow_zero=True)  # type: ignore[arg-type]


class AsyncLock:
    """``async with ctx.lock(key, timeout=...)``: holds the lock for the block."""

    __slots__ = ("_ops", "key", "timeout")

    def __init__(self, ops: Callable[[], LockOps], key: object, timeout: object) -> None:
        self.key, self.timeout = check_lock(key, timeout)
        self._ops = ops

    async def __aenter__(self) -> AsyncLock:
        await self._ops().lock_acquire(self.key, self.timeout)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._ops().lock_release(self.key)


class SyncLock:
    """``with ctx.lock(key, timeout=...)`` in a sync handler: the same, blocking."""

    __slots__ = ("_ops", "_wait", "key", "timeout")

    def __init__(
        self,
        ops: Callable[[], LockOps],
        wait: Callable[[Awaitable[Any]], Any],
        key: object,
        timeout: object,
    ) -> None:
        self.key, self.timeout = check_lock(key, timeout)
        self._ops, self._wait = ops, wait

    def __enter__(self) -> SyncLock:
        self._wait(self._ops().lock_acquire(self.key, self.timeout))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._wait(self._ops().lock_release(self.key))
