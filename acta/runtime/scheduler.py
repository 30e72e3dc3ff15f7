"""The tick scheduler: a worker is a set of steppable loops run in a fixed order.

Each loop has a due instant and a ``step(now) -> next_due``. ``run_due`` steps every loop that
is due, in registration order, and returns the earliest next due instant; production sleeps on
the clock until then or until the bell rings (new work, a freed executor, a shutdown). Tests
never start ``run_forever``: the host calls the pieces itself, one tick at a time, against the
manual clock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from acta.clock import Clock
from acta.errors import DatabaseUnavailableError

log = logging.getLogger("acta.worker")

StepFn = Callable[[datetime], Awaitable[datetime]]

# After a loop raises, wait this long before stepping it again, so a broken database does not
# turn the worker into a busy loop; the loop's own cadence resumes once it succeeds.
ERROR_PAUSE = timedelta(seconds=1)


class Loop:
    """One steppable loop: a name, a step function and its next due instant."""

    def __init__(self, name: str, step: StepFn, due: datetime) -> None:
        self.name = name
        self.step = step
        self.due = due
        self.enabled = True
        self.failures = 0
        # Rung while its step was in flight: the step's answer (the next poll, say) must not
        # overwrite the wake-up, or new work waits a whole poll for nothing.
        self.rung = False

    def __repr__(self) -> str:
        return f"<Loop {self.name} due={self.due.isoformat()} enabled={self.enabled}>"


class Scheduler:
    """Runs due loops in order and sleeps until the next one is due or the bell rings."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.loops: list[Loop] = []
        self.bell = asyncio.Event()

    def add(self, name: str, step: StepFn, due: datetime | None = None) -> Loop:
        loop = Loop(name, step, due or self.clock.now())
        self.loops.append(loop)
        return loop

    def ring(self, loop: Loop | None = None) -> None:
        """Make ``loop`` due now (if given) and wake the scheduler."""
        if loop is not None:
            loop.due = min(loop.due, self.clock.now())
            loop.rung = True
        self.bell.set()

    async def run_due(self) -> datetime:
        """Step every enabled loop that is due; return the earliest next due instant."""
        for loop in self.loops:
            if not loop.enabled:
                continue
            now = self.clock.now()
            if loop.due > now:
                continue
            loop.rung = False
            try:
                due = await loop.step(now)
                loop.due = min(due, self.clock.now()) if loop.rung else due
                loop.failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                loop.failures += 1
                if isinstance(exc, DatabaseUnavailableError):
                    # An outage, not a bug: one line saying so, no traceback.
                    log.warning(
                        "acta loop %s could not reach the database (%d in a row): %s",
                        loop.name,
                        loop.failures,
                        exc,
                    )
                else:
                    log.exception("acta loop %s failed (%d in a row)", loop.name, loop.failures)
                loop.due = self.clock.now() + ERROR_PAUSE * min(loop.failures, 30)
        return self.next_due()

    def next_due(self) -> datetime:
        enabled = [loop.due for loop in self.loops if loop.enabled]
        return min(enabled) if enabled else self.clock.now() + timedelta(hours=1)

    async def run_until(self, stop: asyncio.Event) -> None:
        """Production: step due loops, then sleep on the clock until due or rung."""
        while not stop.is_set():
            self.bell.clear()
            deadline = await self.run_due()
            if stop.is_set():
                return
            await self.clock.sleep_until(deadline, self.bell)


async def until(clock: Clock, deadline: datetime, futures: set[Any]) -> None:
    """Wait until every future in ``futures`` (which may grow) is done or ``clock`` reaches
    ``deadline``."""
    while clock.now() < deadline:
        pending = {f for f in futures if not f.done()}
        if not pending:
            return
        sleeper = asyncio.ensure_future(clock.sleep_until(deadline))
        try:
            await asyncio.wait({sleeper, *pending}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()


def failure(write: asyncio.Future[Any]) -> str | None:
    """Why a bounded write did not land (None when it did); a write still running is
    cancelled."""
    if not write.done():
        write.cancel()
        return "the database did not answer in time"
    if write.cancelled():
        return "cancelled"
    error = write.exception()
    return None if error is None else f"{type(error).__name__}: {error}"
