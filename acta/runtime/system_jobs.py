"""System jobs: recurring maintenance claimed like any other job, so no worker is a leader.

Each system job is one slot per namespace: a job row whose deduplication key is its name, put
in place by every worker's registration (only the first one writes it) and re-armed after each
run, whatever the run did. Whichever peer claims the slot does the work.

``sys.recovery`` declares silent workers dead and takes back lapsed leases. It re-arms itself
every heartbeat interval of the worker that ran it, at the top priority so a backlog cannot
starve it. If the peer running it dies mid-run, the others' heartbeats put the slot back
(acta.ledger.incarnation.reclaim_recovery_slot). The other system jobs are recovered like any job.

A system job may not be ``available`` in every worker (the outbox relay needs the application's
database): a worker where it is not hands the slot back untouched and never claims it again,
exactly as it does with a job it has no handler for.
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
from acta.runtime.alerting import ALERTS_JOB, alerts_available, alerts_every, run_alerts
from acta.runtime.environment import RunEnv
from acta.runtime.relay import relay_available, relay_every, run_relay
from acta.runtime.retention import RETENTION_JOB, retention_every, run_retention

log = logging.getLogger("acta.recovery")

RECOVERY_JOB = "sys.recovery"
"""The recovery slot's job name, also its deduplication key: one slot per namespace."""

OUTBOX_JOB = "sys.outbox"
"""The outbox relay's slot (acta.runtime.relay), in namespaces whose workers have a source."""

SYSTEM_PRIORITY = 100


@dataclass(frozen=True, slots=True)
class SystemJob:
    """A recurring job acta runs for itself."""

    definition: JobDefinition[Any, Any]
    run: Callable[[RunEnv, JobContext], Awaitable[Any]]
    every: Callable[[RunEnv], timedelta]
    """How long after a run its slot comes due again."""
    available: Callable[[RunEnv], bool] = lambda env: True
    """Whether this worker can run it; where not, the worker neither adds its slot nor runs it."""
    first: Callable[[RunEnv], timedelta] = lambda env: timedelta(0)
    """How long after the slot is first put in place it comes due (at once by default)."""


async def run_recovery(env: RunEnv, ctx: JobContext) -> None:
    # One small batch per transaction, until none is full: a fault costs one batch.
    ledger, namespace_id = env.ledger, env.identity.namespace_id
    dead = recovered = failed = 0
    while True:
        report = await ledger.run_async(lambda: recover(namespace_id, ledger.now()), name="recover")
        dead += len(report.dead_workers)
        recovered += len(report.recovered)
        failed += len(report.failed)
        if ledger.telemetry is not None:
            ledger.telemetry.leases_lost(env.namespace, len(report.recovered) + len(report.failed))
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


SYSTEM_POLICY = JobPolicy(max_attempts=1000, priority=SYSTEM_PRIORITY, audit=AuditLevel.FAILURES)
"""Every system job's policy: top priority, failures audited, and (a slot re-arms after every
run) enough attempts that only a long run of lost leases could exhaust them."""


def system_definition(name: str) -> JobDefinition[Any, Any]:
    """The definition of the system job ``name`` (a ``sys.`` name; no handler of its own)."""
    return JobDefinition(name, None, SYSTEM_POLICY, system=True)


def _system_jobs() -> dict[str, SystemJob]:
    jobs = [
        SystemJob(
            system_definition(RECOVERY_JOB),
            run_recovery,
            lambda env: env.heartbeat,
            first=lambda env: env.heartbeat,
        ),
        # Nothing to purge on a new ledger, and a fleet restarting should not start by purging.
        SystemJob(
            system_definition(RETENTION_JOB), run_retention, retention_every, first=retention_every
        ),
        SystemJob(system_definition(OUTBOX_JOB), run_relay, relay_every, relay_available),
        SystemJob(system_definition(ALERTS_JOB), run_alerts, alerts_every, alerts_available),
    ]
    return {job.definition.name: job for job in jobs}


SYSTEM_JOBS = _system_jobs()
"""The system jobs every worker runs, by name (their definitions belong to no application)."""
