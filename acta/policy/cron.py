"""Cron expressions in a named time zone: parsing (by cronsim) and the DST rules (here).

cronsim does the calendar arithmetic; acta does not parse cron itself. cronsim's own DST
handling depends on the expression: a 5-field expression with a fixed minute and hour is walked
in naive local time and an imaginary result is nudged forward (Debian cron's rule), while any
other expression is walked in real time, so ``*/30 2 * * *`` fires nothing on a spring-forward
day and twice per repeated half hour on a fall-back day. acta wants one rule for every
expression, so cronsim is only ever given a *naive* local wall time (it then does pure calendar
stepping, no zone at all) and each local match is turned into an instant here:

* a local time that exists once is that instant;
* a local time repeated by a fall-back is its first occurrence (``fold=0``): the second pass
  through the repeated hour fires nothing;
* a local time skipped by a spring-forward gap fires at the gap's end, the first instant that
  exists after it (02:30 in Europe/Paris on the change day fires at 03:00 local). Several skipped
  times, and the first real time after the gap, fall on that one instant and fire once.

Read from local time to UTC this mapping never goes backwards, which is what lets ``after`` and
``at_or_before`` below search from the local time of their argument.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Final
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from acta.errors import InvalidPolicyError

CRON_RULE: Final = (
    "five space-separated fields: minute hour day-of-month month day-of-week, "
    "e.g. '30 2 * * *' or '*/15 9-17 * * MON-FRI'"
)
ZONE_RULE: Final = "an IANA time zone name such as 'UTC', 'Europe/Paris' or 'America/New_York'"

_US: Final = timedelta(microseconds=1)
_SECOND: Final = timedelta(seconds=1)
# Where parse() asks for a first firing, to refuse an expression that never fires.
_PROBE: Final = datetime(2000, 1, 1)  # noqa: DTZ001 - naive local wall time, on purpose


# Cron's nicknames, as the five fields they stand for (what Vixie cron and cronsim mean).
NICKNAMES: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def parse_cron(expr: object, field: str = "cron") -> str:
    """``expr`` with its whitespace normalised (a nickname such as ``@daily`` as its five
    fields), or an InvalidPolicyError naming ``field`` and saying what is wrong."""
    if not isinstance(expr, str):
        raise InvalidPolicyError(field, f"got {type(expr).__name__}, not a string", CRON_RULE)
    nickname = expr.strip().lower()
    if nickname.startswith("@"):
        if nickname in NICKNAMES:
            return NICKNAMES[nickname]
        known = ", ".join(NICKNAMES)
        why = (
            "runs at a machine's boot, which a ledger schedule has no notion of"
            if nickname == "@reboot"
            else "is not a cron nickname acta knows"
        )
        raise InvalidPolicyError(
            field, f"{expr.strip()!r} {why}", f"one of {known}, or {CRON_RULE}"
        )
    parts = expr.split()
    if len(parts) != 5:
        # cronsim also takes a leading seconds field; acta's schedules are to the minute.
        raise InvalidPolicyError(field, f"{expr!r} has {len(parts)} fields, not 5", CRON_RULE)
    text = " ".join(parts)
    try:
        next(CronSim(text, _PROBE))
    except CronSimError as exc:
        # cronsim says "Bad minute", "Bad day-of-week": name the field it refused.
        what = str(exc).removeprefix("Bad ").strip() or "an expression"
        raise InvalidPolicyError(
            field, f"{expr!r} is not a valid cron expression: its {what} field", CRON_RULE
        ) from None
    except StopIteration:
        raise InvalidPolicyError(field, f"{expr!r} never fires", CRON_RULE) from None
    except (ValueError, IndexError, KeyError, TypeError, OverflowError):
        raise InvalidPolicyError(
            field, f"{expr!r} is not a valid cron expression", CRON_RULE
        ) from None
    return text


def parse_zone(name: object, field: str = "zone") -> ZoneInfo:
    """The time zone called ``name``, or an InvalidPolicyError naming ``field``."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidPolicyError(field, f"got {name!r}", ZONE_RULE)
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError, OSError):
        # ZoneInfoNotFoundError is a KeyError; a path-like key is a ValueError.
        raise InvalidPolicyError(field, f"unknown time zone {name!r}", ZONE_RULE) from None


def _local(instant: datetime, tz: ZoneInfo) -> datetime:
    return instant.astimezone(tz).replace(tzinfo=None)


def resolve(wall: datetime, tz: ZoneInfo) -> datetime:
    """The instant (aware, UTC) at which the naive local time ``wall`` fires in ``tz``."""
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if _local(first, tz) == wall:
        # It exists; fold=0 picks the first occurrence of a repeated time.
        return first
    # It is imaginary: in a gap. For a gap time, fold=1 reads it with the offset after the
    # change and lands before the change; fold=0 reads it with the offset before and lands
    # after. The change itself, the first instant whose local time is past ``wall``, lies
    # between: find it to the microsecond by halving.
    lo = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    hi = first
    while hi - lo > _US:
        mid = lo + (hi - lo) // 2
        if _local(mid, tz) > wall:
            hi = mid
        else:
            lo = mid
    return hi


def after(expr: str, tz: ZoneInfo, instant: datetime) -> Iterator[datetime]:
    """The firings of ``expr`` strictly after ``instant`` (aware UTC), in order, each once.

    Ends quietly where cronsim gives up (no match in 50 years) or the calendar ends.
    """
    # A local time at or before the instant's own cannot fire after it (the mapping never
    # goes backwards and the instant's local time maps to the instant or earlier), so the
    # walk starts there. cronsim yields whole seconds strictly after its start.
    last = instant
    try:
        for wall in CronSim(expr, _local(instant, tz)):
            at = resolve(wall, tz)
            if at > last:
                yield at
                last = at
    except OverflowError:
        return


def at_or_before(expr: str, tz: ZoneInfo, instant: datetime) -> datetime | None:
    """The latest firing of ``expr`` at or before ``instant`` (aware UTC), if any."""
    try:
        return _at_or_before(expr, tz, instant)
    except OverflowError:
        return None


def _at_or_before(expr: str, tz: ZoneInfo, instant: datetime) -> datetime | None:
    local = instant.astimezone(tz)
    # In the second pass of a repeated hour, local times up to the end of the fold still map
    # (by their first occurrence) to instants at or before this one: widen the start by the
    # fold's width. Elsewhere the two offsets agree and the width is zero.
    wall = local.replace(tzinfo=None)
    offset_first = wall.replace(tzinfo=tz, fold=0).utcoffset()
    offset_here = local.utcoffset()
    assert offset_first is not None and offset_here is not None
    upper = wall + max(offset_first - offset_here, timedelta(0))
    # Reversed, cronsim yields whole seconds strictly before its start.
    for found in CronSim(expr, upper.replace(microsecond=0) + _SECOND, reverse=True):
        at = resolve(found, tz)
        if at <= instant:
            return at
    return None
