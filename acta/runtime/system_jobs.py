"""System jobs: recurring maintenance claimed like any other job, so no worker is a leader.

``sys.recovery`` declares silent workers dead and takes back lapsed leases. It re-arms itself
every heartbeat interval of the worker that ran it, at the top priority so a backlog cannot
starve it. Whichever peer claims the slot does the work; if that peer dies mid-run, the others'
heartbeats put the slot back (acta.ledger.incarnation.reclaim_recovery_slot).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from acta.context import JobContext
from acta.definition import JobDefinition
from acta.ledger.transition import recover
from acta.model.codes import AuditLevel
from acta.policy.job import JobPolicy
from acta.runtime.environment import RunEnv

log = logging.getLogger("acta.recovery")

RECOVERY_JOB = "sys.recovery"
"""The recovery slot's job name, also its deduplication key: one slot per namespace."""

SYSTEM_PRIORITY = 100


@dataclass(frozen=True, slots=True)
class SystemJob:
    """A recurring job acta runs for itself."""

    definition: JobDefinition[Any, Any]
    run: Callable[[RunEnv, JobContext], Awaitable[Any]]
    every: Callable[[RunEnv], timedelta]


async def run_recovery(env: RunEnv, ctx: JobContext) -> None:
    # One small batch per transaction, until none is full: a fault costs one batch.
    ledger, namespace_id = env.ledger, env.identity.namespace_id
    dead = recovered = failed = 0
    while True:
        report = await ledger.run_async(lambda: recover(namespace_id, ledger.now()), name="recover")
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


def _system_jobs() -> dict[str, SystemJob]:
    policy = JobPolicy(max_attempts=1000, priority=SYSTEM_PRIORITY, audit=AuditLevel.FAILURES)
    recovery: JobDefinition[Any, Any] = JobDefinition(RECOVERY_JOB, None, policy, system=True)
    return {RECOVERY_JOB: SystemJob(recovery, run_recovery, lambda env: env.heartbeat)}


SYSTEM_JOBS = _system_jobs()
"""The system jobs every worker runs, by name (their definitions belong to no application)."""
