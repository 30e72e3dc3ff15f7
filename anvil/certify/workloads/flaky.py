"""Jobs that fail their first one or two attempts and then succeed (retries, short backoff)."""

from __future__ import annotations

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.flaky"


class Flaky(Exception):
    """The planned failure of an early attempt."""


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=int, max_attempts=100, backoff="20ms..100ms x2")
    def flaky(failures: int, ctx: SyncJobContext) -> None:
        sink.run(ctx)
        # ctx.attempt counts the attempts spent so far plus one; a lost lease spends one too,
        # so a job whose worker was killed may succeed sooner, never later.
        if ctx.attempt <= failures:
            raise Flaky(f"planned failure of attempt {ctx.attempt} of {failures}")


def enqueue(ctx: Enqueueing) -> None:
    requests = [
        ctx.app.request(JOB, ctx.rng.randint(1, 2), delay=ctx.delay(i)) for i in range(ctx.count)
    ]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.SUCCEEDED)


WORKLOAD = Workload("flaky", "fails its first 1-2 attempts, then succeeds", 10, register, enqueue)
