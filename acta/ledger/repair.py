"""Repair verbs on one job, a definition or a namespace: restart, reschedule, amend, pause,
resume and retire.

Each verb reads the row it changes, decides in Python, and writes through a guard that fails
when the row moved since the read (a worker claimed it, another operator got there first); a
verb whose guard fails reads again, and after a few tries gives up with ConflictError, having
written nothing. Status changes go through ``apply_transition`` like every settle. Every change
writes its event in the same transaction, whatever the definition's audit level, with the
verb, the actor and the reason in the event's detail (JSON). Arguments are checked by the
caller (``acta.repair``) before any statement runs.

The verbs that change something answer with the probe of the event they wrote, and the caller
runs them with ``acta.ledger.doubt.once``: a retry after a lost COMMIT reply finds that event
and answers as the first attempt did, instead of finding the row moved and refusing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from acta.errors import ConflictError, JobNotFoundError, JobStateError, UnknownJobError
from acta.ledger import read
from acta.ledger.doubt import event_probe, job_event_probe
from acta.ledger.events import Who, event_params
from acta.ledger.schedule import SLOT_KEY_PREFIX
from acta.ledger.transition import apply_transition
from acta.model.codes import EventCode, JobStatus, Reason
from acta.model.rows import EventRecord, JobInfo, Transition
from acta.names import SYSTEM_PREFIX
from acta.provider.verb import Op, Verb, execute, execute_many, fetch_one

TRIES = 5
"""Reads a verb makes before it gives up on a row that keeps moving (ConflictError)."""

TERMINAL = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
RESCHEDULABLE = (JobStatus.READY,)
"""Only a ready job is moved: a blocked one waits for its lane head, a suspended one for its
wait, a paused one for resume, and a running one has a worker."""


@dataclass(frozen=True, slots=True)
class Amendment:
    """What an amend changes; None leaves a field as it is."""

    priority: int | None = None
    max_attempts: int | None = None
    tags: tuple[str, ...] | None = None


def _refuse(info: JobInfo, verb: str, allowed: Sequence[JobStatus]) -> JobStateError:
    names = tuple(s.label for s in allowed)
    return JobStateError(
        f"cannot {verb} job {info.job_ref}: it is {info.status.label}; {verb} takes a job that "
        f"is {' or '.join(names)}",
        info.status.label,
        names,
    )


def check_repairable(info: JobInfo, verb: str) -> None:
    """Refuse acta's own jobs and recurring slots: they keep the ledger and schedules working."""
    if info.name.startswith(SYSTEM_PREFIX):
        raise JobStateError(
            f"cannot {verb} job {info.job_ref}: it is acta's own {info.name!r} job",
            info.status.label,
            (),
        )
    if info.dedup_key is not None and info.dedup_key.startswith(SLOT_KEY_PREFIX):
        raise JobStateError(
            f"cannot {verb} job {info.job_ref}: it is the recurring slot of {info.name!r}; "
            "use the schedule verbs (pause, resume, trigger) instead",
            info.status.label,
            (),
        )


def _job(job_ref: str, namespace: str | None, verb: str) -> Verb[JobInfo]:
    info = yield from read.job(job_ref, namespace)
    if info is None:
        raise JobNotFoundError(f"no job {job_ref} in namespace {namespace!r}")
    check_repairable(info, verb)
    return info


def _moved(job_ref: str, verb: str) -> ConflictError:
    return ConflictError(
        f"job {job_ref} changed state {TRIES} times while it was being {verb}; nothing was "
        "written, try again"
    )


