"""The operator surface of recurring schedules: list, preview, pause, resume, trigger, override.

``app.schedules`` reads and changes the schedules of one namespace. Arguments are checked
before any statement runs; each change is one transaction, recorded as a ``schedule-changed``
event on the slot's timeline with the reason given, and guarded by the schedule's version where
the caller passes ``expected_version`` (required to override an expression, so two operators
cannot silently overwrite each other). Sync and async twins run the same verbs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from acta.errors import ScheduleNotFoundError, ValidationError
from acta.instant import check_instant
from acta.ledger import schedule_ops
from acta.ledger.control import check_actor, check_reason
from acta.ledger.events import Who
from acta.ledger.facade import Ledger
from acta.ledger.schedule import schedule_of
from acta.model.codes import Misfire
from acta.names import validate_job_name
from acta.policy.schedule import Schedule
from acta.provider.verb import Verb

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """One schedule as the ledger holds it (``schedules_view`` has the same facts)."""

    job_name: str
    name: str
    schedule: Schedule
    """The schedule in force: the code's declaration, or the operator's override."""
    overridden: bool
    last_fired_at: datetime
    """The latest instant fired (for a schedule never fired, the instant it was armed)."""
    next_at: datetime | None
    """The next instant it fires for (the first that ``preview`` lists: after an outage, the
    late instant its misfire policy fires, which is in the past); None while paused with no
    end."""
    firing_at: datetime | None
    """The instant of a firing in progress, if one is."""
    triggered_at: datetime | None
    paused: bool
    paused_until: datetime | None
    slot_ref: str
    """The recurring slot's job ref: its timeline holds one ``fired`` event per firing."""
    version: int


def _info(row: Mapping[str, Any], now: datetime) -> ScheduleInfo:
    schedule = schedule_of(row)
    # What it fires for next, as preview lists it: after an outage, the late instant its
    # misfire policy fires (in the past), not the next one on the calendar.
    next_at: datetime | None = None
    if not row["paused"]:
        next_at = _first(schedule.upcoming(row["cursor_at"], now, 1))
    elif row["resume_at"] is not None:
        next_at = _first(schedule.upcoming(max(row["cursor_at"], row["resume_at"]), now, 1))
    return ScheduleInfo(
        job_name=row["job_name"],
        name=row["name"],
        schedule=schedule,
        overridden=bool(row["overridden"]),
        last_fired_at=row["cursor_at"],
        next_at=next_at,
        firing_at=row["pending_at"],
        triggered_at=row["triggered_at"],
        paused=bool(row["paused"]),
        paused_until=row["resume_at"],
        slot_ref=row["slot_ref"],
        version=row["version"],
    )


Infos = list[ScheduleInfo]
Rows = list[Mapping[str, Any]]
Instants = list[datetime]


