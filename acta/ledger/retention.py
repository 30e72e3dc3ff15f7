"""Retention verbs: purge one batch of finished jobs past their retention, one batch of old
events, and look up what is left of a purged job.

Each verb is one transaction over at most ``batch`` rows, so a crash or a lost lease costs one
batch and the next run carries on where it stopped. The purge verbs are fenced: they first check
that the ``sys.retention`` slot is still held by the run calling them (same worker, same
execution), and write nothing otherwise.

A purged job leaves a tombstone (``purged_jobs``): its ref, id, definition, final status and
the instants it finished and was purged. Its events keep its id, so the timeline still reads by
the same index; the tombstone leaves with the events, at the event retention.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from acta.ledger.events import event_params
from acta.model.codes import EventCode, JobStatus
from acta.provider.verb import Verb, execute, fetch_all, fetch_one


@dataclass(frozen=True, slots=True)
class Fence:
    """The run of the ``sys.retention`` slot a purge speaks for."""

    namespace_id: int
    slot_ref: str
    worker_id: int
    execution: int


@dataclass(frozen=True, slots=True)
class PurgeBatch:
    """What one purge batch removed (nothing at all when the fence did not hold)."""

    held: bool
    """The slot was still this run's; False: nothing was written and the run must stop."""
    jobs: dict[str, int] = field(default_factory=dict)
    """Jobs purged, by definition name."""
    events: int = 0
    """Events deleted (event retention)."""
    tombstones: int = 0
    """Tombstones deleted with their events (event retention)."""
    full: bool = False
    """The batch was full: there may be more to purge."""

    @property
    def total(self) -> int:
        return sum(self.jobs.values())


@dataclass(frozen=True, slots=True)
class PurgedJob:
    """What the ledger still knows of a purged job."""

    job_ref: str
    job_id: int
    namespace: str
    name: str
    status: JobStatus
    finished_at: datetime
    purged_at: datetime


def _held(fence: Fence) -> Verb[int | None]:
    row = yield fetch_one(
        "retention_slot_held",
        {
            "slot_ref": fence.slot_ref,
            "worker_id": fence.worker_id,
            "execution": fence.execution,
        },
    )
    return None if row is None else int(row["job_id"])


def purge_jobs(fence: Fence, now: datetime | None, batch: int) -> Verb[PurgeBatch]:
    """Purge up to ``batch`` finished jobs past their definition's retention, with everything
    they own (the schema cascades from the job row), leaving one tombstone each, and write one
    purged event on the slot's timeline naming how many of which definitions."""
    slot_id = yield from _held(fence)
    if slot_id is None:
        return PurgeBatch(held=False)
    rows = yield fetch_all(
        "purgeable_jobs", {"now": now, "namespace_id": fence.namespace_id, "batch": batch}
    )
    if not rows:
        return PurgeBatch(held=True)
    ids = json.dumps([row["job_id"] for row in rows])
    yield execute("insert_tombstones", {"now": now, "job_ids": ids})
    yield execute("purge_jobs", {"job_ids": ids})
    counts = dict(sorted(Counter(str(row["name"]) for row in rows).items()))
    yield execute(
        "insert_event",
        event_params(
            now,
            fence.namespace_id,
            slot_id,
            fence.slot_ref,
            EventCode.PURGED,
            worker_id=fence.worker_id,
            execution=fence.execution,
            message=describe_jobs(counts),
            detail=json.dumps({"jobs": counts}),
        ),
    )
    return PurgeBatch(held=True, jobs=counts, full=len(rows) >= batch)


def purge_events(
    fence: Fence, now: datetime | None, retention_ms: int, batch: int
) -> Verb[PurgeBatch]:
    """Delete up to ``batch`` of the namespace's oldest events written more than
    ``retention_ms`` ago, and as many tombstones that old (their refs become unknown), then
    write one purged event saying so. Events leave in the order they were written."""
    slot_id = yield from _held(fence)
    if slot_id is None:
        return PurgeBatch(held=False)
    params = {
        "now": now,
        "namespace_id": fence.namespace_id,
        "retention_ms": retention_ms,
        "batch": batch,
    }
    events = yield execute("purge_events", params)
    tombstones = yield execute("purge_tombstones", params)
    if not events and not tombstones:
        return PurgeBatch(held=True)
    yield execute(
        "insert_event",
        event_params(
            now,
            fence.namespace_id,
            slot_id,
            fence.slot_ref,
            EventCode.PURGED,
            worker_id=fence.worker_id,
            execution=fence.execution,
            message=f"purged {events} events and {tombstones} purged-job records "
            "past the event retention",
            detail=json.dumps({"events": events, "tombstones": tombstones}),
        ),
    )
    return PurgeBatch(
        held=True,
        events=events,
        tombstones=tombstones,
        full=events >= batch or tombstones >= batch,
    )


def describe_jobs(counts: dict[str, int]) -> str:
    """``purged 3 jobs past their retention: report.daily 2, send-email 1``."""
    total = sum(counts.values())
    listed = ", ".join(f"{name} {count}" for name, count in counts.items())
    noun = "job" if total == 1 else "jobs"
    return f"purged {total} {noun} past their retention: {listed}"


def purged(job_ref: str, namespace: str | None) -> Verb[PurgedJob | None]:
    """The tombstone of the purged job ``job_ref`` in ``namespace`` (None: any), or None."""
    row = yield fetch_one("purged_job_by_ref", {"job_ref": job_ref, "namespace": namespace})
    if row is None:
        return None
    return PurgedJob(
        job_ref=row["job_ref"],
        job_id=row["job_id"],
        namespace=row["namespace"],
        name=row["name"],
        status=JobStatus(row["status"]),
        finished_at=row["finished_at"],
        purged_at=row["purged_at"],
    )
