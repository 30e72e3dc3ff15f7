"""Waiting from outside for a job's outcome: poll its row on the application's clock.

Polling starts fast (a short job's result comes back within milliseconds) and backs off to one
poll a second, so a long wait costs one small read per second. The clock is the application's
own: a test clock decides when a wait times out.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol

from acta.clock import Clock
from acta.duration import parse_duration
from acta.errors import JobFailedError, WaitTimeoutError
from acta.ids import JobRef
from acta.model.codes import EventCode, JobStatus
from acta.model.rows import EventInfo, JobInfo


class Watched(Protocol):
    """What a wait needs of the application: its clock and its reads."""

    @property
    def clock(self) -> Clock: ...
    async def get_async(self, ref: JobRef | str) -> JobInfo: ...
    async def result_async(self, ref: JobRef | str) -> Any: ...
    async def events_async(self, ref: JobRef | str) -> list[EventInfo]: ...


_FIRST_POLL = timedelta(milliseconds=5)
_MAX_POLL = timedelta(seconds=1)


async def wait_for(app: Watched, ref: JobRef, timeout: Any) -> Any:
    """The job's result once it is terminal (see ``Acta.wait_async``)."""
    limit = None if timeout is None else parse_duration(timeout, field="timeout")
    clock = app.clock
    until = None if limit is None else clock.now() + limit
    poll = _FIRST_POLL
    while True:
        info = await app.get_async(ref)
        if info.status is JobStatus.SUCCEEDED:
            return await app.result_async(ref)
        if info.status.terminal:
            events = await app.events_async(ref)
            ended = (EventCode.FAILED, EventCode.CANCELLED)
            why = next((e.message for e in reversed(events) if e.code in ended), None)
            raise JobFailedError(ref, info.status.label, why)
        now = clock.now()
        if until is not None and now >= until:
            raise WaitTimeoutError(
                f"job {ref} is still {info.status.label} after {limit}; it goes on running"
            )
        wake = now + poll if until is None else min(now + poll, until)
        await clock.sleep_until(wake)
        poll = min(poll * 2, _MAX_POLL)
