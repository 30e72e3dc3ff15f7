"""Schedule verbs: the cursors of a definition's schedules, kept beside its recurring slot.

A definition with schedules has one recurring slot, a job row of that definition claimed like
any other: the claim is the election, so one peer fires an instant. A slot run first opens its
firing (``open_firing``): the schedules that are due, or a firing an operator triggered, are
recorded as pending on their rows in the run's own fenced transaction, so a run that crashes
and is taken back by recovery makes the very same firing again. The run's end, however it
ended, closes the firing in the settle's transaction (``close_firing``, called by
``acta.ledger.transition``): cursors move past what was fired, a ``fired`` event says what
happened, and the slot is set to wake at the next instant. Nothing at or before a cursor fires
again, so a clock stepped back, a repeated settle or a second peer never fires twice.

What is due is judged by ``acta.policy.schedule`` from the rows, in Python, inside the verb's
transaction, against the instant the database (or the test clock) gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acta.instant import NO_TIMER
from acta.ledger.events import event_params
from acta.ledger.fence import RunLease, guard_run
from acta.model.codes import EventCode, Misfire
from acta.outcome import Firing
from acta.policy.schedule import Schedule, coalesce
from acta.provider.verb import Verb, execute, fetch_all, fetch_one

SLOT_KEY_PREFIX = "sys.schedule:"
"""A recurring slot's deduplication key is this prefix and its definition's name."""


def slot_key(definition: str) -> str:
    """The deduplication key of ``definition``'s recurring slot (one per namespace)."""
    return SLOT_KEY_PREFIX + definition


@dataclass(frozen=True, slots=True)
class Declared:
    """One schedule as a build declares it for a definition."""

    definition: str
    name: str
    schedule: Schedule

    def params(self) -> dict[str, Any]:
        d = self.schedule.declaration()
        return {
            "name": self.name,
            "every_ms": d["every_ms"],
            "cron": d["cron"],
            "zone": d["zone"],
            "misfire": int(_misfire(self.schedule)),
            "declared": json.dumps(d, sort_keys=True),
        }


@dataclass(frozen=True, slots=True)
class Opened:
    """What a slot run does: fire (``firing``), or nothing yet and sleep until ``wake``.
    ``slot`` False: the job is no slot (an enqueued run of a scheduled job); it runs as is."""

    firing: Firing | None
    wake: datetime
    slot: bool = True


def _misfire(schedule: Schedule) -> Misfire:
    return Misfire.SKIP if schedule.misfire == "skip" else Misfire.CATCH_UP


def schedule_of(row: Mapping[str, Any]) -> Schedule:
    """The schedule a ``schedules`` row holds now (its override, if one is in force)."""
    return Schedule.from_declaration(row)


def ledger_now(now: datetime | None) -> Verb[datetime]:
    """The instant schedule verbs judge by: ``now`` (the test clock) or the database's."""
    row = yield fetch_one("schedule_now", {"now": now})
    at: datetime = row["now_at"]
    return at


def wake_of(rows: Iterable[Mapping[str, Any]], now: datetime) -> datetime:
    """When a slot must next run: now if a firing is pending or triggered, else the earliest
    next instant of its schedules that are not paused (a timed pause counts from its end)."""
    wake = NO_TIMER
    for row in rows:
        if row["pending_at"] is not None or row["triggered_at"] is not None:
            return now
        if row["paused"]:
            until = row["resume_at"]
            if until is None:
                continue
            start = max(row["cursor_at"], until)
            wake = min(wake, max(until, schedule_of(row).next_after(start)))
            continue
        wake = min(wake, schedule_of(row).next_after(row["cursor_at"]))
    return wake


def sync_declared(
    namespace_id: int,
    definition_ids: Mapping[str, int],
    slot_ids: Mapping[str, int],
    declared: Sequence[Declared],
    now: datetime | None,
) -> Verb[None]:
    """Registration: make the ledger's schedules match what this build declares.

    New schedules are armed now; a changed declaration replaces the expression unless an
    operator's override is in force; a schedule the build no longer declares is removed. The
    slot of a definition whose schedules changed is woken to judge them at once."""
    by_definition: dict[str, list[Declared]] = {}
    for item in declared:
        by_definition.setdefault(item.definition, []).append(item)
    for definition, items in by_definition.items():
        slot_id = slot_ids[slot_key(definition)]
        yield fetch_one("slot_lock", {"slot_id": slot_id})
        key = {"namespace_id": namespace_id, "definition_id": definition_ids[definition]}
        changed = 0
        for item in items:
            params = {**key, **item.params(), "slot_id": slot_id, "now": now}
            changed += yield execute("schedule_insert", params)
            changed += yield execute("schedule_redeclare", params)
        names = json.dumps([item.name for item in items])
        changed += yield execute("schedule_undeclared", {**key, "names": names})
        if changed:
            yield from wake_slot(slot_id, now)


