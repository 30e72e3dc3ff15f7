"""Time for the whole library: the only module that reads wall time or sleeps.

A clock answers two questions. ``now()`` is the instant Python code reasons with. ``sql_now()``
is what time-dependent statements bind as ``:now``: ``None`` in production, so the database
judges leases and due times with its own clock, or the fixed instant of a test clock. Durations
(handler run time) come from ``monotonic()``. Nothing else in acta may call ``time``,
``datetime.now`` or a sleep; a test greps the sources to keep it that way.

``database_now_text()`` is the database clock of an embedded database (SQLite): the OS clock as
SQLite's C library reads it, which libraries that patch Python's time for tests (freezegun,
time-machine) do not reach, as they cannot reach a server's. A ``ManualClock`` may ``follow``
such a library instead (acta_testing.frozen): while it is active, the clock reads its frozen
time and moving the clock moves it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """What the runtime needs from time."""

    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...

    def sql_now(self) -> datetime | None:
        """The value bound as ``:now``; ``None`` lets the database use its own clock."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, for measuring durations."""
        ...

    async def sleep_until(self, deadline: datetime, wake: asyncio.Event | None = None) -> None:
        """Wait until ``deadline`` or until ``wake`` is set, whichever comes first."""
        ...


class SystemClock:
    """Wall time; statements bind NULL so the database clock decides."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sql_now(self) -> datetime | None:
        return None

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep_until(self, deadline: datetime, wake: asyncio.Event | None = None) -> None:
        delay = max(0.0, (deadline - self.now()).total_seconds())
        if wake is None:
            await asyncio.sleep(delay)
            return
        if wake.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=delay)


@runtime_checkable
class TimeSource(Protocol):
    """Frozen time a ``ManualClock`` follows while it is active (freezegun, time-machine)."""

    def frozen(self) -> datetime | None:
        """The frozen instant (aware UTC), or None while the library is not active."""
        ...

    def shift(self, delta: timedelta) -> None:
        """Move the frozen time forward by ``delta``."""
        ...

    def move_to(self, instant: datetime) -> None:
        """Move the frozen time to ``instant`` (aware)."""
        ...


class ManualClock:
    """A clock that moves only when told: the test clock.

    ``sql_now()`` binds its instant, so the database sees the same time as the test. Sleeping
    on it never waits on wall time: a sleeper returns when ``advance`` passes its deadline or its
    wake event is set. With ``follow``, while that source is active the clock reads its frozen
    time, and ``advance``/``set`` move the source too.
    """

    def __init__(self, start: datetime | None = None, *, follow: TimeSource | None = None) -> None:
        instant = start or datetime(2026, 1, 1, tzinfo=UTC)
        if instant.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start instant")
        self._now = instant.astimezone(UTC)
        self._ticks = 0.0
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self.follow = follow

    def _frozen(self) -> datetime | None:
        """The followed source's instant, taken as this clock's (the lock held); None when
        there is none or it is not active."""
        frozen = self.follow.frozen() if self.follow is not None else None
        if frozen is not None and frozen != self._now:
            self._ticks += (frozen - self._now).total_seconds()
            self._now = frozen
        return frozen

    def now(self) -> datetime:
        with self._lock:
            self._frozen()
            return self._now

    def sql_now(self) -> datetime | None:
        return self.now()

    def monotonic(self) -> float:
        with self._lock:
            return self._ticks

    def advance(self, delta: timedelta | float | str) -> datetime:
        """Move time forward by ``delta`` (a timedelta, seconds, or text such as ``"5m"``) and
        return the new instant."""
        from acta.duration import parse_duration

        step = parse_duration(delta, field="delta", allow_zero=True)
        if step < timedelta(0):
            raise ValueError("a clock only moves forward; use set() to jump elsewhere")
        with self._lock:
            if self._frozen() is not None:
                self.follow.shift(step)  # type: ignore[union-attr]
            self._now += step
            self._ticks += step.total_seconds()
            listeners = list(self._listeners)
        for notify in listeners:
            notify()
        return self._now

    def set(self, instant: datetime) -> None:
        """Jump to ``instant`` (aware); moving backwards is allowed for clock-skew tests."""
        if instant.tzinfo is None:
            raise ValueError("set() needs a timezone-aware instant")
        with self._lock:
            if self._frozen() is not None:
                self.follow.move_to(instant)  # type: ignore[union-attr]
            self._ticks += (instant - self._now).total_seconds()
            self._now = instant.astimezone(UTC)
            listeners = list(self._listeners)
        for notify in listeners:
            notify()

    async def sleep_until(self, deadline: datetime, wake: asyncio.Event | None = None) -> None:
        if self.now() >= deadline or (wake is not None and wake.is_set()):
            return
        loop = asyncio.get_running_loop()
        moved = asyncio.Event()

        def notify() -> None:
            loop.call_soon_threadsafe(moved.set)

        with self._lock:
            self._listeners.append(notify)
        try:
            while self.now() < deadline and not (wake is not None and wake.is_set()):
                waiters = [asyncio.ensure_future(moved.wait())]
                if wake is not None:
                    waiters.append(asyncio.ensure_future(wake.wait()))
                _, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                for task in pending:
                    task.cancel()
                moved.clear()
        finally:
            with self._lock:
                self._listeners.remove(notify)


_embedded = threading.local()
_NOW_TEXT = "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"


def database_now_text() -> str:
    """The current instant by the OS clock as SQLite reads it, as SQLite's millisecond text
    (``2026-01-01 00:00:00.000``, UTC): the database clock of an embedded ledger. One
    in-memory connection per thread asks it, so a test library that patches Python's time
    (freezegun, time-machine) never leaks into ledger instants, as it never does on a server."""
    conn: sqlite3.Connection | None = getattr(_embedded, "conn", None)
    if conn is None:
        conn = _embedded.conn = sqlite3.connect(":memory:")
    return str(conn.execute(_NOW_TEXT).fetchone()[0])


def wall_milliseconds() -> int:
    """Milliseconds since the Unix epoch from the OS clock (used for UUIDv7 identities)."""
    return time.time_ns() // 1_000_000


def perf_seconds() -> float:
    """A high-resolution real-time counter in seconds, for measuring how long I/O took (the
    ledger's observation hooks); never for deciding anything."""
    return time.perf_counter()
