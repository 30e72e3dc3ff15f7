"""Instants and durations as people read them on the dashboard's pages.

An instant is shown relative to now ("3 min ago", "in 2 h") inside ``<time datetime=...>``,
with the exact instant in UTC as its title. The dashboard's script rewrites that title in the
viewer's own time zone (and, where a schedule names one, in the schedule's zone too); without
script the UTC title stays, which is exact. "Now" is the application's clock (acta/clock.py
through ``app.clock``), so a test clock moves the pages with it. The JSON API keeps ISO 8601
UTC instants: only the HTML is for reading.
"""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup, escape

_UNITS = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))


def duration(seconds: float | int | None) -> str:
    """A span in at most two units: ``45 s``, ``3 min 20 s``, ``2 h 5 min``, ``3 d 4 h``;
    under a second in milliseconds."""
    if seconds is None:
        return ""
    total = abs(float(seconds))
    if total < 1:
        return f"{round(total * 1000)} ms"
    whole, parts = int(total), []
    for size, unit in _UNITS:
        if whole >= size:
            parts.append(f"{whole // size} {unit}")
            whole %= size
        if len(parts) == 2 or (parts and whole == 0):
            break
    return " ".join(parts)


def parse(value: str | datetime | None) -> datetime | None:
    """An ISO 8601 instant (as ``fact`` writes them) or a datetime, as aware UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        instant = value
    else:
        try:
            instant = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)


def relative(instant: datetime, now: datetime) -> str:
    """``just now``, ``5 min ago`` or ``in 2 h``: the coarse unit first, as people say it."""
    delta = (instant - now).total_seconds()
    if abs(delta) < 1:
        return "just now"
    size, unit = next(((s, u) for s, u in _UNITS if abs(delta) >= s), (1, "s"))
    said = f"{int(abs(delta) // size)} {unit}"
    return f"in {said}" if delta > 0 else f"{said} ago"


def exact(instant: datetime) -> str:
    """``2026-01-31 12:00:05 UTC`` (milliseconds only when there are some)."""
    shown = f"{instant:%Y-%m-%d %H:%M:%S}"
    if instant.microsecond:
        shown += f".{instant.microsecond // 1000:03d}"
    return f"{shown} UTC"


def when(value: str | datetime | None, now: datetime, zone: str | None = None) -> Markup:
    """The ``<time>`` element for an instant (empty for none): relative text, exact title,
    ``data-zone`` naming a schedule's own zone for the script to add."""
    instant = parse(value)
    if instant is None:
        return Markup("")
    iso = instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    extra = Markup(' data-zone="{}"').format(zone) if zone else Markup("")
    return Markup('<time datetime="{}" title="{}" data-testid="time"{}>{}</time>').format(
        iso, exact(instant), extra, escape(relative(instant, now))
    )
