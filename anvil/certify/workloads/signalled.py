"""Jobs that wait for a signal, which the producer sends while the run goes on.

Each job waits (suspended, no lease held) for the signal ``go``; the producer sends it at a
seeded moment between half a second before and two seconds after the job falls due, so some
signals are kept for a wait not yet reached and others release a job already waiting. The
payload names the job (``for <ref>``). Past the wait the handler runs one durable step, its
effect, which records the payload it received in the witness table. Checks: the job was
signalled once and its effect saw that payload (``signal_received_once``), and the effect ran
once unless a lost run explains it (``durable_steps_once``).
"""

from __future__ import annotations

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.signalled"
SIGNAL = "go"
EFFECT = "effect"


def payload(ref: object) -> str:
    """What the producer sends to job ``ref`` (signal_received_once expects exactly this)."""
    return f"for {ref}"


def register(app: Acta, sink: Sink) -> None:
    def effect(ref: str, received: str, execution: int) -> str:
        return sink.record(ref, EFFECT, execution, token=received)

    @app.job(JOB, input=int, max_attempts=100, timeout="60s")
    def signalled(n: int, ctx: SyncJobContext) -> str:
        sink.run(ctx)
        received = ctx.wait_signal(SIGNAL, type=str)
        return str(ctx.step(EFFECT, effect, str(ctx.job), received, ctx.execution))


def enqueue(ctx: Enqueueing) -> None:
    requests = [ctx.app.request(JOB, i, delay=ctx.delay(i)) for i in range(ctx.count)]
    refs: list[str] = []
    for part in chunks(requests, 100):
        made = ctx.app.enqueue_batch(part)
        ctx.ledger.expect(WORKLOAD.name, made, JobStatus.SUCCEEDED)
        refs += [str(ref) for ref in made]
    step = ctx.spread / max(ctx.count, 1)
    ctx.state["pending"] = sorted(
        (i * step + ctx.rng.uniform(-0.5, 2.0), ref) for i, ref in enumerate(refs)
    )


def during(ctx: Enqueueing, elapsed: float) -> None:
    pending: list[tuple[float, str]] = ctx.state.get("pending", [])
    while pending and pending[0][0] <= elapsed:
        # Taken off the list only once sent: a send refused (the database locked, the server
        # restarting) is sent again on the next call; one that committed but whose answer was
        # lost comes back ALREADY_SENT, writing nothing.
        ref = pending[0][1]
        ctx.app.signal(ref, SIGNAL, payload(ref))
        pending.pop(0)


WORKLOAD = Workload(
    "signalled",
    f"waits for signal {SIGNAL!r}, sent during the run; must succeed with its payload, once",
    4,
    register,
    enqueue,
    during,
    checks=("durable_steps_once", "signal_received_once"),
    params={"signal_job": JOB, "signal_name": SIGNAL, "signal_step": EFFECT},
    most=150,
)
