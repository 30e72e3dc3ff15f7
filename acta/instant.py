"""Instants a caller hands acta (a job's not_before, a reader's time filter): checked once.

An instant must be timezone-aware and, once converted to UTC and rounded up to the ledger's
millisecond precision, fall within years 1 to 9999, the range both SQLite text and PostgreSQL
timestamptz store. A datetime such as 9999-12-31T23:00-05:00 is valid Python but not a storable
instant; it is refused here, the same on every provider, instead of failing in a driver.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from acta.errors import ValidationError

RULE = "a timezone-aware datetime between years 1 and 9999 in UTC"


def check_instant(value: object, field: str) -> datetime:
    """``value`` as an aware UTC datetime rounded up to a whole millisecond (never earlier
    than asked), or a ValidationError naming ``field``."""
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValidationError(field, f"got {value!r}", RULE)
    try:
        utc = value.astimezone(UTC)
        return utc + timedelta(microseconds=-utc.microsecond % 1000)
    except (OverflowError, ValueError):
        raise ValidationError(field, f"got {value!r}", RULE) from None


NO_TIMER = datetime(9999, 1, 1, tzinfo=UTC)
"""next_run_at of a job waiting with no timeout: far enough that nothing claims it by time.
The ledger's queries, and ``timer``, read anything from year 9000 on as "no timer"."""

_NO_TIMER_FROM = 9000


def timer(next_run_at: datetime) -> datetime | None:
    """When a job comes back by time alone; None for the no-timer placeholder."""
    return None if next_run_at.year >= _NO_TIMER_FROM else next_run_at
