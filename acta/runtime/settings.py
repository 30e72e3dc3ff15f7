"""A worker's settings, validated once: executors, profile, liveness, polling and shutdown.

``heartbeat`` is the one liveness knob: the lease is four heartbeats and a worker silent for
seven is dead, by construction, so peers that agree on it agree on everything.

On the ``bulk`` profile, ``flush`` is the window a finished run's settle may wait for others
before they are committed together, and ``flush_max`` the most settles one transaction carries
(a full buffer is flushed at once).

Retention (``sys.retention``) runs every ``retention_every``, purging ``retention_batch`` rows
per transaction, and deletes events older than ``event_retention``; peers should agree on the
event retention, since whichever of them claims the slot applies its own.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from acta.duration import parse_duration
from acta.errors import ValidationError
from acta.names import validate_tags

LEASE_BEATS = 4
DEAD_BEATS = 7
# All start what they claim for free executors in the claim's own commit; buffered also
# claims one batch ahead, started later as executors free up; direct claims only for free ones;
# bulk claims several batches ahead, starts them all in the claim (a crash charges each an
# attempt) and group-commits settles on a flush window (a crash re-runs the window's jobs).
PROFILES = ("buffered", "direct", "bulk")
BULK_AHEAD = 3
"""Batches of executors a bulk worker keeps claimed ahead."""


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """Validated worker settings (see ``Worker`` for what each one means)."""

    executors: int
    profile: str
    listen: bool
    heartbeat: timedelta
    poll: timedelta
    shutdown_grace: timedelta
    host: str
    retry_settles: bool
    retention_every: timedelta = timedelta(hours=1)
    event_retention: timedelta = timedelta(days=365)
    retention_batch: int = 500
    tags: tuple[str, ...] = ()
    """The worker's own tags (a region, a build, a team), shown in workers_view."""
    flush: timedelta = timedelta(milliseconds=50)
    """Bulk only: how long a finished run's settle may wait for others to share its commit."""
    flush_max: int = 1000
    """Bulk only: the most settles one flush commits; a buffer this full is flushed at once."""

    @classmethod
    def build(
        cls,
        *,
        executors: int = 10,
        profile: str = "buffered",
        listen: bool = True,
        heartbeat: str | float | timedelta = 45,
        poll: str | float | timedelta = 1,
        shutdown_grace: str | float | timedelta = 30,
        host: str | None = None,
        retry_settles: bool = True,
        retention_every: str | float | timedelta = "1h",
        event_retention: str | float | timedelta = "365d",
        retention_batch: int = 500,
        tags: Iterable[str] = (),
        flush: str | float | timedelta = 0.05,
        flush_max: int = 1000,
    ) -> WorkerSettings:
        if (
            isinstance(executors, bool)
            or not isinstance(executors, int)
            or not 1 <= executors <= 1000
        ):
            raise ValidationError("executors", f"got {executors!r}", "an int from 1 to 1000")
        if profile not in PROFILES:
            raise ValidationError("profile", f"got {profile!r}", "'buffered', 'direct' or 'bulk'")
        if (
            isinstance(flush_max, bool)
            or not isinstance(flush_max, int)
            or not 1 <= flush_max <= 10_000
        ):
            raise ValidationError("flush_max", f"got {flush_max!r}", "an int from 1 to 10000")
        if (
            isinstance(retention_batch, bool)
            or not isinstance(retention_batch, int)
            or not 1 <= retention_batch <= 10_000
        ):
            raise ValidationError(
                "retention_batch", f"got {retention_batch!r}", "an int from 1 to 10000"
            )
        return cls(
            executors=executors,
            profile=profile,
            listen=bool(listen),
            heartbeat=_positive(heartbeat, "heartbeat", 0.05, 3600),
            poll=_positive(poll, "poll", 0.01, 600),
            shutdown_grace=parse_duration(shutdown_grace, field="shutdown_grace", allow_zero=True),
            host=_host_name(host) if host is not None else socket.gethostname()[:100],
            retry_settles=bool(retry_settles),
            retention_every=_positive(retention_every, "retention_every", 1, 7 * 86400),
            event_retention=_positive(event_retention, "event_retention", 86400, 365 * 86400),
            retention_batch=retention_batch,
            tags=validate_tags(tags),
            # A window longer than a heartbeat would hold finished runs' leases for nothing.
            flush=_positive(flush, "flush", 0.001, 5),
            flush_max=flush_max,
        )

    @property
    def lease(self) -> timedelta:
        return self.heartbeat * LEASE_BEATS

    @property
    def dead_after(self) -> timedelta:
        return self.heartbeat * DEAD_BEATS

    @property
    def prefetch(self) -> int:
        """Claimed-ahead runs: buffered workers keep up to one batch leased and waiting, bulk
        ones several; direct ones start what they claim, so they claim only for free
        executors."""
        if self.profile == "bulk":
            return self.executors * BULK_AHEAD
        return self.executors if self.profile == "buffered" else 0


def _positive(value: Any, field: str, low: float, high: float) -> timedelta:
    td = parse_duration(value, field=field)
    if not low <= td.total_seconds() <= high:
        raise ValidationError(
            field, f"got {td.total_seconds():g} s", f"between {low:g} s and {high:g} s"
        )
    return td


def _host_name(host: object) -> str:
    """An explicit host label is shown to operators and stored: printable text, 1 to 100."""
    if not isinstance(host, str) or not 1 <= len(host) <= 100 or not host.isprintable():
        raise ValidationError("host", f"got {host!r:.80}", "1 to 100 printable characters")
    return host