class Schedules:
    """Schedules of one namespace of the ledger ``ledger()`` returns."""

    def __init__(self, ledger: Callable[[], Ledger], namespace: str) -> None:
        self._ledger = ledger
        self.namespace = namespace

    def _read(self, make: Callable[[], Verb[T]]) -> T:
        return self._ledger().run(make, name="read")

    async def _read_async(self, make: Callable[[], Verb[T]]) -> T:
        return await self._ledger().run_async(make, name="read")

    # -- reading --------------------------------------------------------------------------

    def list(self, job: str | None = None) -> Infos:
        """Every schedule of the namespace (of ``job`` only, if given), by job and name."""
        make = self._list_verb(job)
        rows, now = self._read(make)
        return [_info(r, now) for r in rows]

    async def list_async(self, job: str | None = None) -> Infos:
        rows, now = await self._read_async(self._list_verb(job))
        return [_info(r, now) for r in rows]

    def _list_verb(self, job: str | None) -> Callable[[], Verb[tuple[Rows, datetime]]]:
        name = None if job is None else validate_job_name(job)
        ns, now = self.namespace, self._ledger().now()
        return lambda: schedule_ops.schedules(ns, name, now)

    def get(self, job: str, name: str = "default") -> ScheduleInfo:
        """One schedule; ScheduleNotFoundError names what the job has instead."""
        return _one(self.list(job), job, name)

    async def get_async(self, job: str, name: str = "default") -> ScheduleInfo:
        return _one(await self.list_async(job), job, name)

    def preview(
        self, job: str, name: str = "default", n: int = 10, after: datetime | None = None
    ) -> Instants:
        """The next ``n`` (1 to 1000) instants the schedule will fire for, by the expression in
        force, judged at the ledger's now: after an outage, the instants already due are listed
        as its misfire policy fires them (``skip``: only the latest), a pause's instants are
        left out. ``after`` previews as if the schedule had last fired then (default: the
        last instant it fired for)."""
        rows, now = self._read(self._list_verb(job))
        return _preview(_one([_info(r, now) for r in rows], job, name), n, after, now)

    async def preview_async(
        self, job: str, name: str = "default", n: int = 10, after: datetime | None = None
    ) -> Instants:
        rows, now = await self._read_async(self._list_verb(job))
        return _preview(_one([_info(r, now) for r in rows], job, name), n, after, now)

    # -- changing -------------------------------------------------------------------------

    def pause(self, job: str, name: str | None = None, **options: Any) -> Infos:
        """Stop firing (``until=``: an instant the pause ends by itself; default, until
        resumed). ``name`` None pauses every schedule of the job. Instants due while paused
        are not fired later. Options: until, reason, actor, expected_version."""
        return self._change(job, name, *_pause(options))

    async def pause_async(self, job: str, name: str | None = None, **options: Any) -> Infos:
        return await self._change_async(job, name, *_pause(options))

    def resume(self, job: str, name: str | None = None, **options: Any) -> Infos:
        """Fire again from now on (what fell due during the pause is not fired).
        Options: reason, actor, expected_version."""
        return self._change(job, name, *_resume(options))

    async def resume_async(self, job: str, name: str | None = None, **options: Any) -> Infos:
        return await self._change_async(job, name, *_resume(options))

    def trigger(self, job: str, name: str = "default", **options: Any) -> ScheduleInfo:
        """Fire once now, outside the schedule (even while paused); the cursor does not move,
        so the next scheduled instant still fires. Options: reason, actor, expected_version."""
        return _one(self._change(job, name, *_trigger(options)), job, name)

    async def trigger_async(self, job: str, name: str = "default", **options: Any) -> ScheduleInfo:
        return _one(await self._change_async(job, name, *_trigger(options)), job, name)

    def override(
        self, job: str, name: str = "default", *, expected_version: int, **options: Any
    ) -> ScheduleInfo:
        """Replace the expression in force (``every=``, or ``cron=`` with ``zone=``; and
        ``misfire=``) until cleared; it applies from now on. Deploys keep it. Options: every,
        cron, zone, misfire, reason, actor."""
        edit = _override(options)
        return _one(self._change(job, name, *edit, expected_version), job, name)

    async def override_async(
        self, job: str, name: str = "default", *, expected_version: int, **options: Any
    ) -> ScheduleInfo:
        edit = _override(options)
        return _one(await self._change_async(job, name, *edit, expected_version), job, name)

    def clear_override(
        self,
        job: str,
        name: str = "default",
        *,
        expected_version: int,
        reason: str = "cleared",
        actor: str = "operator",
    ) -> ScheduleInfo:
        """Go back to the code's declaration, from now on."""
        edit = _clear(reason, actor)
        return _one(self._change(job, name, *edit, expected_version), job, name)

    async def clear_override_async(
        self,
        job: str,
        name: str = "default",
        *,
        expected_version: int,
        reason: str = "cleared",
        actor: str = "operator",
    ) -> ScheduleInfo:
        edit = _clear(reason, actor)
        return _one(await self._change_async(job, name, *edit, expected_version), job, name)

    def _change_verb(
        self,
        job: str,
        name: str | None,
        verb: str,
        edit: schedule_ops.Edit,
        who: Who,
        expected: int | None,
    ) -> Callable[[], Verb[tuple[Rows, datetime]]]:
        job = validate_job_name(job)
        if name is not None:
            name = _name(name)
        if expected is not None and (
            isinstance(expected, bool) or not isinstance(expected, int) or expected < 1
        ):
            raise ValidationError(
                "expected_version", f"got {expected!r}", "the version read from list() or get()"
            )
        if expected is not None and name is None:
            raise ValidationError(
                "name", "expected_version given for every schedule at once", "name one schedule"
            )
        ns, now = self.namespace, self._ledger().now()
        return lambda: schedule_ops.change(
            ns, job, name, edit, verb=verb, who=who, expected_version=expected, now=now
        )

    def _change(
        self,
        job: str,
        name: str | None,
        verb: str,
        edit: schedule_ops.Edit,
        who: Who,
        expected: int | None = None,
    ) -> Infos:
        make = self._change_verb(job, name, verb, edit, who, expected)
        return _infos(self._ledger().run(make, name="schedule"), name)

    async def _change_async(
        self,
        job: str,
        name: str | None,
        verb: str,
        edit: schedule_ops.Edit,
        who: Who,
        expected: int | None = None,
    ) -> Infos:
        make = self._change_verb(job, name, verb, edit, who, expected)
        return _infos(await self._ledger().run_async(make, name="schedule"), name)


