"""Guarded transitions of a runtime row, and the recovery verb built on them.

``apply_transition`` is the one compare-and-set every settle, hand-back, recovery and operator
change uses: read the row under its guard, write the new state and the events, or, when the
guard fails, change nothing and record the refused write. What recovery does with a lapsed
lease is decided in ``acta.policy.recovery``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from acta.ledger.alerting import record_failure
from acta.ledger.events import event_params, worker_event
from acta.ledger.lane import promote, promote_lanes
from acta.ledger.latch import park, ready_instead, release_latches, wait_satisfied
from acta.ledger.schedule import close_firing
from acta.model.codes import AuditLevel, Control, EventCode, JobStatus, Reason
from acta.model.rows import EventRecord, LapsedLease, RecoveryReport, Transition
from acta.policy.recovery import recovery_transition
from acta.policy.settlement import rearmed_slot
from acta.provider.verb import Verb, execute, execute_many, fetch_all, fetch_one

RECOVERY_BATCH = 50
"""Leases one recovery transaction takes back: a fault loses one small batch, not the pass."""


def own_earlier_write(job_id: int, epoch: int) -> Verb[dict[str, Any] | None]:
    """After a worker write at ``epoch`` was refused by its guard: the row as it is now if the
    refusal is the worker's own earlier write (its commit's reply was lost and the write was
    tried again), or None if the lease at that epoch was taken away (a lease-lost event)."""
    row = yield fetch_one("lease_taken", {"job_id": job_id, "epoch": epoch})
    if row is None or row["taken"]:
        return None
    return dict(row)


def apply_transition(plan: Transition, now: datetime | None) -> Verb[JobStatus | None]:
    """Apply ``plan`` if its guard holds; otherwise record a fenced write.

    Returns the status written (``on_cancel`` may have replaced the plan), or None if fenced.
    A worker write refused because it already committed (an in-doubt retry) returns what it
    wrote and records nothing."""
    guard = yield fetch_one(
        "transition_guard",
        {
            "now": now,
            "job_id": plan.job_id,
            "epoch": plan.epoch,
            "expect": json.dumps([int(s) for s in plan.expect]),
            "owner": plan.owner,
            "lapsed": 1 if plan.lapsed else 0,
        },
    )
    if guard is None:
        if plan.owner is not None:
            row = yield from own_earlier_write(plan.job_id, plan.epoch)
            if row is not None and row["lease_epoch"] != plan.epoch:
                return plan.status  # written, and the job has moved on since
            if row is not None and JobStatus(row["status"]) not in plan.expect:
                return JobStatus(row["status"])  # on_cancel may have replaced the plan
            # A worker tried to write over a lease it no longer holds: keep the evidence.
            yield execute(
                "insert_event",
                event_params(
                    now,
                    plan.namespace_id,
                    plan.job_id,
                    plan.job_ref,
                    EventCode.WRITE_FENCED,
                    worker_id=plan.worker_id,
                    epoch=plan.epoch,
                    message=f"refused write to {plan.status.label} at epoch {plan.epoch}",
                ),
            )
        return None
    if guard["control"] and plan.on_cancel is not None:
        plan = plan.on_cancel
    ended: str | None = None
    if guard["slot"] and plan.status.terminal:
        ended, plan = plan.status.label, rearmed_slot(plan)
    if plan.wait is not None:
        if (yield from wait_satisfied(plan, guard["open_children"])):
            plan = ready_instead(plan)  # what it would wait for is here: no need to leave
        else:
            yield from park(plan)
    yield execute(
        "transition",
        {
            "now": now,
            "job_id": plan.job_id,
            "epoch": plan.epoch,
            "status": int(plan.status),
            "delay_ms": plan.delay_ms,
            "run_at": plan.run_at,
            "charge": plan.charge,
        },
    )
    if plan.result is not None:
        codec, body = plan.result
        yield execute(
            "upsert_result", {"now": now, "job_id": plan.job_id, "codec": codec, "body": body}
        )
    if plan.events:
        yield execute_many("insert_event", [_event(plan, e, now) for e in plan.events])
    if guard["held"]:
        yield execute("release_hold", {"job_id": plan.job_id})  # the lease ends: so does its slot
    if guard["lane_id"] is not None and plan.status.terminal:
        yield from promote(guard["lane_id"], plan.job_id, now)
    if guard["parent_id"] is not None and plan.status.terminal:
        yield from release_latches([plan.job_id], now)
    if ended is not None:
        execution = next((e.execution for e in plan.events if e.execution), None)
        yield from close_firing(plan.job_id, plan.namespace_id, plan.job_ref, ended, execution, now)
    if plan.alert is not None:  # (on_cancel replaced a failure by a cancellation: no alert)
        yield from record_failure(plan, now)
    return plan.status


def _event(plan: Transition, e: EventRecord, now: datetime | None) -> dict[str, object]:
    return event_params(
        now,
        plan.namespace_id,
        plan.job_id,
        plan.job_ref,
        e.code,
        worker_id=plan.worker_id,
        execution=e.execution,
        epoch=plan.epoch,
        outcome=None if e.outcome is None else int(e.outcome),
        reason=None if e.reason is None else int(e.reason),
        duration_ms=e.duration_ms,
        message=e.message,
        detail=e.detail,
        actor=e.actor,
    )


def lapsed_from_row(row: dict[str, Any]) -> LapsedLease:
    return LapsedLease(
        job_id=row["job_id"],
        job_ref=row["job_ref"],
        namespace_id=row["namespace_id"],
        status=JobStatus(row["status"]),
        executions=row["executions"],
        attempts=row["attempts"],
        epoch=row["lease_epoch"],
        owner=row["lease_owner"],
        max_attempts=row["max_attempts"],
        audit_level=AuditLevel(row["audit_level"]),
        name=row["name"],
    )


def recover(
    namespace_id: int, now: datetime | None, limit: int = RECOVERY_BATCH
) -> Verb[RecoveryReport]:
    """Declare silent workers dead and take back up to ``limit`` lapsed leases of the
    namespace, in one transaction. Run it again while the answer says ``more``."""
    dead = yield fetch_all("mark_dead_workers", {"now": now, "namespace_id": namespace_id})
    if dead:
        yield execute_many(
            "insert_event",
            [
                worker_event(
                    now,
                    namespace_id,
                    row["worker_id"],
                    EventCode.WORKER_DIED,
                    reason=int(Reason.WORKER_SILENT),
                    message=row["incarnation"],
                )
                for row in dead
            ],
        )
    rows = yield fetch_all(
        "lapsed_leases",
        {"now": now, "namespace_id": namespace_id, "only_job_id": None, "limit": limit},
    )
    recovered: list[str] = []
    failed: list[str] = []
    for row in rows:
        plan = recovery_transition(lapsed_from_row(row))
        written = yield from apply_transition(plan, now)
        if written is not None:
            (recovered if written is JobStatus.READY else failed).append(plan.job_ref)
    return RecoveryReport(
        dead_workers=tuple(row["incarnation"] for row in dead),
        recovered=tuple(recovered),
        failed=tuple(failed),
        more=len(rows) >= limit,
    )


def request_cancel(
    job_id: int, epoch: int, now: datetime | None, control: Control = Control.CANCEL
) -> Verb[bool]:
    """Flag a running job for cancellation; its worker stops it at the next heartbeat (the
    control code says why, and becomes the reason of its cancelled event)."""
    changed = yield execute(
        "request_cancel", {"now": now, "job_id": job_id, "epoch": epoch, "control": int(control)}
    )
    return bool(changed)


def apply_transitions(
    plans: Sequence[Transition], now: datetime | None, fused: bool = False
) -> Verb[list[JobStatus | None]]:
    """Apply many independent plans in one transaction (group commit); one answer per plan.

    Fused, the worker writes go out as one statement; a plan it left out (fenced, or a cancel
    request pending) takes the portable path, which records the fence or applies on_cancel."""
    done: set[int] = set()
    fast = [p for p in plans if p.owner is not None and not p.lapsed and _plain(p)]
    if fused and fast:
        # Alone (its own transaction) only when no run ends in a lane or as a child: a lane's
        # promotion and a parent's latch must commit with the settle that ends the job.
        alone = all(p.lane_id is None and p.parent_id is None for p in fast)
        rows = yield fetch_all("fused_settle", _fused_settle_params(fast, now), alone=alone)
        done = {row["job_id"] for row in rows}
        ended = [
            (row["lane_id"], row["job_id"])
            for row in rows
            if row["lane_id"] is not None and JobStatus(row["status"]).terminal
        ]
        if ended:
            yield from promote_lanes(ended, now, fused)
        children = {p.job_id for p in fast if p.parent_id is not None}
        finished = [
            row["job_id"]
            for row in rows
            if row["job_id"] in children and JobStatus(row["status"]).terminal
        ]
        if finished:
            yield from release_latches(finished, now)
    out: list[JobStatus | None] = []
    for plan in plans:
        if plan.job_id in done and plan.owner is not None and not plan.lapsed:
            out.append(plan.status)
        else:
            out.append((yield from apply_transition(plan, now)))
    return out


def _plain(plan: Transition) -> bool:
    """Whether the fused settle can write this plan (it knows no wait, no fixed instant, no
    recurring slot and no alert).

    A failure its definition's alert profile reports takes the portable path, which joins the
    incident in the same transaction. That is the whole cost of alerting on the hot path:
    successes, and failures of definitions whose profile is off (or retries under the default
    terminal profile), carry no alert and stay in the fused statement untouched. Failures are
    the rare case, so two more round trips for them beat widening the fused statement that
    every settle runs."""
    return plan.wait is None and plan.run_at is None and not plan.slot and plan.alert is None


def _fused_settle_params(plans: Sequence[Transition], now: datetime | None) -> dict[str, object]:
    events = [(p, e) for p in plans for e in p.events]
    results = [(p.job_id, p.result) for p in plans if p.result is not None]
    return {
        "now": now,
        "job_ids": [p.job_id for p in plans],
        "epochs": [p.epoch for p in plans],
        "expects": [int(p.expect[0]) for p in plans],
        "owners": [p.owner for p in plans],
        "statuses": [int(p.status) for p in plans],
        "delays": [p.delay_ms for p in plans],
        "charges": [p.charge for p in plans],
        "result_job_ids": [job_id for job_id, _ in results],
        "result_codecs": [r[0] for _, r in results if r is not None],
        "result_bodies": [r[1] for _, r in results if r is not None],
        "ev_namespace_ids": [p.namespace_id for p, _ in events],
        "ev_job_ids": [p.job_id for p, _ in events],
        "ev_job_refs": [p.job_ref for p, _ in events],
        "ev_worker_ids": [p.worker_id for p, _ in events],
        "ev_codes": [int(e.code) for _, e in events],
        "ev_executions": [e.execution for _, e in events],
        "ev_epochs": [p.epoch for p, _ in events],
        "ev_outcomes": [None if e.outcome is None else int(e.outcome) for _, e in events],
        "ev_reasons": [None if e.reason is None else int(e.reason) for _, e in events],
        "ev_durations": [e.duration_ms for _, e in events],
        "ev_messages": [e.message for _, e in events],
        "ev_details": [e.detail for _, e in events],
    }
