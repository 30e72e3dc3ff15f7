"""Durable sleeps: a step, a sleep of 0.4 s, another step; each step body witnessed.

The run that reaches the sleep ends there (the job is suspended, holding no lease); a later
execution re-enters from the top, takes the first step's stored result and goes on past the
sleep. So the step before the sleep must never run again once recorded (``durable_steps_once``)
and no execution may get past the sleep before it was due (``sleep_honoured``).
"""

from __future__ import annotations

import time
from datetime import timedelta

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.sleeping"
NAP = timedelta(milliseconds=400)
AFTER = "after-nap"  # the step past the sleep, named in sleep_honoured's parameters


def register(app: Acta, sink: Sink) -> None:
    def body(ref: str, step: str, execution: int) -> str:
        time.sleep(0.002)
        return sink.record(ref, step, execution)  # committed: the body has run

    @app.job(JOB, input=int, max_attempts=100, timeout="60s")
    def sleeping(n: int, ctx: SyncJobContext) -> dict[str, str]:
        sink.run(ctx)
        ref = str(ctx.job)
        before = ctx.step("before-nap", body, ref, "before-nap", ctx.execution)
        ctx.sleep(NAP, name="nap")
        after = ctx.step(AFTER, body, ref, AFTER, ctx.execution)
        return {"before": before, "after": after}


def enqueue(ctx: Enqueueing) -> None:
    requests = [ctx.app.request(JOB, i, delay=ctx.delay(i)) for i in range(ctx.count)]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "sleeping",
    "a step, a durable sleep of 0.4 s, a step; must succeed, no step re-run, no early wake",
    4,
    register,
    enqueue,
    checks=("durable_steps_once", "sleep_honoured"),
    params={"sleep_job": JOB, "sleep_after_step": AFTER},
    most=200,
)
