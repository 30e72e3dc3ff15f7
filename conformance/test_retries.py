"""A handler that fails twice, then succeeds, walked through its retries with the test clock."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import timedelta

from acta import Acta, JobContext, JobStatus, Outcome
from acta_testing import Host


@dataclass
class Charge:
    order: str


def test_fails_twice_then_succeeds(acta_app: Acta, acta_host: Host) -> None:
    seen: list[int] = []

    @acta_app.job("charge-card", backoff="1m..8h x2", max_attempts=5)
    def charge(inp: Charge, ctx: JobContext) -> str:
        seen.append(ctx.attempt)
        if ctx.attempt < 3:
            raise RuntimeError(f"card network down (attempt {ctx.attempt})")
        return f"charged {inp.order}"

    ref = charge.enqueue(Charge("ORD-1"))
    start = acta_host.clock.now()

    assert acta_host.tick() == "rearmed"
    job = acta_host.job(ref)
    assert job.status is JobStatus.READY and job.attempts == 1
    assert job.next_run_at == start + timedelta(minutes=1)
    assert acta_host.tick() == "nothing-claimed"  # not due yet: nothing runs early

    acta_host.advance("1m")
    assert acta_host.tick() == "rearmed"
    assert acta_host.job(ref).next_run_at == start + timedelta(minutes=3)  # 1m, then 2m

    acta_host.advance("2m")
    assert acta_host.tick() == "completed"
    assert seen == [1, 2, 3]
    done = acta_host.job(ref)
    assert done.status is JobStatus.SUCCEEDED
    assert (done.attempts, done.executions) == (2, 3)
    assert acta_app.result(ref) == "charged ORD-1"

    events = acta_host.events(ref)
    names = [e.code.label for e in events]
    assert names == [
        "enqueued",
        "execution-started",
        "execution-finished",
        "retry-scheduled",
        "execution-started",
        "execution-finished",
        "retry-scheduled",
        "execution-started",
        "execution-finished",
        "succeeded",
    ]
    finished = [e for e in events if e.code.label == "execution-finished"]
    assert [e.execution for e in finished] == [1, 2, 3]
    assert [e.outcome for e in finished] == [Outcome.FAILED, Outcome.FAILED, Outcome.SUCCEEDED]
    assert "card network down (attempt 2)" in (finished[1].message or "")


def test_run_until_idle_jumps_over_backoff(acta_app: Acta, acta_host: Host) -> None:
    calls = []

    @acta_app.job("flaky", backoff="30s", max_attempts=3)
    def flaky(ctx: JobContext) -> None:
        calls.append(acta_host.clock.now())
        raise ValueError("always")

    ref = flaky.enqueue()
    runs = acta_host.run_until_idle()
    assert runs == 3
    job = acta_host.job(ref)
    assert job.status is JobStatus.FAILED and job.attempts == 3
    assert [b - a for a, b in itertools.pairwise(calls)] == [timedelta(seconds=30)] * 2
    assert acta_host.event_names(ref)[-2:] == ["execution-finished", "failed"]
