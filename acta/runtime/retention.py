"""``sys.retention``: the recurring system job that keeps the ledger from growing forever.

Each run purges, batch by batch, the finished jobs whose finish is at least their definition's
retention ago (``@app.job(..., retention="14d")``, read from the ledger's definitions row, so any
worker purges jobs it has no handler for), then deletes, batch by batch, the events older than
the worker's ``event_retention``. One transaction per batch: a crash or a lost lease costs one
batch, and the next run, whoever claims the slot, carries on. A run stops early when it could
never finish (``MAX_BATCHES_PER_RUN``); the slot comes due again after ``retention_every``.

What is never purged, the ledger verbs decide (acta.ledger.retention): jobs that are not
finished, recurring slots, parents with open children, children of open parents.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from acta.context import JobContext
from acta.errors import LeaseLostError
from acta.ledger.retention import Fence, PurgeBatch, purge_events, purge_jobs
from acta.runtime.environment import RunEnv

log = logging.getLogger("acta.retention")

RETENTION_JOB = "sys.retention"
"""The retention slot's job name, also its deduplication key: one slot per namespace."""

MAX_BATCHES_PER_RUN = 1000
"""Batches one run may commit per kind before it yields to the next run; bounds how long a
run holds its slot after a long outage left a big backlog."""


def retention_every(env: RunEnv) -> timedelta:
    """How long after a run the retention slot comes due again (WorkerSettings)."""
    return env.settings.retention_every


async def run_retention(env: RunEnv, ctx: JobContext) -> None:
    """Purge finished jobs past their retention, then events past the event retention."""
    settings, ledger = env.settings, env.ledger
    fence = Fence(
        namespace_id=env.identity.namespace_id,
        slot_ref=str(ctx.job),
        worker_id=env.identity.worker_id,
        execution=ctx.execution,
    )
    batch = settings.retention_batch
    event_ms = settings.event_retention // timedelta(milliseconds=1)
    jobs = events = 0
    for _ in range(MAX_BATCHES_PER_RUN):
        done = await ledger.run_async(
            lambda: purge_jobs(fence, ledger.now(), batch), name="purge-jobs"
        )
        _check(done)
        jobs += done.total
        if not done.full:
            break
    for _ in range(MAX_BATCHES_PER_RUN):
        done = await ledger.run_async(
            lambda: purge_events(fence, ledger.now(), event_ms, batch), name="purge-events"
        )
        _check(done)
        events += done.events
        if not done.full:
            break
    if jobs or events:
        log.info("retention: purged %d finished jobs and %d old events", jobs, events)


def _check(done: PurgeBatch) -> None:
    # The fence did not hold: recovery took the slot back (this worker went silent), so
    # another run owns retention now; this one must write nothing more.
    if not done.held:
        raise LeaseLostError("sys.retention lost its slot; the next run carries on")
