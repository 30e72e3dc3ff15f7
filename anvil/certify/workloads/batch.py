"""Jobs enqueued in batches of 200 (one transaction each): short work, then success."""

from __future__ import annotations

import time

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.batch"
SIZE = 200


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=float, max_attempts=100)
    def batch(seconds: float, ctx: SyncJobContext) -> None:
        sink.run(ctx)
        time.sleep(seconds)


def enqueue(ctx: Enqueueing) -> None:
    requests = [
        ctx.app.request(JOB, round(ctx.rng.uniform(0.001, 0.02), 4), delay=ctx.delay(i))
        for i in range(ctx.count)
    ]
    for part in chunks(requests, SIZE):
        refs = ctx.app.enqueue_batch(part)
        ctx.ledger.expect(WORKLOAD.name, refs, JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "batch", f"enqueue_batch of {SIZE}; 1-20 ms of work; must succeed", 44, register, enqueue
)
