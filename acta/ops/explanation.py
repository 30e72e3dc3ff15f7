"""``Explanation``: what ``explain`` answers about one job, and the ``Verdict`` codes it uses.

An explanation is a plain value: a stable verdict code (for scripts and the dashboard), a
sentence saying why the job is where it is, the next step (what happens next, or what an
operator can do), and the facts behind both as a flat dict of JSON values (instants as ISO
8601 text in UTC to the millisecond, durations in seconds). ``to_data()`` is exactly what
``acta jobs explain --json`` prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """Why a job is where it is. Codes are stable; later capabilities add members."""

    DEFINITION_PAUSED = "definition-paused"
    """An operator paused (or retired) its job name: claims skip it."""
    NAMESPACE_PAUSED = "namespace-paused"
    """An operator paused its namespace: claims skip every job of it."""
    SCHEDULE_SLOT = "schedule-slot"
    """The recurring slot a job's schedules fire through: it waits for their next instant."""
    WAITING_FOR_RUN_AT = "waiting-for-run-at"
    """Ready, but its run-at (a delay, a not-before, a handler's reschedule) is ahead."""
    READY = "ready"
    """Due now: the next free worker claims it, after the jobs ahead of it."""
    RETRYING = "retrying"
    """An attempt failed; the next one is scheduled."""
    BOUNCED = "bounced"
    """A concurrency gate or a rate turned it away; it comes back at its run-at."""
    NO_WORKER_ALIVE = "no-worker-alive"
    """Due, but no worker of its namespace is alive to claim it."""
    NO_HANDLER = "no-handler"
    """Due, but every live worker of its namespace lacks a handler for its definition."""
    BLOCKED_IN_LANE = "blocked-in-lane"
    """Behind the head of its lane."""
    DISPATCHED = "dispatched"
    """Claimed under a live lease; its handler has not started yet."""
    EXECUTING = "executing"
    """Its handler runs under a live lease."""
    HELD_BY_SILENT_WORKER = "held-by-silent-worker"
    """Leased to a worker that stopped heartbeating; recovery takes it back when the lease
    lapses."""
    HELD_BY_LOST_WORKER = "held-by-lost-worker"
    """Leased to a worker that is dead or gone, or under a lapsed lease: recovery takes it
    back on its next pass."""
    SLEEPING = "sleeping"
    WAITING_FOR_SIGNAL = "waiting-for-signal"
    WAITING_FOR_CHILDREN = "waiting-for-children"
    SUSPENDED = "suspended"
    """Parked on a durable wait the ledger no longer names."""
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why one job is where it is, and what happens next."""

    job_ref: str
    name: str
    status: str
    """The job's status label (``ready``, ``failed``...)."""
    verdict: Verdict
    summary: str
    next_step: str
    facts: dict[str, Any] = field(default_factory=dict)
    """The evidence: JSON values only (instants as ISO text, durations in seconds)."""

    def to_data(self) -> dict[str, Any]:
        return {
            "job_ref": self.job_ref,
            "name": self.name,
            "status": self.status,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "next_step": self.next_step,
            "facts": dict(self.facts),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_data(), ensure_ascii=False, sort_keys=True)

    def __str__(self) -> str:
        return f"{self.verdict.value}: {self.summary} Next: {self.next_step}"


def fact(value: Any) -> Any:
    """A value as a fact: instants as ISO 8601 text, durations as seconds, the rest as is."""
    if isinstance(value, datetime):
        # The CLI's JSON form of an instant: UTC, milliseconds, "Z".
        utc = value.astimezone(UTC).isoformat(timespec="milliseconds")
        return utc.replace("+00:00", "Z")
    if isinstance(value, timedelta):
        return round(value.total_seconds(), 3)
    return value


def facts(**values: Any) -> dict[str, Any]:
    """Facts from keyword arguments, converted by ``fact`` (None values are kept: a fact that
    is known to be absent is still a fact)."""
    return {key: fact(value) for key, value in values.items()}


def when(instant: datetime | None) -> str:
    """An instant for a sentence: ``2026-01-01 12:00:00 UTC``."""
    if instant is None:
        return "never"
    utc = instant.astimezone(UTC)
    # Milliseconds only when there are some: a bounce or a backoff is often sub-second.
    shown = (
        utc.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if utc.microsecond else f"{utc:%Y-%m-%d %H:%M:%S}"
    )
    return f"{shown} UTC"


def span(delta: timedelta) -> str:
    """A duration for a sentence: ``2.5s``, ``3m 10s``, ``2h 5m``, ``3d 4h``."""
    seconds = max(0.0, delta.total_seconds())
    if seconds < 60:
        return f"{seconds:.3g}s" if seconds < 10 else f"{int(seconds)}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def first_line(text: str | None) -> str | None:
    """The first line of a stored message (an error's traceback follows it), for a sentence."""
    return None if text is None else text.strip().split("\n", 1)[0]
