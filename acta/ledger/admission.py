"""Admission: a claimed job passes its concurrency and rate gates, and starts, or is turned away.

Every gate is a row locked by the transaction that passes it, in one order: the job's runtime
row, a concurrency gate, a meter (a lane comes between the job and the gate in that order, and
is passed before the claim: only a lane's head is ever claimed). What the rules mean (which
gates a job carries, the meter's arithmetic, how far out a loser goes) is decided in
``acta.policy.gate``; this module reads the rows, applies the decision and writes the events,
in the caller's transaction.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from acta.ledger.events import event_params
from acta.ledger.transition import own_earlier_write
from acta.model.codes import AuditLevel, EventCode, JobStatus, audited
from acta.model.rows import Bounced, Claimed, Started
from acta.policy.gate import JobGates, MeterState, Rate, meter_decision
from acta.provider.verb import Verb, execute, fetch_one


def admit(
    job: Claimed,
    gates: JobGates,
    worker_id: int,
    audit: AuditLevel,
    bounce_after: timedelta,
    now: datetime | None,
) -> Verb[Started | Bounced | None]:
    """Pass ``job`` through its gates and start it, or turn it away; None if its lease is gone.

    A concurrency gate admits while its holders are fewer than the limit in force; a loser is
    ready again ``bounce_after`` from now. A meter admits by ``acta.policy.gate``; an early
    arrival keeps the turn it booked and comes back for it. Nothing is held by a job turned
    away: the gates are checked first, and only a job passing all of them takes its slot."""
    guard = yield fetch_one(
        "admit_guard",
        {"now": now, "job_id": job.job_id, "epoch": job.epoch, "worker_id": worker_id},
    )
    if guard is None:
        return (yield from _refused(job, worker_id, now))
    at: datetime = guard["now_at"]
    ns = job.namespace_id
    gate_id: int | None = None
    limit: int | None = None
    if gates.slot_name is not None:
        gate = yield fetch_one(
            "gate_take",
            {
                "now": now,
                "namespace_id": ns,
                "kind": int(gates.slot_kind or 0),
                "name": gates.slot_name,
                "slot_limit": gates.slot_limit,
            },
        )
        gate_id, limit = gate["gate_id"], gate["limit_in_force"]
        held = yield fetch_one("gate_held", {"gate_id": gate_id})
        if held["held"] >= gate["limit_in_force"]:
            detail = {
                "gate": "concurrency",
                "key": gates.slot_name,
                "limit": gate["limit_in_force"],
            }
            message = f"{gates.slot_name!r} has all {gate['limit_in_force']} slot(s) taken"
            return (
                yield from _bounce(
                    job,
                    worker_id,
                    audit,
                    at + bounce_after,
                    guard["ticket_at"],
                    "concurrency",
                    gates.slot_name,
                    message,
                    detail,
                    now,
                )
            )
    if gates.meter is not None and gates.rate is not None:
        meter = yield fetch_one(
            "meter_take",
            {
                "now": now,
                "namespace_id": ns,
                "name": gates.meter,
                "rate": gates.rate.count,
                "period_ms": gates.rate.period_ms,
            },
        )
        rate = Rate.from_row(meter["rate"], meter["period_ms"])
        state = MeterState(meter["booked_at"], meter["admitted_at"])
        decision = meter_decision(at, state, rate, guard["ticket_at"])
        yield execute(
            "meter_set",
            {
                "now": now,
                "meter_id": meter["meter_id"],
                "booked_until": decision.state.booked_until,
                "admitted_until": decision.state.admitted_until,
            },
        )
        if not decision.admit:
            assert decision.until is not None
            detail = {"gate": "rate", "key": gates.meter, "rate": str(rate)}
            message = f"meter {gates.meter!r} ({rate}) has its next turn for this job at " + (
                decision.until.isoformat()
            )
            return (
                yield from _bounce(
                    job,
                    worker_id,
                    audit,
                    decision.until,
                    decision.ticket,
                    "rate",
                    gates.meter,
                    message,
                    detail,
                    now,
                )
            )
    if gate_id is not None:
        yield execute(
            "gate_hold", {"now": now, "job_id": job.job_id, "gate_id": gate_id, "epoch": job.epoch}
        )
    row = yield fetch_one("admit_start", {"now": now, "job_id": job.job_id, "epoch": job.epoch})
    execution = row["executions"]
    events = []
    if audited(audit, EventCode.ADMITTED):
        passed = _gates(gates, limit)
        events.append(_job_event(job, worker_id, EventCode.ADMITTED, now, detail=passed))
    if audited(audit, EventCode.EXECUTION_STARTED):
        events.append(
            _job_event(job, worker_id, EventCode.EXECUTION_STARTED, now, execution=execution)
        )
    for params in events:
        yield execute("insert_event", params)
    return Started(execution=execution, cancel_requested=bool(row["control"]))


def _gates(gates: JobGates, limit: int | None) -> str:
    """The admitted event's detail: the gates passed, and the limit the slot was judged by."""
    passed: dict[str, Any] = {}
    if gates.slot_name is not None:
        passed["concurrency"] = gates.slot_name
        passed["limit"] = limit
    if gates.meter is not None:
        passed["rate"] = gates.meter
    return json.dumps(passed, ensure_ascii=False, sort_keys=True)


def _job_event(
    job: Claimed,
    worker_id: int,
    code: EventCode,
    now: datetime | None,
    **fields: Any,
) -> dict[str, object]:
    return event_params(
        now,
        job.namespace_id,
        job.job_id,
        job.job_ref,
        code,
        worker_id=worker_id,
        epoch=job.epoch,
        **fields,
    )


def _bounce(
    job: Claimed,
    worker_id: int,
    audit: AuditLevel,
    until: datetime,
    ticket: datetime | None,
    gate: str,
    name: str,
    message: str,
    detail: dict[str, Any],
    now: datetime | None,
) -> Verb[Bounced]:
    yield execute(
        "bounce",
        {"now": now, "job_id": job.job_id, "epoch": job.epoch, "until": until, "ticket": ticket},
    )
    if audited(audit, EventCode.BOUNCED):
        detail = {**detail, "until": until.isoformat()}
        yield execute(
            "insert_event",
            _job_event(
                job,
                worker_id,
                EventCode.BOUNCED,
                now,
                message=message,
                detail=json.dumps(detail, ensure_ascii=False, sort_keys=True),
            ),
        )
    return Bounced(gate, name, until)


def _refused(job: Claimed, worker_id: int, now: datetime | None) -> Verb[Started | Bounced | None]:
    """The guard failed: this worker's own earlier admission or bounce (its reply lost, the
    verb tried again), or a lease that moved on (recorded as a refused write)."""
    earlier = yield from own_earlier_write(job.job_id, job.epoch)
    if earlier is not None and earlier["lease_epoch"] == job.epoch:
        if earlier["lease_owner"] == worker_id and earlier["status"] == int(JobStatus.EXECUTING):
            return Started(earlier["executions"], cancel_requested=bool(earlier["control"]))
        if earlier["status"] == int(JobStatus.READY):
            return Bounced("unknown", "", None)  # the earlier try bounced it
    yield execute(
        "insert_event",
        _job_event(
            job,
            worker_id,
            EventCode.WRITE_FENCED,
            now,
            message=f"refused admission at epoch {job.epoch}",
        ),
    )
    return None