def _infos(
    changed: tuple[list[Mapping[str, Any]], datetime], name: str | None
) -> list[ScheduleInfo]:
    rows, at = changed
    return [_info(r, at) for r in rows if name is None or r["name"] == name]


def _first(instants: list[datetime]) -> datetime | None:
    return instants[0] if instants else None


def _one(infos: list[ScheduleInfo], job: str, name: str) -> ScheduleInfo:
    for info in infos:
        if info.name == name:
            return info
    known = ", ".join(i.name for i in infos) or "none"
    raise ScheduleNotFoundError(f"job {job!r} has no schedule {name!r} (it has: {known})")


def _name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise ValidationError("name", f"got {name!r}", "a schedule name ('default' for one)")
    return name


def _preview(info: ScheduleInfo, n: int, after: datetime | None, now: datetime) -> list[datetime]:
    """What ``preview`` lists: the instants the slot will fire, from the cursor (or ``after``)
    at ``now``. A pause moves the start: nothing due while paused fires later, and a pause
    without an end previews what a resume now would fire (instants after now)."""
    start = info.last_fired_at if after is None else check_instant(after, "after")
    if info.paused:
        start = max(start, now if info.paused_until is None else info.paused_until)
    return info.schedule.upcoming(start, now, n)


def _reason(options: dict[str, Any], default: str) -> Who:
    """The operator's reason and name (``actor``), both recorded on the change's event."""
    reason = check_reason(options.pop("reason", default))
    actor = check_actor(options.pop("actor", "operator"))
    return Who(actor=actor, reason=reason)


def _expected(options: dict[str, Any]) -> Any:
    return options.pop("expected_version", None)  # checked with the other arguments


def _refuse_unknown(options: dict[str, Any], allowed: str) -> None:
    if options:
        raise ValidationError(
            ", ".join(sorted(options)), "is not an option of this verb", f"use {allowed}"
        )


Change = tuple[str, schedule_ops.Edit, Who, int | None]


def _pause(options: dict[str, Any]) -> Change:
    options = dict(options)
    until = options.pop("until", None)
    if until is not None:
        until = check_instant(until, "until")
    reason, expected = _reason(options, "paused by an operator"), _expected(options)
    _refuse_unknown(options, "until, reason, actor, expected_version")

    def edit(row: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        return {"paused": True, "resume_at": until}

    return "paused", edit, reason, expected


def _resume(options: dict[str, Any]) -> Change:
    options = dict(options)
    reason, expected = _reason(options, "resumed by an operator"), _expected(options)
    _refuse_unknown(options, "reason, actor, expected_version")

    def edit(row: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        # From now on: what fell due during the pause is not fired late.
        cursor = max(row["cursor_at"], now) if row["paused"] else row["cursor_at"]
        return {"paused": False, "resume_at": None, "cursor_at": cursor}

    return "resumed", edit, reason, expected


def _trigger(options: dict[str, Any]) -> Change:
    options = dict(options)
    reason, expected = _reason(options, "triggered by an operator"), _expected(options)
    _refuse_unknown(options, "reason, actor, expected_version")

    def edit(row: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        return {"triggered_at": now}

    return "triggered", edit, reason, expected


def _override(options: dict[str, Any]) -> tuple[str, schedule_ops.Edit, Who]:
    options = dict(options)
    reason = _reason(options, "overridden by an operator")
    every, cron = options.pop("every", None), options.pop("cron", None)
    zone, misfire = options.pop("zone", "UTC"), options.pop("misfire", "skip")
    _refuse_unknown(options, "every, cron, zone, misfire, reason, actor")
    schedule = Schedule(every=every, cron=cron, zone=zone, misfire=misfire)
    return "overridden", _replace_with(schedule, overridden=True), reason


def _clear(reason: str, actor: str) -> tuple[str, schedule_ops.Edit, Who]:
    who = Who(actor=check_actor(actor), reason=check_reason(reason))

    def edit(row: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        declared = Schedule.from_declaration(json.loads(row["declared"]))
        return _replace_with(declared, overridden=False)(row, now)

    return "override cleared", edit, who


def _replace_with(schedule: Schedule, *, overridden: bool) -> schedule_ops.Edit:
    declared = schedule.declaration()

    def edit(row: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        return {
            "every_ms": declared["every_ms"],
            "cron": declared["cron"],
            "zone": declared["zone"],
            "misfire": int(Misfire.SKIP if schedule.misfire == "skip" else Misfire.CATCH_UP),
            "overridden": overridden,
            # The new expression applies from now on: nothing before now fires for it.
            "cursor_at": max(row["cursor_at"], now),
        }

    return edit
