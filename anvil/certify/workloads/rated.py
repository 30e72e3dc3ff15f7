"""Rate-limited jobs: one meter at 40 starts a second; starts stay inside its envelope."""

from __future__ import annotations

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.rated"
RATE = "40/s"


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=int, max_attempts=100, rate_limit=RATE, rate_key="certify-meter")
    def rated(n: int, ctx: SyncJobContext) -> None:
        sink.run(ctx)


def enqueue(ctx: Enqueueing) -> None:
    requests = [ctx.app.request(JOB, i, delay=ctx.delay(i)) for i in range(ctx.count)]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "rated",
    f"one meter at {RATE}; must succeed, starts never past rate x window + burst",
    5,
    register,
    enqueue,
    checks=("rate_envelope",),
)
