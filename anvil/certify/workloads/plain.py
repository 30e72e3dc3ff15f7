"""Plain jobs, enqueued one at a time: a short random amount of work, then success."""

from __future__ import annotations

import time

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload

JOB = "certify.plain"


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=float, max_attempts=100)
    def plain(seconds: float, ctx: SyncJobContext) -> None:
        sink.run(ctx)
        time.sleep(seconds)


def enqueue(ctx: Enqueueing) -> None:
    refs = [
        ctx.app.enqueue(JOB, round(ctx.rng.uniform(0.001, 0.03), 4), delay=ctx.delay(i))
        for i in range(ctx.count)
    ]
    ctx.ledger.expect(WORKLOAD.name, refs, JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "plain",
    "one enqueue each; 1-30 ms of work; must succeed",
    6,
    register,
    enqueue,
    most=300,
)
