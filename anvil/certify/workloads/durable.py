"""Durable steps: three steps and one at-most-once step per job, each body witnessed.

A completed step must never run its body again; an at-most-once body runs at most once (an
interrupted one is reported by ``StepInterruptedError``, which the handler accepts, so the job
still succeeds).
"""

from __future__ import annotations

import time

from acta import Acta, StepInterruptedError, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

JOB = "certify.durable"
STEPS = ("s1", "amo", "s2", "s3")


def register(app: Acta, sink: Sink) -> None:
    def body(ref: str, step: str, execution: int) -> str:
        time.sleep(0.003)
        token = sink.record(ref, step, execution)  # committed: the body has run
        time.sleep(0.003)
        return token

    @app.job(JOB, input=int, max_attempts=100, timeout="60s")
    def durable(n: int, ctx: SyncJobContext) -> dict[str, str]:
        sink.run(ctx)
        ref, results = str(ctx.job), {}
        for step in STEPS:
            if step != "amo":
                results[step] = ctx.step(step, body, ref, step, ctx.execution)
                continue
            try:
                results[step] = ctx.step(step, body, ref, step, ctx.execution, at_most_once=True)
            except StepInterruptedError:
                results[step] = "interrupted"
        return results


def enqueue(ctx: Enqueueing) -> None:
    requests = [ctx.app.request(JOB, i, delay=ctx.delay(i)) for i in range(ctx.count)]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "durable",
    "steps s1, s2, s3 and an at-most-once step; no completed step re-run, no at-most-once re-entry",
    5,
    register,
    enqueue,
    checks=("durable_steps_once", "durable_amo_once"),
)
