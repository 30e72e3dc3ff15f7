"""Durations as people write them ("30s", "1h30m") and as acta prints them.

Policies such as timeouts, backoff and retention accept a duration in several spellings; this
module turns each into a ``timedelta`` with one set of rules and one set of error messages,
and prints a ``timedelta`` back in a canonical form that parses to the same value. It only
converts values: it must not read the clock.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Final

from acta.errors import ValidationError

__all__ = ["MAX_DURATION", "format_duration", "parse_duration"]

MAX_DURATION: Final = timedelta(days=365)
_MAX_US: Final = MAX_DURATION // timedelta(microseconds=1)

# Largest unit first: the order a string must follow, and the order format_duration prints.
_UNIT_US: Final[dict[str, int]] = {
    "d": 86_400_000_000,
    "h": 3_600_000_000,
    "m": 60_000_000,
    "s": 1_000_000,
    "ms": 1_000,
}
_UNIT_RANK: Final[dict[str, int]] = {unit: rank for rank, unit in enumerate(_UNIT_US)}

_RULE: Final = (
    "use seconds as a number (30, 1.5), a timedelta, or a string of <number><unit> groups "
    "with units d, h, m, s, ms, largest first and each at most once, e.g. '500ms', '30s', "
    "'1h30m', '2d'; it must be positive and at most 365 days"
)
_RULE_ZERO_OK: Final = _RULE.replace("it must be positive", "it must not be negative")

_NUMBER: Final = r"[0-9]+(?:\.[0-9]+)?"
_BARE: Final = re.compile(_NUMBER, re.ASCII)
_GROUP: Final = re.compile(rf"({_NUMBER})([^\W\d_]*)")


def parse_duration(
    value: str | int | float | timedelta,
    *,
    field: str = "duration",
    allow_zero: bool = False,
) -> timedelta:
    """Read ``value`` as a duration, or raise :class:`ValidationError` naming ``field``.

    Numbers (and strings holding only a number) are seconds. The result keeps microsecond
    precision; finer fractions are rounded to the nearest microsecond, as ``timedelta`` does.
    Whitespace is allowed around a string but not inside it.
    """
    rule = _RULE_ZERO_OK if allow_zero else _RULE
    if isinstance(value, timedelta):
        micros = value // timedelta(microseconds=1)
    elif isinstance(value, bool):
        # bool is an int subclass; True meaning "one second" would only hide a bug.
        raise ValidationError(field, "got a bool, not a duration", rule)
    elif isinstance(value, int):
        micros = value * 1_000_000
    elif isinstance(value, float):
        if math.isnan(value):
            raise ValidationError(field, "is NaN", rule)
        if math.isinf(value):
            raise ValidationError(field, f"is {value}, not a finite duration", rule)
        micros = _to_micros(Decimal(value))
    elif isinstance(value, str):
        micros = _parse_text(value, field, rule)
    else:
        raise ValidationError(field, f"got {type(value).__name__}, not a duration", rule)

    shown = _show(value)
    if micros < 0:
        raise ValidationError(field, f"{shown} is negative", rule)
    if micros == 0 and not allow_zero:
        raise ValidationError(field, f"{shown} is zero (or rounds to zero)", rule)
    if micros > _MAX_US:
        raise ValidationError(field, f"{shown} is longer than 365 days", rule)
    return timedelta(microseconds=micros)


def _parse_text(text: str, field: str, rule: str) -> int:
    stripped = text.strip()
    shown = _show(text)
    if not stripped:
        raise ValidationError(field, "is empty", rule)
    if stripped.startswith("-"):
        raise ValidationError(field, f"{shown} is negative", rule)
    if _BARE.fullmatch(stripped):
        return _to_micros(Decimal(stripped))

    total = 0
    last_rank = -1
    pos = 0
    while pos < len(stripped):
        match = _GROUP.match(stripped, pos)
        if match is None:
            raise ValidationError(
                field, f"{shown} cannot be read at {stripped[pos : pos + 12]!r}", rule
            )
        number, unit = match.groups()
        # The whole run of letters is the unit, so "5min" or "2hr" is refused as a word
        # rather than read as "5m" followed by junk.
        if unit not in _UNIT_RANK:
            if not unit:
                raise ValidationError(field, f"{shown} has a number without a unit", rule)
            raise ValidationError(field, f"{shown} has the unknown unit {unit!r}", rule)
        end = match.end()
        rank = _UNIT_RANK[unit]
        if rank == last_rank:
            raise ValidationError(field, f"{shown} repeats the unit {unit!r}", rule)
        if rank < last_rank:
            raise ValidationError(field, f"{shown} puts {unit!r} after a smaller unit", rule)
        last_rank = rank
        total += _round(Decimal(number) * _UNIT_US[unit])
        pos = end
    return total


def _to_micros(seconds: Decimal) -> int:
    return _round(seconds * 1_000_000)


def _round(micros: Decimal) -> int:
    return int(micros.to_integral_value(rounding=ROUND_HALF_EVEN))


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def format_duration(td: timedelta) -> str:
    """Print ``td`` compactly, largest unit first: '1h30m', '500ms', '45s', '0s'.

    Whole units are split into groups; a part below one millisecond shows as a decimal
    millisecond ('1.5ms'). The output parses back to the same ``timedelta``. A negative value
    is printed with a leading '-' for logs, though ``parse_duration`` refuses it.
    """
    micros = td // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    parts: list[str] = []
    for unit, size in _UNIT_US.items():
        if unit == "ms":
            continue
        count, micros = divmod(micros, size)
        if count:
            parts.append(f"{count}{unit}")
    if micros:
        whole, frac = divmod(micros, 1_000)
        text = str(whole) if not frac else f"{whole}.{frac:03d}".rstrip("0")
        parts.append(f"{text}ms")
    return sign + "".join(parts)
