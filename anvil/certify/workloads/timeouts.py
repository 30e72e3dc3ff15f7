"""Jobs that always overrun their 0.3 s timeout: two attempts, then failed."""

from __future__ import annotations

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.timeout"


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=int, max_attempts=2, timeout="300ms", backoff="20ms")
    def overrun(n: int, ctx: SyncJobContext) -> None:
        sink.run(ctx)
        # Wait far past the timeout; the timeout sets the run's cancellation, so the thread
        # ends soon after the worker gave up on it.
        ctx.cancellation.wait(5)


def enqueue(ctx: Enqueueing) -> None:
    requests = [ctx.app.request(JOB, i, delay=ctx.delay(i)) for i in range(ctx.count)]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.FAILED)


WORKLOAD = Workload(
    "timeouts",
    "overruns a 300 ms timeout on both of its 2 attempts; must fail",
    3,
    register,
    enqueue,
)
