"""Laned jobs: 20 lanes, members enqueued interleaved; one at a time per lane, in order."""

from __future__ import annotations

import time

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.laned"
LANES = 20


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=float, max_attempts=100)
    def laned(seconds: float, ctx: SyncJobContext) -> None:
        sink.run(ctx)
        time.sleep(seconds)


def enqueue(ctx: Enqueueing) -> None:
    requests = [
        ctx.app.request(
            JOB,
            round(ctx.rng.uniform(0.005, 0.03), 4),
            lane=f"lane-{i % LANES}",
            delay=ctx.delay(i),
        )
        for i in range(ctx.count)
    ]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "laned",
    f"{LANES} lanes, members interleaved; must succeed, one at a time per lane, in lane order",
    10,
    register,
    enqueue,
    checks=("lanes_overlap", "lanes_order"),
)
