"""Waiting from outside for a job's outcome: poll its row on the application's clock.

Polling starts fast (a short job's result comes back within milliseconds) and backs off to one
poll a second, so a long wait costs one small read per second. The clock is the application's
own: a test clock decides when a wait times out. The blocking form reads with the blocking
API and only sleeps on a loop of its own, so it never shares async connections with a worker
running in the same process.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from acta.clock import Clock
from acta.duration import parse_duration
from acta.errors import JobFailedError, WaitTimeoutError
from acta.ids import JobRef
from acta.model.codes import EventCode, JobStatus
from acta.model.rows import EventInfo, JobInfo

_FIRST_POLL = timedelta(milliseconds=5)
_MAX_POLL = timedelta(seconds=1)
_ENDED = (EventCode.FAILED, EventCode.CANCELLED)


class Watched(Protocol):
    """What a wait needs of the application: its clock and its reads."""

    @property
    def clock(self) -> Clock: ...
    def get(self, ref: JobRef | str) -> JobInfo: ...
    def result(self, ref: JobRef | str) -> Any: ...
    def events(self, ref: JobRef | str) -> list[EventInfo]: ...
    async def get_async(self, ref: JobRef | str) -> JobInfo: ...
    async def result_async(self, ref: JobRef | str) -> Any: ...
    async def events_async(self, ref: JobRef | str) -> list[EventInfo]: ...


def wait_limit(timeout: Any) -> timedelta | None:
    """A wait's timeout, checked (a ValidationError names it)."""
    return None if timeout is None else parse_duration(timeout, field="timeout")


@dataclass
class _Poll:
    """One wait's schedule: when it gives up, and how long until the next look."""

    ref: JobRef
    limit: timedelta | None
    until: datetime | None
    every: timedelta = _FIRST_POLL

    @classmethod
    def start(cls, ref: JobRef, timeout: Any, clock: Clock) -> _Poll:
        limit = wait_limit(timeout)
        return cls(ref, limit, None if limit is None else clock.now() + limit)

    def next_look(self, info: JobInfo, now: datetime) -> datetime:
        """When to look again; WaitTimeoutError once the wait is over."""
        if self.until is not None and now >= self.until:
            raise WaitTimeoutError(
                f"job {self.ref} is still {info.status.label} after {self.limit}; it goes on"
            )
        wake = now + self.every if self.until is None else min(now + self.every, self.until)
        self.every = min(self.every * 2, _MAX_POLL)
        return wake


def _failure(ref: JobRef, info: JobInfo, events: list[EventInfo]) -> JobFailedError:
    why = next((e.message for e in reversed(events) if e.code in _ENDED), None)
    return JobFailedError(ref, info.status.label, why)


async def wait_for(app: Watched, ref: JobRef, timeout: Any) -> Any:
    """The job's result once it is terminal (see ``Acta.wait_async``)."""
    poll = _Poll.start(ref, timeout, app.clock)
    while True:
        info = await app.get_async(ref)
        if info.status is JobStatus.SUCCEEDED:
            return await app.result_async(ref)
        if info.status.terminal:
            raise _failure(ref, info, await app.events_async(ref))
        await app.clock.sleep_until(poll.next_look(info, app.clock.now()))


def wait_blocking(app: Watched, ref: JobRef, timeout: Any) -> Any:
    """The blocking twin of ``wait_for`` (see ``Acta.wait``)."""
    poll = _Poll.start(ref, timeout, app.clock)
    while True:
        info = app.get(ref)
        if info.status is JobStatus.SUCCEEDED:
            return app.result(ref)
        if info.status.terminal:
            raise _failure(ref, info, app.events(ref))
        asyncio.run(app.clock.sleep_until(poll.next_look(info, app.clock.now())))
