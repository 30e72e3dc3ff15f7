"""What the test host keeps from running until a test asks: schedules and periodic system jobs.

A declared schedule puts a slot job in the ledger when a worker registers, and acta's periodic
system jobs (retention, alerts, the outbox relay) have slots too. In production whichever worker
claims a due slot runs it; in a test that would run a schedule's firing or a retention pass in
place of the job the test enqueued. So the host's workers skip the definitions of those slots
(the worker's ``skipped`` set, which claims leave out) unless schedules are on, and a tick that
then found nothing looks for a due job of a scheduled definition that is not its slot (a test
may enqueue a scheduled job by hand) and claims it by id. Lease recovery always runs: the host's
``kill`` and ``pause`` are tested through it.
"""

from __future__ import annotations

from datetime import datetime

from acta.model.codes import JobStatus
from acta.registry import Registry
from acta.runtime.registration import scheduled
from acta.runtime.system_jobs import RECOVERY_JOB, SYSTEM_JOBS
from acta.runtime.worker import Worker

MUTED_SYSTEM_JOBS = tuple(name for name in SYSTEM_JOBS if name != RECOVERY_JOB)


def muted_names(registry: Registry) -> list[str]:
    """The definitions whose slots stay idle while schedules are off."""
    return [*MUTED_SYSTEM_JOBS, *(d.name for d in scheduled(registry))]


def muted_ids(worker: Worker, registry: Registry) -> set[int]:
    """The definition ids (learnt at the worker's registration) of ``muted_names``."""
    known = worker.claimer._definition_ids  # what the claim itself knows them by
    return {known[name] for name in muted_names(registry) if name in known}


class Skipping:
    """Add ``ids`` to the worker's skipped definitions for a block, and take back only those
    the worker did not skip by itself (a definition it has no handler for stays skipped)."""

    def __init__(self, worker: Worker, ids: set[int]) -> None:
        self.skipped = worker.skipped
        self.added = ids - self.skipped

    def __enter__(self) -> None:
        self.skipped.update(self.added)

    def __exit__(self, *exc: object) -> None:
        self.skipped.difference_update(self.added)


def due_by_hand(
    worker: Worker, registry: Registry, jobs: list[tuple[int, str, int, int, datetime]]
) -> int | None:
    """Of ``jobs`` (id, name, status, priority, next run), the one a claim would take first
    among the due, ready jobs of scheduled definitions that are not their slot; None if none."""
    names = {d.name for d in scheduled(registry)}
    slots = set(worker.identity.schedule_slots)
    now = worker.clock.now()
    due = [
        (-priority, at, job_id)
        for job_id, name, status, priority, at in jobs
        if name in names and job_id not in slots and status == JobStatus.READY and at <= now
    ]
    return min(due)[2] if due else None
