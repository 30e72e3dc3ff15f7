"""The runtime side of ``ctx.lock``: try the lock, wait on the runtime clock, meter the wait.

A try is one short ledger transaction under the run's fence (``acta.ledger.locks``). While
another job holds the lock, the run waits on the worker's clock (the test host's manual clock
under the host, so no test waits on wall time) for the next poll, or until a release in this
process rings it. Waiters in other processes find a release at their next poll. A run that
was fenced gets ``LeaseLostError`` from the try, like any other durable write.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

from acta.errors import LockTimeoutError, ValidationError
from acta.ledger.locks import LockAttempt, release_lock, try_lock
from acta.provider.verb import Verb
from acta.runtime.port import PortBase

POLL = timedelta(milliseconds=500)
"""How often a waiter looks again when no release in this process woke it."""

_lock = threading.Lock()
_waiters: dict[tuple[int, str], set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}


def _listen(slot: tuple[int, str]) -> tuple[asyncio.AbstractEventLoop, asyncio.Event]:
    entry = (asyncio.get_running_loop(), asyncio.Event())
    with _lock:
        _waiters.setdefault(slot, set()).add(entry)
    return entry


def _forget(slot: tuple[int, str], entry: tuple[asyncio.AbstractEventLoop, asyncio.Event]) -> None:
    with _lock:
        waiting = _waiters.get(slot)
        if waiting is not None:
            waiting.discard(entry)
            if not waiting:
                del _waiters[slot]


def _ring(slot: tuple[int, str]) -> None:
    """Wake this process's waiters on a lock just released (they try again at once)."""
    with _lock:
        waiting = list(_waiters.get(slot, ()))
    for loop, event in waiting:
        if not loop.is_closed():
            loop.call_soon_threadsafe(event.set)


async def acquire(port: PortBase, key: str, limit: timedelta | None) -> None:
    """Take ``key`` for ``port``'s run, waiting up to ``limit`` (None: until the run ends)."""
    clock, lease = port.env.clock, port.lease
    slot = (lease.namespace_id, key)
    deadline = None if limit is None else clock.now() + limit
    started, waited = clock.monotonic(), False
    while True:
        # Listen before trying, so a release between a busy try and the sleep still wakes us.
        entry = _listen(slot)
        try:
            now = port._now()
            attempt: LockAttempt = await port._write(
                lambda now=now: _try(lease, key, now),  # type: ignore[misc]
                f"lock {key!r}",
            )
            if attempt.outcome == "taken":
                if waited:
                    _meter(port, "acquired", clock.monotonic() - started)
                return
            if attempt.outcome == "mine":
                raise ValidationError(
                    "key", f"this run already holds lock {key!r}", "a lock is not re-entrant"
                )
            instant = clock.now()
            if deadline is not None and instant >= deadline:
                _meter(port, "timed-out", clock.monotonic() - started)
                seconds = 0.0 if limit is None else limit.total_seconds()
                raise LockTimeoutError(key, attempt.holder, seconds)
            waited = True
            wake_at = instant + POLL if deadline is None else min(deadline, instant + POLL)
            await clock.sleep_until(wake_at, entry[1])
            if port.run.cancellation.cancelled:
                _meter(port, "abandoned", clock.monotonic() - started)
                port.run.cancellation.raise_if_cancelled()
        finally:
            _forget(slot, entry)


def _try(lease: object, key: str, now: object) -> Verb[LockAttempt | None]:
    """``try_lock``, with a fenced try answered None (``_write`` turns that into LeaseLost)."""
    attempt = yield from try_lock(lease, key, now)  # type: ignore[arg-type]
    return None if attempt.outcome == "fenced" else attempt


async def release(port: PortBase, key: str) -> None:
    """Release ``key``; a fenced run gets ``LeaseLostError`` and releases nothing."""
    lease, now = port.lease, port._now()
    await port._write(lambda: release_lock(lease, key, now), f"the release of lock {key!r}")
    _ring((lease.namespace_id, key))


def _meter(port: PortBase, outcome: str, seconds: float) -> None:
    telemetry = port.env.ledger.telemetry
    if telemetry is not None:
        telemetry.lock_waited(port.env.namespace, port.run.job.name, outcome, seconds)
