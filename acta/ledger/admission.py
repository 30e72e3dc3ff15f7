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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from acta.ledger.events import event_params
from acta.ledger.transition import own_earlier_write
from acta.model.codes import AuditLevel, EventCode, JobStatus, audited
from acta.model.rows import Bounced, Claimed, Started
from acta.policy.gate import JobGates, MeterState, Rate, meter_decision
from acta.provider.verb import Verb, execute, fetch_one


@dataclass(frozen=True, slots=True)
class Admission:
    """One claimed job to pass through its gates: its audit level, and how far out it goes
    if a concurrency gate turns it away."""

    job: Claimed
    gates: JobGates
    audit: AuditLevel
    bounce_after: timedelta


@dataclass
class _Gate:
    gate_id: int
    override: int | None
    held: int


def admit(
    items: Sequence[Admission], worker_id: int, now: datetime | None
) -> Verb[list[Started | Bounced | None]]:
    """Pass each job through its gates and start it, or turn it away; None where the lease is
    gone. One transaction for the batch, answers in the order given.

    A concurrency gate admits while its holders are fewer than the limit in force (the
    operator's override, else the job's declared limit); a loser is ready again its
    ``bounce_after`` from now. A meter admits by ``acta.policy.gate``; an early arrival keeps
    the turn it booked and comes back for it. A job turned away holds nothing.

    Locks follow the one order: every job's runtime row (in id order), then the gate rows,
    then the meter rows (each in name order); then the decisions are made in the order given,
    counting the holders and advancing the meters in memory, and written. A batch costs one
    lock and one commit per gate and meter, however many of its jobs pass them."""
    answers: dict[int, Started | Bounced | None] = {}
    live: dict[int, datetime | None] = {}  # job id -> its meter ticket
    at: datetime | None = None
    for item in sorted(items, key=lambda i: i.job.job_id):
        job = item.job
        guard = yield fetch_one(
            "admit_guard",
            {"now": now, "job_id": job.job_id, "epoch": job.epoch, "worker_id": worker_id},
        )
        if guard is None:
            answers[job.job_id] = yield from _refused(job, worker_id, now)
        else:
            live[job.job_id], at = guard["ticket_at"], guard["now_at"]
    if at is None:
        return [answers[i.job.job_id] for i in items]
    passing = [i for i in items if i.job.job_id in live]
    gates = yield from _take_gates(passing, now)
    meters = yield from _take_meters(passing, now)
    states = {name: state for name, (_, _, state) in meters.items()}
    for item in passing:
        job, g = item.job, item.gates
        gate = None if g.slot_name is None else gates[(int(g.slot_kind or 0), g.slot_name)]
        limit = None if gate is None else (gate.override or g.slot_limit)
        if gate is not None and limit is not None and gate.held >= limit:
            detail = {"gate": "concurrency", "key": g.slot_name, "limit": limit}
            message = f"{g.slot_name!r} has all {limit} slot(s) taken"
            answers[job.job_id] = yield from _bounce(
                item, worker_id, at + item.bounce_after, live[job.job_id], "concurrency",
                str(g.slot_name), message, detail, now,
            )  # fmt: skip
            continue
        if g.meter is not None:
            _, rate, state = meters[g.meter]
            decision = meter_decision(at, states[g.meter], rate, live[job.job_id])
            states[g.meter] = decision.state
            if not decision.admit:
                assert decision.until is not None
                detail = {"gate": "rate", "key": g.meter, "rate": str(rate)}
                message = (
                    f"meter {g.meter!r} ({rate}) has its next turn for this job at "
                    f"{decision.until.isoformat()}"
                )
                answers[job.job_id] = yield from _bounce(
                    item, worker_id, decision.until, decision.ticket, "rate", g.meter, message,
                    detail, now,
                )  # fmt: skip
                continue
        if gate is not None:
            gate.held += 1
            yield execute(
                "gate_hold",
                {"now": now, "job_id": job.job_id, "gate_id": gate.gate_id, "epoch": job.epoch},
            )
        answers[job.job_id] = yield from _start(item, worker_id, limit, now)
    for name, (meter_id, _, _) in meters.items():
        state = states[name]
        yield execute(
            "meter_set",
            {
                "now": now,
                "meter_id": meter_id,
                "booked_until": state.booked_until,
                "admitted_until": state.admitted_until,
            },
        )
    return [answers[i.job.job_id] for i in items]


def _take_gates(
    items: Sequence[Admission], now: datetime | None
) -> Verb[dict[tuple[int, str], _Gate]]:
    """Lock each concurrency gate of the batch (creating it on first use) and count its
    holders; the lock is taken by its own statement, so the count sees every holder
    committed before it."""
    wanted: dict[tuple[int, str], Admission] = {}
    for item in items:
        g = item.gates
        if g.slot_name is not None:
            wanted.setdefault((int(g.slot_kind or 0), g.slot_name), item)
    out: dict[tuple[int, str], _Gate] = {}
    for (kind, name), item in sorted(wanted.items()):
        row = yield fetch_one(
            "gate_take",
            {
                "now": now,
                "namespace_id": item.job.namespace_id,
                "kind": kind,
                "name": name,
                "slot_limit": item.gates.slot_limit,
            },
        )
        held = yield fetch_one("gate_held", {"gate_id": row["gate_id"]})
        out[(kind, name)] = _Gate(row["gate_id"], row["limit_override"], held["held"])
    return out


def _take_meters(
    items: Sequence[Admission], now: datetime | None
) -> Verb[dict[str, tuple[int, Rate, MeterState]]]:
    """Lock each meter of the batch (creating it on first use); its id, rate in force and
    horizons."""
    wanted: dict[str, Admission] = {}
    for item in items:
        if item.gates.meter is not None and item.gates.rate is not None:
            wanted.setdefault(item.gates.meter, item)
    out: dict[str, tuple[int, Rate, MeterState]] = {}
    for name, item in sorted(wanted.items()):
        rate = item.gates.rate
        assert rate is not None
        row = yield fetch_one(
            "meter_take",
            {
                "now": now,
                "namespace_id": item.job.namespace_id,
                "name": name,
                "rate": rate.count,
                "period_ms": rate.period_ms,
            },
        )
        in_force = Rate.from_row(row["rate"], row["period_ms"])
        out[name] = (row["meter_id"], in_force, MeterState(row["booked_at"], row["admitted_at"]))
    return out


def _start(
    item: Admission, worker_id: int, limit: int | None, now: datetime | None
) -> Verb[Started]:
    job = item.job
    row = yield fetch_one("admit_start", {"now": now, "job_id": job.job_id, "epoch": job.epoch})
    execution = row["executions"]
    if audited(item.audit, EventCode.ADMITTED):
        passed = _gates(item.gates, limit)
        yield execute(
            "insert_event", _job_event(job, worker_id, EventCode.ADMITTED, now, detail=passed)
        )
    if audited(item.audit, EventCode.EXECUTION_STARTED):
        yield execute(
            "insert_event",
            _job_event(job, worker_id, EventCode.EXECUTION_STARTED, now, execution=execution),
        )
    return Started(execution=execution, cancel_requested=int(row["control"]))


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
    item: Admission,
    worker_id: int,
    until: datetime,
    ticket: datetime | None,
    gate: str,
    name: str,
    message: str,
    detail: dict[str, Any],
    now: datetime | None,
) -> Verb[Bounced]:
    job, audit = item.job, item.audit
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
            return Started(earlier["executions"], cancel_requested=int(earlier["control"]))
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
