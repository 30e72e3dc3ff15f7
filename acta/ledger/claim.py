"""Claiming and starting: the worker's hot path into the ledger.

``claim`` leases up to ``limit`` due jobs under a new epoch each and starts the first ``start``
of them in the same transaction (one statement on server dialects): those are for executors
that are free now. The rest stay dispatched until an executor takes them and ``start`` (or
``start_many``, group-committed) moves them to executing with their execution-started event.
All are fenced: a worker that lost its lease or was declared dead gets nothing.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from acta.ledger.events import event_params
from acta.ledger.transition import own_earlier_write
from acta.model.codes import EventCode, JobStatus
from acta.model.rows import Claimed, Started
from acta.provider.verb import Op, Verb, execute, fetch_all, fetch_one


def _lease(
    worker_id: int,
    namespace_id: int,
    limit: int,
    skip_definitions: Collection[int],
    lease_ms: int,
    now: datetime | None,
    only_job_id: int | None = None,
) -> Verb[list[Claimed]]:
    """The portable claim: lease up to ``limit`` due jobs (dispatched), in claim order; only
    the job ``only_job_id`` when given."""
    leased = yield fetch_all(
        "claim",
        {
            "now": now,
            "worker_id": worker_id,
            "namespace_id": namespace_id,
            "limit": limit,
            "skip": json.dumps(sorted(skip_definitions)),
            "lease_ms": lease_ms,
            "only_job_id": only_job_id,
        },
    )
    if not leased:
        return []
    rows = yield fetch_all(
        "claimed_jobs", {"job_ids": json.dumps([row["job_id"] for row in leased])}
    )
    return [_claimed(row) for row in rows]


def _claimed(row: Mapping[str, Any]) -> Claimed:
    return Claimed(
        job_id=row["job_id"],
        job_ref=row["job_ref"],
        name=row["name"],
        definition_id=row["definition_id"],
        namespace_id=row["namespace_id"],
        epoch=row["lease_epoch"],
        attempts=row["attempts"],
        executions=row["executions"],
        priority=row["priority"],
        input_codec=row["input_codec"],
        input=bytes(row["input"]),
        correlation_key=row["correlation_key"],
        created_at=row["created_at"],
        lane_id=row["lane_id"],
        concurrency_key=row["concurrency_key"],
        ticket_at=row["ticket_at"],
        parent_id=row["parent_id"],
        root_id=row["root_id"],
        deadline_at=row["deadline_at"],
        deadline_strict=bool(row["deadline_strict"]),
        parent_ref=row["parent_ref"],
        root_ref=row["root_ref"],
        trace_context=row["trace_context"],
        max_attempts=row.get("max_attempts"),
    )


def start(
    job: Claimed, worker_id: int, audit_started: bool, now: datetime | None
) -> Verb[Started | None]:
    """dispatched -> executing; None (with a fenced-write event) if the lease is gone.

    A start refused because this worker's own earlier start committed (its reply was lost)
    answers as that start did, and records nothing."""
    row = yield fetch_one(
        "start", {"now": now, "job_id": job.job_id, "epoch": job.epoch, "worker_id": worker_id}
    )
    if row is None:
        earlier = yield from own_earlier_write(job.job_id, job.epoch)
        if (
            earlier is not None
            and earlier["lease_epoch"] == job.epoch
            and earlier["lease_owner"] == worker_id
            and earlier["status"] == int(JobStatus.EXECUTING)
        ):
            return Started(
                execution=earlier["executions"], cancel_requested=int(earlier["control"])
            )
        yield execute(
            "insert_event",
            event_params(
                now,
                job.namespace_id,
                job.job_id,
                job.job_ref,
                EventCode.WRITE_FENCED,
                worker_id=worker_id,
                epoch=job.epoch,
                message=f"refused start at epoch {job.epoch}",
            ),
        )
        return None
    execution = row["executions"]
    if audit_started:
        yield execute(
            "insert_event",
            event_params(
                now,
                job.namespace_id,
                job.job_id,
                job.job_ref,
                EventCode.EXECUTION_STARTED,
                worker_id=worker_id,
                execution=execution,
                epoch=job.epoch,
            ),
        )
    return Started(execution=execution, cancel_requested=int(row["control"]))


def start_many(
    jobs: Sequence[tuple[Claimed, bool]], worker_id: int, now: datetime | None, fused: bool = False
) -> Verb[list[Started | None]]:
    """Start many claimed jobs in one transaction (group commit); one answer per job.

    Fused, the whole batch is one statement; a run it could not start (its lease moved on)
    takes the portable path, which records the fenced write."""
    done: dict[int, Started] = {}
    if fused:
        rows = yield fetch_all(
            "fused_start",
            {
                "now": now,
                "worker_id": worker_id,
                "job_ids": [job.job_id for job, _ in jobs],
                "epochs": [job.epoch for job, _ in jobs],
                "audit": [audit for _, audit in jobs],
            },
            alone=True,
        )
        done = {row["job_id"]: Started(row["executions"], bool(row["control"])) for row in rows}
    out: list[Started | None] = []
    for job, audit_started in jobs:
        if job.job_id in done:
            out.append(done[job.job_id])
        else:
            out.append((yield from start(job, worker_id, audit_started, now)))
    return out


def claim(
    worker_id: int,
    namespace_id: int,
    limit: int,
    skip_definitions: Collection[int],
    lease_ms: int,
    now: datetime | None,
    startable: Collection[int],
    quiet_definitions: Collection[int],
    *,
    start: int,
    fused: bool = False,
    held: Collection[int] = (),
) -> Verb[list[tuple[Claimed, Started | None]]]:
    """Lease up to ``limit`` due jobs and start the first ``start`` of them whose definition is
    in ``startable`` and that name no concurrency key (those wait for admission), in one
    transaction (one statement when ``fused``). Each claimed job comes
    with its Started, or None when it was only leased. ``quiet_definitions``: definitions
    whose audit level omits execution-started. ``held``: the jobs this worker holds now.

    The fused claim commits by itself; if its reply is lost, running it again would lease a
    second batch and orphan the first (leased to a worker that does not know). Its
    ``in_doubt`` probe finds that first batch instead: the rows leased to this worker that are
    not in ``held``. The portable claim is never in doubt on the shipped dialects (SQLite
    cannot lose a reply; PostgreSQL always claims fused)."""
    if fused:
        probe = Op(
            "claim_in_doubt",
            {"worker_id": worker_id, "held": json.dumps(sorted(held))},
            "all",
        )
        rows = yield fetch_all(
            "fused_claim",
            {
                "now": now,
                "worker_id": worker_id,
                "namespace_id": namespace_id,
                "limit": limit,
                "skip": sorted(skip_definitions),
                "lease_ms": lease_ms,
                "start": start,
                "startable": sorted(startable),
                "quiet_definitions": sorted(quiet_definitions),
            },
            alone=True,
            in_doubt=probe,
        )
        return [
            (
                _claimed(row),
                Started(row["execution"], bool(row["control"])) if row["started"] else None,
            )
            for row in rows
        ]
    claimed = yield from _lease(worker_id, namespace_id, limit, skip_definitions, lease_ms, now)
    # A job with a key of its own waits for admission, as in the fused claim; a job with a
    # strict deadline is started by its run, which first checks the deadline (a job claimed
    # too late is failed without an execution).
    startable_now = [
        job
        for job in claimed
        if job.definition_id in startable
        and job.concurrency_key is None
        and not (job.deadline_strict and job.deadline_at is not None)
    ]
    starting = startable_now[: max(0, start)]
    if not starting:
        return [(job, None) for job in claimed]
    items = [(job, job.definition_id not in quiet_definitions) for job in starting]
    started = yield from start_many(items, worker_id, now, fused)
    by_id = {job.job_id: s for job, s in zip(starting, started, strict=True)}
    return [(job, by_id.get(job.job_id)) for job in claimed]


def claim_job(
    worker_id: int, namespace_id: int, job_id: int, lease_ms: int, now: datetime | None
) -> Verb[Claimed | None]:
    """Lease one given job if it is ready and due: a busy worker taking a system job. The same
    claim statement as any claim, so what makes a job claimable is written once."""
    claimed = yield from _lease(worker_id, namespace_id, 1, (), lease_ms, now, job_id)
    return claimed[0] if claimed else None
