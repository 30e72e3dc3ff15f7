"""System jobs: recurring maintenance claimed like any other job, so no worker is a leader.

``sys.recovery`` declares silent workers dead and takes back lapsed leases. It re-arms itself
every heartbeat interval of the worker that ran it, at the top priority so a backlog cannot
starve it. Whichever peer claims the slot does the work; if that peer dies mid-run, the others'
heartbeats put the slot back (acta.ledger.worker.reclaim_recovery_slot).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from acta.context import JobContext
from acta.job import JobDefinition, JobPolicy
from acta.ledger.transition import recover
from acta.ledger.worker import RECOVERY_JOB
from acta.model.codes import AuditLevel

if TYPE_CHECKING:
    from acta.app import Acta
    from acta.runtime.worker import Worker

log = logging.getLogger("acta.recovery")

SYSTEM_PRIORITY = 100


@dataclass(frozen=True, slots=True)
class SystemJob:
    """A recurring job acta runs for itself."""

    definition: JobDefinition[Any, Any]
    run: Callable[[Worker, JobContext], Awaitable[Any]]
    every: Callable[[Worker], timedelta]


async def run_recovery(worker: Worker, ctx: JobContext) -> None:
    # One small batch per transaction, until none is full: a fault costs one batch.
    dead = recovered = failed = 0
    while True:
        report = await worker.write(lambda: recover(worker.namespace_id, worker.now()))
        dead += len(report.dead_workers)
        recovered += len(report.recovered)
        failed += len(report.failed)
        if not report.more or not (report.recovered or report.failed):
            break  # (a full batch that took nothing back would only repeat itself)
    if dead or recovered or failed:
        log.warning(
            "recovery: %d dead workers, %d jobs returned to ready, %d failed after losing their "
            "worker",
            dead,
            recovered,
            failed,
        )


def system_jobs(app: Acta) -> dict[str, SystemJob]:
    """The system jobs a worker of ``app`` runs, by name."""
    policy = JobPolicy(max_attempts=1000, priority=SYSTEM_PRIORITY, audit=AuditLevel.FAILURES)
    recovery: JobDefinition[Any, Any] = JobDefinition(app, RECOVERY_JOB, None, policy, system=True)
    return {RECOVERY_JOB: SystemJob(recovery, run_recovery, lambda worker: worker.heartbeat)}