def restart_row(info: JobInfo, who: Who, now: datetime | None) -> Verb[bool]:
    """Restart one finished job read as ``info``: ready now, attempts back to zero, its old
    result dropped. False when the row moved since ``info`` was read (nothing written)."""
    if info.status not in TERMINAL:
        raise _refuse(info, "restart", TERMINAL)
    if info.lane is not None:
        raise JobStateError(
            f"cannot restart job {info.job_ref}: it was a member of lane {info.lane!r}, whose "
            "order is fixed at enqueue; enqueue its input again instead",
            info.status.label,
            (),
        )
    previous = info.status.label
    plan = Transition(
        job_id=info.job_id,
        job_ref=info.job_ref,
        namespace_id=info.namespace_id,
        epoch=info.lease_epoch,
        expect=(info.status,),
        status=JobStatus.READY,
        delay_ms=0,
        charge=-info.attempts,  # a restart gets its full attempts again
        events=(
            EventRecord(
                EventCode.RESTARTED,
                reason=Reason.OPERATOR,
                message=f"restarted after it {previous} ({info.attempts} attempts spent)",
                detail=who.detail("restart", previous=previous, attempts=info.attempts),
                actor=who.actor,
            ),
        ),
    )
    if (yield from apply_transition(plan, now)) is None:
        return False
    yield execute("repair_drop_result", {"job_id": info.job_id})
    return True


def restart(
    job_ref: str, namespace: str, who: Who, now: datetime | None
) -> Verb[tuple[JobInfo, Op | None]]:
    """Run a finished job again with its stored input, under the same ref."""
    for _ in range(TRIES):
        info = yield from _job(job_ref, namespace, "restart")
        if (yield from restart_row(info, who, now)):
            probe = yield from job_event_probe(info.job_id, int(EventCode.RESTARTED))
            return (yield from _job(job_ref, namespace, "restart")), probe
    raise _moved(job_ref, "restarted")


def reschedule_row(
    info: JobInfo, at: datetime | None, who: Who, now: datetime | None
) -> Verb[bool]:
    """Move one ready job's next run to ``at`` (None: now). False when the row moved."""
    if info.status not in RESCHEDULABLE:
        raise _refuse(info, "reschedule", RESCHEDULABLE)
    target = "now" if at is None else at.isoformat()
    plan = Transition(
        job_id=info.job_id,
        job_ref=info.job_ref,
        namespace_id=info.namespace_id,
        epoch=info.lease_epoch,
        expect=(info.status,),
        status=info.status,
        delay_ms=0 if at is None else None,
        run_at=at,
        events=(
            EventRecord(
                EventCode.RUN_AT_CHANGED,
                reason=Reason.OPERATOR,
                message=f"next run moved from {info.next_run_at.isoformat()} to {target}",
                detail=who.detail("reschedule", previous=info.next_run_at, at=target),
                actor=who.actor,
            ),
        ),
    )
    return (yield from apply_transition(plan, now)) is not None


def reschedule(
    job_ref: str, namespace: str, at: datetime | None, who: Who, now: datetime | None
) -> Verb[tuple[JobInfo, Op | None]]:
    """Move a ready job's next run to an instant, or to now."""
    for _ in range(TRIES):
        info = yield from _job(job_ref, namespace, "reschedule")
        if (yield from reschedule_row(info, at, who, now)):
            probe = yield from job_event_probe(info.job_id, int(EventCode.RUN_AT_CHANGED))
            return (yield from _job(job_ref, namespace, "reschedule")), probe
    raise _moved(job_ref, "rescheduled")


def amend(
    job_ref: str, namespace: str, change: Amendment, who: Who, now: datetime | None
) -> Verb[tuple[JobInfo, Op | None]]:
    """Change the priority, attempt limit or tags of a job that has not finished."""
    for _ in range(TRIES):
        info = yield from _job(job_ref, namespace, "amend")
        if info.status.terminal:
            raise _refuse(info, "amend", [s for s in JobStatus if not s.terminal])
        own = yield fetch_one("repair_job_limits", {"job_id": info.job_id})
        old_max = None if own is None else own["max_attempts"]
        new_priority = info.priority if change.priority is None else change.priority
        new_max = old_max if change.max_attempts is None else change.max_attempts
        changed = yield execute(
            "repair_amend",
            {
                "now": now,
                "job_id": info.job_id,
                "old_priority": info.priority,
                "old_max_attempts": old_max,
                "priority": new_priority,
                "max_attempts": new_max,
            },
        )
        if not changed:
            continue  # finished, or another operator amended it since the read
        old: dict[str, object] = {}
        new: dict[str, object] = {}
        if change.priority is not None:
            old["priority"], new["priority"] = info.priority, new_priority
        if change.max_attempts is not None:
            old["max_attempts"], new["max_attempts"] = info.max_attempts, new_max
        if change.tags is not None:
            old["tags"], new["tags"] = list(info.tags), sorted(change.tags)
            yield execute("repair_clear_tags", {"job_id": info.job_id})
            if change.tags:
                yield execute_many(
                    "insert_tag", [{"job_id": info.job_id, "tag": t} for t in change.tags]
                )
        shown = ", ".join(f"{k} {old[k]} -> {new[k]}" for k in new)
        row = yield fetch_one(
            "insert_event_id",
            event_params(
                now,
                info.namespace_id,
                info.job_id,
                info.job_ref,
                EventCode.AMENDED,
                epoch=info.lease_epoch,
                reason=int(Reason.OPERATOR),
                message=f"amended: {shown}",
                detail=who.detail("amend", old=old, new=new),
                actor=who.actor,
            ),
        )
        probe = event_probe(row["id"], int(EventCode.AMENDED))
        return (yield from _job(job_ref, namespace, "amend")), probe
    raise _moved(job_ref, "amended")


