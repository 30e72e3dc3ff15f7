"""Operator verbs on schedules: list them, and pause, resume, trigger or override them.

Every change is a compare-and-set on the schedule's version (one an operator read from
``list``), runs in one transaction with a ``schedule-changed`` event on the slot's timeline,
and wakes the slot so that it judges the change at once. A change that finds the row moved
raises ConflictError and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from acta.errors import ConflictError, ScheduleNotFoundError
from acta.ledger.events import Who, event_params
from acta.ledger.schedule import ledger_now, wake_slot
from acta.model.codes import EventCode
from acta.provider.verb import Verb, execute, fetch_all, fetch_one

Row = Mapping[str, Any]
Edit = Callable[[Row, datetime], dict[str, Any]]
"""A change: given a schedule's row and the instant, the columns it gets (others kept)."""

_COLUMNS = (
    "every_ms",
    "cron",
    "zone",
    "misfire",
    "overridden",
    "cursor_at",
    "paused",
    "resume_at",
    "triggered_at",
)


def schedules(
    namespace: str, job_name: str | None, now: datetime | None
) -> Verb[tuple[list[Row], datetime]]:
    """The schedules of a namespace (of one definition, with ``job_name``), and the instant
    they were read at (to judge their next firings by)."""
    rows = yield fetch_all("schedule_rows_of", {"namespace": namespace, "job_name": job_name})
    at = yield from ledger_now(now)
    return [dict(r) for r in rows], at


def change(
    namespace: str,
    job_name: str,
    name: str | None,
    edit: Edit,
    *,
    verb: str,
    who: Who,
    expected_version: int | None,
    now: datetime | None,
) -> Verb[tuple[list[Row], datetime]]:
    """Apply ``edit`` to the schedule ``name`` of ``job_name`` (every schedule of it when
    ``name`` is None) and record it; returns the rows as they are now, and the instant."""
    key = {"namespace": namespace, "job_name": job_name}
    rows = yield fetch_all("schedule_rows_of", key)
    if not rows:
        raise ScheduleNotFoundError(f"job {job_name!r} has no schedule in namespace {namespace!r}")
    # Lock the slot, then read again: a firing that closed meanwhile moved a cursor or cleared
    # a trigger, and an edit computed from the older read would undo it.
    yield fetch_one("slot_lock", {"slot_id": rows[0]["slot_id"]})
    rows = yield fetch_all("schedule_rows_of", key)
    if name is not None:
        known = ", ".join(r["name"] for r in rows)
        rows = [r for r in rows if r["name"] == name]
        if not rows:
            raise ScheduleNotFoundError(
                f"job {job_name!r} has no schedule {name!r} in namespace {namespace!r} "
                f"(it has: {known})"
            )
    at = yield from ledger_now(now)
    for row in rows:
        if expected_version is not None and row["version"] != expected_version:
            raise ConflictError(
                f"schedule {job_name}/{row['name']} is at version {row['version']}, not "
                f"{expected_version}: read it again and decide on what it is now"
            )
        values = {column: row[column] for column in _COLUMNS}
        values["cursor_at"] = row["cursor_at"]
        values.update(edit(row, at))
        params = {**values, "id": row["id"], "version": row["version"], "now_at": at}
        if not (yield execute("schedule_change", params)):
            raise ConflictError(f"schedule {job_name}/{row['name']} changed meanwhile; try again")
        yield execute(
            "insert_event",
            event_params(
                now,
                row["namespace_id"],
                row["slot_id"],
                row["slot_ref"],
                EventCode.SCHEDULE_CHANGED,
                message=f"{verb} {row['name']}: {who.reason}",
                actor=who.actor,
            ),
        )
    yield from wake_slot(rows[0]["slot_id"], now)
    fresh = yield fetch_all("schedule_rows_of", {"namespace": namespace, "job_name": job_name})
    return [dict(r) for r in fresh], at
