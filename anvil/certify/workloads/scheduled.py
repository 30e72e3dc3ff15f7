"""A recurring schedule: one job on a one-second interval, declared by every lab-app worker.

It enqueues nothing: the fleet's recurring slot fires it every second for the whole run, through
kills, zombies and lock holds, and each firing's handler leaves a witness row under its
scheduled instant (``ctx.firing.at``, the text the fired event's message carries). The slot is
no expected job (it never ends), so the certification's own checks leave recurring slots out;
the three schedule checks judge it instead: no instant fired twice, no instant skipped
silently, each firing's handler ran once unless a lost run explains another.
"""

from __future__ import annotations

import time

from acta import Acta, SyncJobContext
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload

JOB = "certify.tick"
EVERY = "1s"


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, schedule=EVERY, timeout="60s", max_attempts=100)
    def tick(ctx: SyncJobContext) -> None:
        sink.run(ctx)
        firing = ctx.firing
        assert firing is not None, "a scheduled run always carries its firing"
        time.sleep(0.01)
        sink.record(ctx.job, firing.at.isoformat(), ctx.execution)  # the firing's effect
        time.sleep(0.01)


def enqueue(ctx: Enqueueing) -> None:
    return None  # the slot is the fleet's: its workers declare the schedule


WORKLOAD = Workload(
    "scheduled",
    f"one schedule every {EVERY}, fired by the fleet all run; no instant twice, none lost",
    0,
    register,
    enqueue,
    checks=("schedule_fired_once", "schedule_no_gap", "schedule_witness_once"),
    most=0,
)
