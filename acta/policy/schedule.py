"""Recurring schedules as values: when they fire, and what a late tick does (pure, no clock).

A schedule is an interval (``every="5m"``) or a cron expression in a named IANA time zone
(``cron="30 2 * * *", zone="Europe/Paris"``). Cron's DST rules live in ``acta.policy.cron``.
An interval is elapsed time on a grid anchored at the Unix epoch in UTC: ``every="5m"`` fires at
:00, :05, :10 of every hour whatever the zone, so peers compute the same instants and
coincident schedules meet; a zone is refused with an interval (use cron for local wall time).

Every instant in and out is an aware datetime; results are in UTC. The ledger keeps, per
schedule, a cursor: the latest scheduled instant already fired (for a new schedule, the instant
it was armed). ``due`` turns a cursor and the time now into at most one firing; ``coalesce``
does that for the schedules of one recurring slot, so the ones due together fire as one
execution that names them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice, takewhile
from typing import Final, Literal, get_args
from zoneinfo import ZoneInfo

from acta.duration import format_duration, parse_duration
from acta.errors import InvalidPolicyError
from acta.instant import RULE as INSTANT_RULE
from acta.policy.cron import after as cron_after
from acta.policy.cron import at_or_before as cron_at_or_before
from acta.policy.cron import parse_cron, parse_zone

__all__ = [
    "MAX_PREVIEW",
    "MISSED_CAP",
    "Due",
    "Execution",
    "Misfire",
    "Schedule",
    "coalesce",
    "parse_schedules",
]

Misfire = Literal["skip", "catch_up"]
_MISFIRES: Final = get_args(Misfire)
_MISFIRE_RULE: Final = "'skip' (the default: drop all but the latest missed instant) or 'catch_up'"
_EVERY_RULE: Final = "an interval of at least one second, in whole milliseconds, e.g. '30s', '5m'"

MIN_INTERVAL: Final = timedelta(seconds=1)
MAX_PREVIEW: Final = 1000
MISSED_CAP: Final = 1000
"""``Due.missed`` counts at most this many; a count at the cap means "at least this many"."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_US: Final = timedelta(microseconds=1)
_MS_US: Final = 1000
_NAME: Final = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_NAME_RULE: Final = "1 to 64 characters: lowercase letters, digits, '_', '.', '-'"


