"""The gates' rules: rates, which gates a job carries, the meter's arithmetic, the bounce.

Four gates, one axis each: a lane orders, a concurrency key or limit bounds how many run at
once, a rate limit bounds how often they start. This module is pure: it parses and validates
what users declare, and decides from a meter row's instants whether a start may happen now.
The rows themselves (lanes, gates, holds, meters) are read and written by ``acta.ledger.gate``.

The meter is a GCRA (a token bucket kept as instants rather than counts) run twice. The
*booking* horizon hands out turns in arrival order, so an early arrival books the next free
instant and comes back for it instead of racing again; the *admission* horizon is kept over
the instants starts really happened, so turns that come back late (a busy fleet, a paused
test clock) are still spread out: starts in any window of t seconds never exceed
burst + rate x t, which is the envelope the certification checks. A late turn that finds no
room books a new turn of its own behind both horizons, so a crowd of late turns is served one
per interval, each job coming back once, instead of all racing for the same instant.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from acta.errors import InvalidPolicyError
from acta.model.codes import GateKind

_RATE = re.compile(r"^\s*([0-9]+)\s*/\s*(s|m|h)\s*$")
_PERIODS = {"s": timedelta(seconds=1), "m": timedelta(minutes=1), "h": timedelta(hours=1)}
_RATE_RULE = (
    "'N/s', 'N/m' or 'N/h' with N a whole number from 1, at most 1000 a second, like '10/s'"
)
_MS = timedelta(milliseconds=1)
MAX_CONCURRENCY_LIMIT = 100_000

BOUNCE_DELAY = timedelta(milliseconds=500)
"""How far out a job turned away by a concurrency gate is re-armed, before jitter (0.5x-1.5x):
long enough not to spin on a held key, short enough that a freed key is taken soon."""


@dataclass(frozen=True, slots=True)
class Rate:
    """A rate limit: ``count`` starts per ``period``."""

    count: int
    period: timedelta

    @classmethod
    def parse(cls, text: object, field: str = "rate_limit") -> Rate:
        """Parse ``'10/s'``, ``'600/m'`` or ``'5/h'``; anything else is an InvalidPolicyError."""
        if isinstance(text, Rate):
            return text
        m = _RATE.match(text) if isinstance(text, str) else None
        if m is None:
            raise InvalidPolicyError(field, f"got {text!r}", _RATE_RULE)
        count, period = int(m.group(1)), _PERIODS[m.group(2)]
        # Instants are kept to the millisecond (SQLite's precision), so starts are spaced by
        # whole milliseconds: a thousand a second is the fastest rate that can be honoured.
        if count < 1 or count * _MS > period:
            raise InvalidPolicyError(field, f"got {text!r}", _RATE_RULE)
        return cls(count, period)

    @classmethod
    def from_row(cls, count: int, period_ms: int) -> Rate:
        return cls(count, timedelta(milliseconds=period_ms))

    @property
    def period_ms(self) -> int:
        return self.period // _MS

    @property
    def interval(self) -> timedelta:
        """The spacing of starts once the burst is spent, rounded up to a whole millisecond
        so that every instant the meter stores is exact on every provider (never faster than
        declared: 3/s spaces starts 334 ms apart)."""
        return -(-self.period // (self.count * _MS)) * _MS

    @property
    def burst(self) -> int:
        """What an idle meter admits at once: one second's worth, and never less than one."""
        per_second = self.count * timedelta(seconds=1) / self.period
        return max(1, int(per_second))

    def __str__(self) -> str:
        unit = {v: k for k, v in _PERIODS.items()}.get(self.period)
        return f"{self.count}/{unit}" if unit else f"{self.count}/{self.period_ms}ms"


def validate_concurrency_limit(value: object, field: str = "concurrency_limit") -> int:
    """A concurrency limit is a whole number of slots, at least one."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_CONCURRENCY_LIMIT
    ):
        raise InvalidPolicyError(
            field, f"got {value!r}", f"an int from 1 to {MAX_CONCURRENCY_LIMIT}"
        )
    return value


@dataclass(frozen=True, slots=True)
class JobGates:
    """The admission gates one claimed job must pass before its handler runs.

    ``slot_kind``/``slot_name``: the concurrency gate (a key, or the whole definition) with its
    declared ``slot_limit``; ``meter``: the rate meter's name and its declared ``rate``."""

    slot_kind: int | None = None
    slot_name: str | None = None
    slot_limit: int = 1
    meter: str | None = None
    rate: Rate | None = None

    @property
    def any(self) -> bool:
        return self.slot_name is not None or self.meter is not None


def gates_for(
    definition: str,
    concurrency_key: str | None,
    concurrency_limit: int | None,
    rate: Rate | None,
    rate_key: str | None,
) -> JobGates:
    """Which gates a job passes: its key (with the definition's limit, else one slot), or the
    definition's limit across the definition; and the meter named by rate_key or the
    definition."""
    slot_kind: int | None = None
    slot_name: str | None = None
    if concurrency_key is not None:
        slot_kind, slot_name = GateKind.KEY, concurrency_key
    elif concurrency_limit is not None:
        slot_kind, slot_name = GateKind.JOB, definition
    meter = None if rate is None else (rate_key or definition)
    return JobGates(slot_kind, slot_name, concurrency_limit or 1, meter, rate)


NO_GATES = JobGates()


def bounce_delay(rng: random.Random) -> timedelta:
    """A short, jittered delay for a job a concurrency gate turned away, so that the losers of
    one key do not all come back in the same instant."""
    return BOUNCE_DELAY * rng.uniform(0.5, 1.5)


@dataclass(frozen=True, slots=True)
class MeterState:
    """A meter row's two horizons (None while the meter has never been used)."""

    booked_until: datetime | None
    admitted_until: datetime | None


@dataclass(frozen=True, slots=True)
class MeterDecision:
    """What a meter says to one arrival: start now, or come back at ``until`` holding the turn
    ``ticket``; and the meter's horizons after it."""

    admit: bool
    state: MeterState
    until: datetime | None = None
    ticket: datetime | None = None


def meter_decision(
    now: datetime, state: MeterState, rate: Rate, ticket: datetime | None
) -> MeterDecision:
    """Decide one arrival at ``now``. ``ticket`` is the turn the job booked earlier, if any.

    A job holding a due ticket starts if the admission horizon has room. A job without one,
    or whose turn came back too late to find room (a busy fleet, a paused clock), books the
    next free turn in line: after every turn booked so far and every start so far. So each
    arrival waits for a turn of its own and never races the others for the same instant."""
    step = rate.interval
    tolerance = step * (rate.burst - 1)
    booked, admitted = state.booked_until, state.admitted_until
    if ticket is not None and ticket > now:
        return MeterDecision(False, state, ticket, ticket)  # early for its turn: not yet
    start = now if admitted is None else max(admitted, now)
    if ticket is not None and start - now <= tolerance:
        return MeterDecision(True, MeterState(booked, start + step))
    horizon = max(x for x in (booked, admitted, now) if x is not None)
    turn = max(now, horizon - tolerance)
    booked = horizon + step
    if turn <= now:
        # Room now: the horizon is within the tolerance, so the admission horizon is too.
        return MeterDecision(True, MeterState(booked, start + step))
    return MeterDecision(False, MeterState(booked, admitted), turn, turn)
