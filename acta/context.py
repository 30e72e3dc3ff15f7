"""What a running handler receives: the job's identity, its run counters, a logger, and a
cancellation signal it can poll (sync handlers) or that interrupts it (async handlers).

The context holds no connection and performs no I/O of its own in this release; durable steps,
variables and waits will hang off it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime

from acta.ids import JobRef


class JobCancelledError(Exception):
    """Raised by ``raise_if_cancelled`` when the run must stop (cancel, timeout, shutdown)."""


class Cancellation:
    """A one-way flag shared by the worker and a handler run.

    Async handlers are also interrupted with ``asyncio.CancelledError``; sync handlers, which
    Python cannot interrupt, should poll ``cancelled`` or call ``raise_if_cancelled`` between
    units of work.
    """

    def __init__(self) -> None:
        # A plain flag under a lock; the threading.Event that blocking waiters need is made
        # only when one waits (most runs never do, and an Event costs a Condition).
        self._lock = threading.Lock()
        self._set = False
        self._event: threading.Event | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._set

    def cancel(self, reason: str) -> None:
        with self._lock:
            if self._set:
                return
            self.reason = reason
            self._set = True
            event = self._event
            waiters, self._waiters = self._waiters, []
        if event is not None:
            event.set()
        for loop, waiter in waiters:
            loop.call_soon_threadsafe(waiter.set)

    def raise_if_cancelled(self) -> None:
        if self._set:
            raise JobCancelledError(self.reason or "cancelled")

    def wait(self, timeout: float | None = None) -> bool:
        """Block a sync handler until cancelled or ``timeout`` seconds pass; True if cancelled."""
        with self._lock:
            if self._set:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)  # wall-clock wait: the handler's own, in its own thread

    async def wait_async(self) -> None:
        """Wait (async) until the run is cancelled."""
        event = asyncio.Event()
        with self._lock:
            if self._set:
                return
            self._waiters.append((asyncio.get_running_loop(), event))
        await event.wait()


@dataclass(frozen=True, slots=True)
class JobContext:
    """The handler's view of the job it is running."""

    job: JobRef
    name: str
    attempt: int
    """1-based: the attempt this run would spend if it fails."""
    max_attempts: int
    execution: int
    """1-based count of handler runs of this job, including this one."""
    created_at: datetime
    correlation_key: str | None
    logger: logging.LoggerAdapter[logging.Logger]
    cancellation: Cancellation = field(default_factory=Cancellation)

    @property
    def cancelled(self) -> bool:
        """True once the worker asked this run to stop."""
        return self.cancellation.cancelled

    def raise_if_cancelled(self) -> None:
        """Raise JobCancelledError if the worker asked this run to stop."""
        self.cancellation.raise_if_cancelled()

    @property
    def is_last_attempt(self) -> bool:
        return self.attempt >= self.max_attempts


def job_logger(name: str, ref: JobRef, execution: int) -> logging.LoggerAdapter[logging.Logger]:
    """A logger named ``acta.job.<name>`` whose records carry the job ref and execution."""
    return logging.LoggerAdapter(
        logging.getLogger(f"acta.job.{name}"),
        {"job_ref": str(ref), "execution": execution},
    )
