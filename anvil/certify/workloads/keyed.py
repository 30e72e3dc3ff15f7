"""Keyed jobs: 8 concurrency keys with a limit of 2 each; never more than 2 running per key."""

from __future__ import annotations

import time

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.keyed"
KEYS = 8
LIMIT = 2


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=float, max_attempts=100, concurrency_limit=LIMIT)
    def keyed(seconds: float, ctx: SyncJobContext) -> None:
        sink.run(ctx)
        time.sleep(seconds)


def enqueue(ctx: Enqueueing) -> None:
    requests = [
        ctx.app.request(
            JOB,
            round(ctx.rng.uniform(0.005, 0.03), 4),
            concurrency_key=f"key-{ctx.rng.randrange(KEYS)}",
            delay=ctx.delay(i),
        )
        for i in range(ctx.count)
    ]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "keyed",
    f"{KEYS} concurrency keys, limit {LIMIT}; must succeed, never over the limit",
    7,
    register,
    enqueue,
    checks=("concurrency_limit",),
)