def wake_slot(slot_id: int, now: datetime | None) -> Verb[datetime]:
    """Set a waiting slot to run when its schedules next need it; returns that instant."""
    at = yield from ledger_now(now)
    rows = yield fetch_all("schedule_rows", {"slot_id": slot_id})
    wake = wake_of(rows, at)
    yield execute("slot_wake", {"slot_id": slot_id, "wake_at": wake})
    return wake


def open_firing(slot_id: int, now: datetime | None) -> Verb[Opened]:
    """Decide what this slot run fires and record it as pending (the caller has checked the
    run's lease in this transaction). A pending firing left by a run that did not finish is
    made again, unchanged."""
    at = yield from ledger_now(now)
    yield execute("schedule_unpause", {"slot_id": slot_id, "now_at": at})
    rows = yield fetch_all("schedule_rows", {"slot_id": slot_id})
    if not rows:
        return Opened(None, at, slot=False)
    pending = [r for r in rows if r["pending_at"] is not None]
    if pending:
        return Opened(_firing(pending), at)
    live = [r for r in rows if not r["paused"]]
    fired = {}
    if live:
        schedules = {r["name"]: schedule_of(r) for r in live}
        fired = coalesce(schedules, {r["name"]: r["cursor_at"] for r in live}, at).fired
    begun: list[tuple[Mapping[str, Any], dict[str, Any]]] = []
    for row in rows:
        due = fired.get(row["name"])
        if due is not None:
            begun.append((row, {"at": due.fire[0], "cursor": due.cursor, "missed": due.missed}))
        elif row["triggered_at"] is not None:
            # An operator's trigger fires even a paused schedule, and moves no cursor.
            begun.append((row, {"at": row["triggered_at"], "cursor": row["cursor_at"]}))
    if not begun:
        return Opened(None, wake_of(rows, at))
    marked = []
    for row, pend in begun:
        yield execute(
            "schedule_begin",
            {
                "id": row["id"],
                "pending_at": pend["at"],
                "pending_cursor": pend["cursor"],
                "missed": pend.get("missed", 0),
            },
        )
        marked.append(
            {
                **row,
                "pending_at": pend["at"],
                "pending_cursor_at": pend["cursor"],
                "pending_missed": pend.get("missed", 0),
            }
        )
    return Opened(_firing(marked), at)


def open_slot_run(lease: RunLease, now: datetime | None) -> Verb[Opened | None]:
    """``open_firing`` for a slot run, fenced by its lease: None when the lease is gone."""
    if not (yield from guard_run(lease, now, "open firing")):
        return None
    return (yield from open_firing(lease.job_id, now))


def _triggered(row: Mapping[str, Any]) -> bool:
    return row["triggered_at"] is not None and row["pending_cursor_at"] == row["cursor_at"]


def _firing(rows: Sequence[Mapping[str, Any]]) -> Firing:
    at = min(r["pending_at"] for r in rows)
    through = max(max(r["pending_at"], r["pending_cursor_at"]) for r in rows)
    return Firing(
        at=at,
        schedules=tuple(r["name"] for r in rows),
        missed=sum(r["pending_missed"] for r in rows),
        through=through,
        triggered=any(_triggered(r) for r in rows),
    )


def close_firing(
    slot_id: int,
    namespace_id: int,
    job_ref: str,
    outcome: str,
    execution: int | None,
    now: datetime | None,
) -> Verb[datetime]:
    """A slot run ended (``outcome``: succeeded, failed, cancelled): move the cursors of the
    pending firing past it, record it, reset the slot's attempts and set its next wake."""
    at = yield from ledger_now(now)
    rows = yield fetch_all("schedule_rows", {"slot_id": slot_id})
    pending = [r for r in rows if r["pending_at"] is not None]
    if pending:
        firing = _firing(pending)
        for row in pending:
            yield execute(
                "schedule_end", {"id": row["id"], "triggered": int(_triggered(row)), "now": now}
            )
        yield execute(
            "insert_event",
            event_params(
                now,
                namespace_id,
                slot_id,
                job_ref,
                EventCode.FIRED,
                execution=execution,
                message=describe_firing(firing, outcome),
                detail=json.dumps(
                    {
                        "at": firing.at.isoformat(),
                        "schedules": list(firing.schedules),
                        "missed": firing.missed,
                        "through": None if firing.through is None else firing.through.isoformat(),
                        "triggered": firing.triggered,
                        "outcome": outcome,
                    }
                ),
            ),
        )
        rows = yield fetch_all("schedule_rows", {"slot_id": slot_id})
    wake = wake_of(rows, at)
    yield execute("slot_reset", {"slot_id": slot_id, "wake_at": wake})
    return wake


def describe_firing(firing: Firing, outcome: str) -> str:
    """The ``fired`` event's message: which schedules, for which instant, and how it went."""
    names = ", ".join(firing.schedules)
    text = f"{names} fired for {firing.at.isoformat()}: {outcome}"
    if firing.triggered:
        text += " (triggered by an operator)"
    if firing.missed:
        text += f"; {firing.missed} more due instant(s) covered by this run"
    return text
