"""What a handler can hand back instead of a result, and what durable waits answer.

A handler ends its run deliberately by returning one of the directives: ``Reschedule`` (run
again later, no attempt spent), ``Fail`` (fail for good, no retry), ``Cancel`` or ``Pause``
(wait for an operator). They are values, not exceptions: each becomes one transition with an
event that carries its reason. The other classes are the answers of the durable waits on the
job context and of ``app.signal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Generic, TypeVar

from acta.duration import parse_duration
from acta.errors import ValidationError
from acta.ids import JobRef

T = TypeVar("T")

_REASON_MAX = 1000


def _reason(reason: str, field: str = "reason") -> str:
    if not isinstance(reason, str) or not reason.strip() or len(reason) > _REASON_MAX:
        raise ValidationError(field, f"got {reason!r:.80}", f"1 to {_REASON_MAX} characters")
    return reason


class Directive:
    """Base of the values a handler may return to end its run deliberately."""

    reason: str


@dataclass(frozen=True, init=False)
class Reschedule(Directive):
    """Run again at ``at`` (or after ``delay``): no attempt is spent, the handler re-enters
    from the top, durable steps keep their results.

    ``delay`` is a duration in any form acta takes one (``"10m"``, seconds as a number, a
    ``timedelta``; zero allowed); it is kept as a ``timedelta``."""

    at: datetime | None
    delay: timedelta | None
    reason: str

    def __init__(
        self,
        at: datetime | None = None,
        delay: timedelta | str | float | None = None,
        reason: str = "rescheduled by its handler",
    ) -> None:
        if (at is None) == (delay is None):
            raise ValidationError("Reschedule", "give exactly one of at= and delay=")
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
            raise ValidationError("at", f"got {at!r}", "a timezone-aware datetime")
        wait = None if delay is None else parse_duration(delay, field="delay", allow_zero=True)
        object.__setattr__(self, "at", at)
        object.__setattr__(self, "delay", wait)
        object.__setattr__(self, "reason", _reason(reason))


@dataclass(frozen=True)
class Fail(Directive):
    """Fail the job for good with ``reason`` (no retry, whatever attempts are left)."""

    reason: str

    def __post_init__(self) -> None:
        _reason(self.reason)


@dataclass(frozen=True)
class Cancel(Directive):
    """Cancel the job, with ``reason``."""

    reason: str

    def __post_init__(self) -> None:
        _reason(self.reason)


@dataclass(frozen=True)
class Pause(Directive):
    """Park the job until an operator resumes it (``app.resume(ref)``, ``acta jobs resume``)."""

    reason: str

    def __post_init__(self) -> None:
        _reason(self.reason)


@dataclass(frozen=True, slots=True)
class SignalResult(Generic[T]):
    """What ``try_wait_signal`` answers: the payload, or ``timed_out`` and no payload."""

    received: bool
    value: T | None = None

    @property
    def timed_out(self) -> bool:
        return not self.received


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """One child as its parent sees it after waiting: its ref, name, status and result."""

    ref: JobRef
    name: str | None
    job: str
    status: str
    """The child's status label: ``succeeded``, ``failed``, ``cancelled`` (or still running
    when a bounded wait gave up on it: then ``timed_out`` is True and it has been cancelled)."""
    result: Any = None
    timed_out: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


class SignalOutcome(StrEnum):
    """What ``app.signal`` did."""

    RELEASED = "released"
    """The job was suspended waiting for this signal: it is ready again."""
    STORED = "stored"
    """Kept for the job: its next wait for this name returns it at once."""
    ALREADY_SENT = "already-sent"
    """A signal of this name was sent before; the first one stands and this one was dropped."""
    JOB_FINISHED = "job-finished"
    """The job is terminal: nothing was stored."""
    NO_SUCH_JOB = "no-such-job"
    """No job has this ref in the namespace: nothing was stored."""


@dataclass(frozen=True, slots=True)
class Firing:
    """What a run of a scheduled job was fired for (``ctx.firing``; None for an enqueued run).

    ``at`` is the scheduled instant the handler works for (UTC): the on-time tick, the latest
    due one when a late ``skip`` schedule dropped older ones, the oldest due one for
    ``catch_up``, or the instant an operator triggered it. ``schedules`` names the schedules
    that fired together (coalesced into this one run), ``missed`` counts the due instants this
    run covers without a run of its own, and ``through`` is the latest instant it covers (equal
    to ``at`` unless a ``catch_up`` schedule is catching up). ``triggered`` marks a run an
    operator asked for. A retried or restarted firing is the same firing: same values.
    """

    at: datetime
    schedules: tuple[str, ...]
    missed: int = 0
    through: datetime | None = None
    triggered: bool = False