def _utc(value: object, name: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidPolicyError(name, f"got {value!r}", INSTANT_RULE)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidPolicyError(name, f"got {value!r}", INSTANT_RULE) from None


@dataclass(frozen=True, slots=True)
class Due:
    """What one schedule does at one tick (see :meth:`Schedule.due`).

    ``fire`` holds the scheduled instants to fire now: empty, or exactly one. ``cursor`` is the
    schedule's new cursor (the latest due instant once fired; unchanged otherwise), ``next`` the
    next instant strictly after the cursor, and ``missed`` how many due instants had no firing
    of their own (dropped by ``skip``, folded into the one firing by ``catch_up``), counted up to
    ``MISSED_CAP``.
    """

    fire: tuple[datetime, ...]
    next: datetime
    cursor: datetime
    missed: int = 0


@dataclass(frozen=True, slots=True, init=False)
class Schedule:
    """An interval or a cron expression in a time zone, with a misfire policy.

    Build it with exactly one of ``every`` (a duration of at least one second, whole
    milliseconds) and ``cron`` (five fields). ``zone`` (an IANA name, default ``"UTC"``) applies
    to cron only. ``misfire`` is ``"skip"`` (default) or ``"catch_up"``; see :meth:`due`.
    Bad input is an InvalidPolicyError (a ValidationError) naming the argument.
    """

    every: timedelta | None
    cron: str | None
    zone: str
    misfire: Misfire
    _tz: ZoneInfo = field(repr=False, compare=False)

    def __init__(
        self,
        *,
        every: str | int | float | timedelta | None = None,
        cron: str | None = None,
        zone: str = "UTC",
        misfire: str = "skip",
    ) -> None:
        if (every is None) == (cron is None):
            raise InvalidPolicyError(
                "every" if every is not None else "schedule",
                "give exactly one of every= and cron=",
                "every='5m' for an interval, cron='30 2 * * *' for wall-clock times",
            )
        if misfire not in _MISFIRES:
            raise InvalidPolicyError("misfire", f"got {misfire!r}", _MISFIRE_RULE)
        interval: timedelta | None = None
        expr: str | None = None
        if every is not None:
            interval = parse_duration(every, field="every")
            if interval < MIN_INTERVAL:
                raise InvalidPolicyError(
                    "every", f"{every!r} is shorter than one second", _EVERY_RULE
                )
            if interval % timedelta(milliseconds=1):
                raise InvalidPolicyError(
                    "every", f"{every!r} is not a whole number of milliseconds", _EVERY_RULE
                )
            if zone != "UTC":
                raise InvalidPolicyError(
                    "zone",
                    f"{zone!r} given with an interval",
                    "an interval is elapsed time and takes no zone; use cron= for local times",
                )
        else:
            expr = parse_cron(cron)
        tz = parse_zone(zone)
        object.__setattr__(self, "every", interval)
        object.__setattr__(self, "cron", expr)
        object.__setattr__(self, "zone", zone)
        object.__setattr__(self, "misfire", misfire)
        object.__setattr__(self, "_tz", tz)

    @classmethod
    def parse(cls, value: object, field: str = "schedule") -> Schedule:
        """A Schedule as given, or one read from a shorthand: a string of space-separated
        fields or a nickname (``"@daily"``) is cron in UTC, any other string or a ``timedelta``
        an interval (``"5m"``). A duration never holds a space, so a cron with the wrong number
        of fields is reported as a cron, not as a bad interval."""
        if isinstance(value, Schedule):
            return value
        if isinstance(value, str) and (value.strip().startswith("@") or len(value.split()) > 1):
            return cls(cron=value)
        if isinstance(value, (str, timedelta)):
            return cls(every=value)
        raise InvalidPolicyError(
            field,
            f"got {type(value).__name__} {value!r:.60}",
            "a Schedule, a cron string ('0 3 * * *') or an interval ('5m', a timedelta)",
        )

    def declaration(self) -> dict[str, object]:
        """The schedule as the ledger stores it (JSON-ready; see ``from_declaration``)."""
        every = None if self.every is None else self.every // timedelta(milliseconds=1)
        return {"every_ms": every, "cron": self.cron, "zone": self.zone, "misfire": self.misfire}

    @classmethod
    def from_declaration(cls, row: Mapping[str, object]) -> Schedule:
        """The schedule a stored declaration (or a ``schedules`` row) describes."""
        every = row.get("every_ms")
        misfire = row["misfire"]
        if isinstance(misfire, int):  # a row stores the misfire code (0 skip, 1 catch up)
            misfire = _MISFIRES[misfire]
        if every is not None:
            assert isinstance(every, int)
            return cls(every=timedelta(milliseconds=every), misfire=str(misfire))
        return cls(cron=str(row["cron"]), zone=str(row["zone"]), misfire=str(misfire))

    def describe(self) -> str:
        """One short line: ``every 5m`` or ``cron '0 3 * * *' in Europe/Paris``."""
        if self.every is not None:
            return f"every {format_duration(self.every)}"
        return f"cron {self.cron!r} in {self.zone}"

    def next_after(self, instant: datetime) -> datetime:
        """The first firing strictly after ``instant`` (aware), as an aware UTC datetime.

        Raises InvalidPolicyError naming ``instant`` if there is none before the calendar ends.
        """
        at = _utc(instant, "instant")
        for found in self._after(at):
            return found
        raise InvalidPolicyError("instant", f"no firing after {at.isoformat()}", INSTANT_RULE)

    def preview(self, after: datetime, n: int = 10) -> list[datetime]:
        """The next ``n`` firings (1 to 1000) strictly after ``after``, oldest first, in UTC.

        Shorter than ``n`` only where the calendar ends.
        """
        at = _utc(after, "after")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_PREVIEW:
            raise InvalidPolicyError("n", f"got {n!r}", f"a whole number from 1 to {MAX_PREVIEW}")
        return list(islice(self._after(at), n))

    def upcoming(self, last_fired: datetime, now: datetime, n: int = 10) -> list[datetime]:
        """The next ``n`` instants (1 to 1000) this schedule fires for, given its cursor
        ``last_fired`` and the time ``now``, oldest first, in UTC.

        Unlike :meth:`preview`, this follows the misfire policy: instants already due at
        ``now`` are fired as :meth:`due` fires them (``skip``: only the latest; ``catch_up``:
        one firing naming the oldest), so an instant listed here is one that fires.
        """
        ahead = self.preview(last_fired, n)  # checks the arguments; right when none is due
        if not ahead:
            return ahead  # the calendar has ended
        due = self.due(last_fired, now)
        if not due.fire:
            return ahead
        later = self.preview(due.cursor, n - 1) if n > 1 else []
        return [due.fire[0], *later]

    def due(self, last_fired: datetime, now: datetime) -> Due:
        """What to fire at ``now`` given the cursor ``last_fired``.

        The due instants are the firings in ``(last_fired, now]``. None due (including a clock
        stepped back, ``now < last_fired``): nothing fires and the cursor stays, so an instant
        at or before the cursor is never fired again. Otherwise exactly one firing happens and
        the cursor moves to the latest due instant:

        * ``skip`` fires the latest due instant and drops the older ones (forward-only: after
          an outage it fires once, for the most recent tick, not for the backlog);
        * ``catch_up`` fires once for the whole backlog, naming the oldest due instant (the
          handler receives it and can cover the window up to ``cursor``).

        In both cases ``missed`` is the number of due instants other than the one fired for.
        """
        cursor = _utc(last_fired, "last_fired")
        clock = _utc(now, "now")
        first = self.next_after(cursor)
        if first > clock:
            return Due(fire=(), next=first, cursor=cursor)
        latest = self._at_or_before(clock)
        if latest is None or latest < first:  # pragma: no cover - the search found first
            latest = first
        missed = 0
        if latest != first:
            later = takewhile(lambda at: at <= latest, self._after(first))
            missed = sum(1 for _ in islice(later, MISSED_CAP))
        fired = latest if self.misfire == "skip" else first
        return Due(fire=(fired,), next=self.next_after(latest), cursor=latest, missed=missed)

    def _after(self, at: datetime) -> Iterator[datetime]:
        if self.every is not None:
            step = self.every // _US
            k = (at - _EPOCH) // _US // step + 1
            try:
                while True:
                    yield _EPOCH + k * step * _US
                    k += 1
            except OverflowError:
                return
        else:
            assert self.cron is not None
            yield from cron_after(self.cron, self._tz, at)

    def _at_or_before(self, at: datetime) -> datetime | None:
        if self.every is not None:
            step = self.every // _US
            try:
                return _EPOCH + (at - _EPOCH) // _US // step * step * _US
            except OverflowError:  # pragma: no cover - before year 1
                return None
        assert self.cron is not None
        return cron_at_or_before(self.cron, self._tz, at)


@dataclass(frozen=True, slots=True)
class Execution:
    """What one run of a recurring slot fires (see :func:`coalesce`).

    ``fired`` maps the name of each schedule that fires to its :class:`Due`, in name order;
    empty means the slot woke early and fires nothing. ``cursors`` is every schedule's cursor
    after this execution and ``next`` the earliest next instant among them: when to re-arm.
    """

    fired: dict[str, Due]
    cursors: dict[str, datetime]
    next: datetime


def coalesce(
    schedules: Mapping[str, Schedule], cursors: Mapping[str, datetime], now: datetime
) -> Execution:
    """Which of the named ``schedules`` fire at ``now``, as one execution.

    Each schedule is judged by :meth:`Schedule.due` from its cursor. A schedule with no cursor
    is new: it is armed at ``now`` (its cursor becomes ``now``) and fires from its next
    instant on. Cursors of names not in ``schedules`` (removed schedules) are dropped.
    """
    clock = _utc(now, "now")
    if not schedules:
        raise InvalidPolicyError("schedules", "is empty", "at least one named schedule")
    fired: dict[str, Due] = {}
    moved: dict[str, datetime] = {}
    wake: datetime | None = None
    for name in sorted(schedules):
        schedule = schedules[name]
        if not isinstance(name, str) or not name:
            raise InvalidPolicyError("schedules", f"got the name {name!r}", "non-empty names")
        if not isinstance(schedule, Schedule):
            raise InvalidPolicyError(f"schedules[{name!r}]", f"got {schedule!r}", "a Schedule")
        start = cursors.get(name)
        due = schedule.due(clock if start is None else start, clock)
        if due.fire:
            fired[name] = due
        moved[name] = due.cursor
        wake = due.next if wake is None else min(wake, due.next)
    assert wake is not None
    return Execution(fired=fired, cursors=moved, next=wake)


SINGLE: Final = "default"
"""The name a definition's only schedule gets when it is given as ``schedule=``."""


def parse_schedules(schedule: object, schedules: object) -> tuple[tuple[str, Schedule], ...]:
    """A definition's ``schedule=`` / ``schedules=`` options as (name, Schedule) pairs, sorted.

    ``schedule`` is one schedule (named ``default``); ``schedules`` a mapping of names to
    schedules. At most one of the two may be given.
    """
    if schedule is not None and schedules is not None:
        raise InvalidPolicyError(
            "schedules", "both schedule= and schedules= given", "one schedule=, or schedules={}"
        )
    if schedule is not None:
        return ((SINGLE, Schedule.parse(schedule)),)
    if schedules is None:
        return ()
    if not isinstance(schedules, Mapping) or not schedules:
        raise InvalidPolicyError(
            "schedules", f"got {schedules!r:.60}", "a non-empty dict of names to schedules"
        )
    pairs: list[tuple[str, Schedule]] = []
    for name, value in schedules.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidPolicyError("schedules", f"got the name {name!r:.60}", _NAME_RULE)
        pairs.append((name, Schedule.parse(value, f"schedules[{name!r}]")))
    return tuple(sorted(pairs, key=lambda pair: pair[0]))