# -- definitions and namespaces -----------------------------------------------------------


def _definition(namespace: str, name: str) -> Verb[dict[str, object]]:
    row = yield fetch_one("repair_definition", {"namespace": namespace, "name": name})
    if row is None:
        raise UnknownJobError(
            f"no definition {name!r} in namespace {namespace!r}: a worker or an enqueue "
            "registers it first"
        )
    return dict(row)


def _scope_event(
    now: datetime | None, namespace_id: int, code: EventCode, message: str, who: Who, detail: str
) -> dict[str, object]:
    return event_params(
        now,
        namespace_id,
        None,
        None,
        code,
        reason=int(Reason.OPERATOR),
        message=message,
        detail=detail,
        actor=who.actor,
    )


def pause_definition(
    namespace: str, name: str, paused: bool, who: Who, now: datetime | None
) -> Verb[tuple[bool, Op | None]]:
    """Stop (or restart) claims of one definition; False when it already was so."""
    row = yield from _definition(namespace, name)
    verb = "pause" if paused else "resume"
    if row["retired"]:
        raise JobStateError(
            f"cannot {verb} definition {name!r}: it is retired, paused for good",
            "retired",
            ("active", "paused"),
        )
    changed = yield execute(
        "repair_pause_definition", {"definition_id": row["id"], "paused": paused}
    )
    if not changed:
        return False, None
    code = EventCode.CLAIMS_PAUSED if paused else EventCode.CLAIMS_RESUMED
    event = yield fetch_one(
        "insert_event_id",
        _scope_event(
            now,
            int(str(row["namespace_id"])),
            code,
            f"definition {name}",
            who,
            who.detail(verb, definition=name),
        ),
    )
    return True, event_probe(event["id"], int(code))


def pause_namespace(
    namespace: str, paused: bool, who: Who, now: datetime | None
) -> Verb[tuple[bool, Op | None]]:
    """Stop (or restart) every claim in a namespace; False when it already was so."""
    row = yield fetch_one("repair_namespace", {"namespace": namespace})
    if row is None:
        raise UnknownJobError(f"no namespace {namespace!r} in this ledger")
    changed = yield execute("repair_pause_namespace", {"namespace_id": row["id"], "paused": paused})
    if not changed:
        return False, None
    code = EventCode.CLAIMS_PAUSED if paused else EventCode.CLAIMS_RESUMED
    verb = "pause" if paused else "resume"
    event = yield fetch_one(
        "insert_event_id",
        _scope_event(now, row["id"], code, f"namespace {namespace}", who, who.detail(verb)),
    )
    return True, event_probe(event["id"], int(code))


def retire(namespace: str, name: str, who: Who, now: datetime | None) -> Verb[int]:
    """Pause a definition for good; returns its id. Its queue is cancelled batch by batch
    afterwards (``acta.ledger.repair_bulk.cancel_queue``)."""
    row = yield from _definition(namespace, name)
    changed = yield execute("repair_retire_definition", {"definition_id": row["id"]})
    if changed:
        yield execute(
            "insert_event",
            _scope_event(
                now,
                int(str(row["namespace_id"])),
                EventCode.RETIRED,
                f"definition {name}",
                who,
                who.detail("retire", definition=name),
            ),
        )
    return int(str(row["id"]))
