"""A run: one job this worker holds from claim to settle, why it may be stopped, and how it
ended."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from acta.context import Cancellation
from acta.model.rows import Claimed, Started
from acta.outcome import Firing


class RunEnd(StrEnum):
    """How a run ended, for the job it held."""

    COMPLETED = "completed"
    FAILED = "failed"
    REARMED = "rearmed"
    SUSPENDED = "suspended"
    """The handler parked its job on a durable wait (sleep, signal, children)."""
    RESCHEDULED = "rescheduled"
    PAUSED = "paused"
    BOUNCED = "bounced"
    """A gate turned the job away before its handler ran: it comes back later, no attempt
    spent, and its executor went back to the pool."""
    CANCELLED = "cancelled"
    LEASE_LOST = "lease-lost"
    KILLED = "killed"
    LEFT_LEASED = "left-leased"
    """Shutdown could not hand the job back: its sync handler's thread was still running."""


class Stop(StrEnum):
    """Why the worker stopped a run before its handler returned."""

    TIMEOUT = "timeout"
    CANCEL = "cancel"
    LEASE_LOST = "lease-lost"
    SHUTDOWN = "shutdown"
    KILLED = "killed"


@dataclass(eq=False)
class Run:
    """A job this worker holds, from claim to settle; the heartbeat renews its lease.

    Create it on the event loop; ``stop`` may be called from any thread (a sync handler in the
    test host can kill its own worker)."""

    job: Claimed
    loop: asyncio.AbstractEventLoop
    started: Started | None = None
    """Set when the claim already started the run (the direct profile)."""
    holds_slot: bool = False
    """Whether the run occupies one of the worker's executors right now."""
    cancellation: Cancellation = field(default_factory=Cancellation)
    stop_reason: Stop | None = None
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    _on_stop: Callable[[], None] | None = None
    thread: concurrent.futures.Future[Any] | None = None
    """A sync handler's thread that outlived its run (timeout or stop) and still runs."""
    grace_from: datetime | None = None
    """When the stopped handler's cancel grace began (one grace per stop, however many
    places wait on it)."""
    cancel_control: int = 1
    """Why a Stop.CANCEL came: the job's control code (``acta.model.codes.Control``)."""
    back_at: datetime | None = None
    """When a job a gate turned away is due again (the worker looks for it then)."""
    firing: Firing | None = None
    """For a run of a schedule slot: what it fires (the handler sees it as ``ctx.firing``)."""
    slot: bool = False
    """Whether the run is a schedule slot's: its settle must close the firing."""
    durable: bool = False
    """Whether the run read or wrote durable state (steps, variables, waits, children, notes):
    on the bulk profile its settle is never held for the flush window."""
    urgent: bool = False
    """Settle at once even on the bulk profile (a run driven one at a time: ``run_one``)."""
    settling: bool = False
    """The handler is done and the settle waits in the bulk flush window: the run holds no
    executor, but its lease is still renewed until the settle is committed."""

    def stop(self, reason: Stop) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
            self.cancellation.cancel(reason.value)
            self.loop.call_soon_threadsafe(self._stopped)

    def _stopped(self) -> None:
        self.stopped.set()
        if self._on_stop is not None:
            self._on_stop()

    def watch(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` on the loop once the run is stopped (now, if it already is);
        None forgets it. One watcher at a time: the run's handler race."""
        self._on_stop = callback
        if callback is not None and self.stopped.is_set():
            callback()

    @property
    def thread_running(self) -> bool:
        """Whether an abandoned sync handler of this run is still executing."""
        return self.thread is not None and not self.thread.done()

    async def thread_or_stop(self) -> None:
        """Wait until the abandoned handler thread returns or the run is stopped (the caller
        tells which from ``thread_running`` and ``stop_reason``)."""
        if self.thread is None:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def wake(_: object = None) -> None:
            if not done.done():
                done.set_result(None)

        self.thread.add_done_callback(lambda _: loop.call_soon_threadsafe(wake))
        self.watch(wake)
        try:
            await done
        finally:
            self.watch(None)
