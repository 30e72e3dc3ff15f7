"""Jobs cancelled by an operator: some before they start, most while their handler waits."""

from __future__ import annotations

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.cancel"


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=int, max_attempts=100)
    def waits(n: int, ctx: SyncJobContext) -> str:
        sink.run(ctx)
        # Wait for the cancellation; one that never comes ends the run in success, which the
        # outcome check reports (the job was expected cancelled). Long: the producer sends
        # cancels from one thread, and a server restart can hold it up for a while.
        ctx.cancellation.wait(120)
        ctx.cancellation.raise_if_cancelled()
        return "never cancelled"


def enqueue(ctx: Enqueueing) -> None:
    requests = [ctx.app.request(JOB, i, delay=ctx.delay(i)) for i in range(ctx.count)]
    pending: list[tuple[float, str]] = []
    for part in chunks(requests, 100):
        refs = ctx.app.enqueue_batch(part)
        ctx.ledger.expect(WORKLOAD.name, refs, JobStatus.CANCELLED)
        pending += [(0.0, str(ref)) for ref in refs]
    # Cancel each job at a seeded moment between 1 s before and 2 s after it falls due.
    step = ctx.spread / max(ctx.count, 1)
    ctx.state["pending"] = sorted(
        (i * step + ctx.rng.uniform(-1.0, 2.0), ref) for i, (_, ref) in enumerate(pending)
    )


def during(ctx: Enqueueing, elapsed: float) -> None:
    pending: list[tuple[float, str]] = ctx.state.get("pending", [])
    while pending and pending[0][0] <= elapsed:
        # Taken off the list only once sent: a cancel refused (the database locked, the
        # server restarting) is sent again on the next call.
        ctx.app.cancel(pending[0][1], "anvil certify cancels it")
        pending.pop(0)


WORKLOAD = Workload(
    "cancels",
    "waits for its cancellation, sent while queued or running; must end cancelled",
    3,
    register,
    enqueue,
    during,
    most=600,
)
