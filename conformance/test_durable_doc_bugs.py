"""What durable execution should do and the core does not do yet, each spec marked xfail
(strict) with the bug it shows, so that the fix turns it into an ordinary spec.

- A killed worker writes nothing more, durable rows included. The test host's ``kill`` stands
  for the process dying this instant: a step body that was running then cannot record its
  result, so on re-entry an ordinary step runs its body again (at least once) and an
  at-most-once step raises StepInterruptedError (docs/guide/durable-execution.md).
- A strict deadline ends a job at the deadline, even one suspended on a wait.
"""

from __future__ import annotations

import pytest

from acta import Acta, JobContext, JobStatus, Reason, SyncJobContext
from acta_testing import Host

BUG = (
    "core bug: a killed worker's handler keeps writing durable rows (step results, "
    "variables): DurablePort._write (acta/runtime/durable.py) does not check env.killed, "
    "so the step a worker died in is recorded completed"
)


@pytest.mark.xfail(strict=True, reason=BUG)
def test_a_step_body_cut_short_by_a_crash_runs_again(acta_app: Acta, acta_host: Host) -> None:
    first, peer = acta_host.worker, acta_host.add_worker()
    bodies: list[int] = []

    @acta_app.job("send-parcel")
    def send_parcel(ctx: SyncJobContext) -> int:
        def book_courier() -> int:
            bodies.append(ctx.execution)
            if ctx.execution == 1:
                acta_host.kill(first)  # the process dies before the step's result is written
            return 7

        return ctx.step("book-courier", book_courier)

    ref = send_parcel.enqueue()
    assert acta_host.tick(first) == "killed"
    assert acta_host.run_until_idle(peer) == 1
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
    assert bodies == [1, 2]  # the dead worker's result was never recorded


@pytest.mark.xfail(strict=True, reason=BUG)
def test_an_at_most_once_step_cut_short_by_a_crash_is_interrupted(
    acta_app: Acta, acta_host: Host
) -> None:
    first, peer = acta_host.worker, acta_host.add_worker()
    bodies: list[int] = []

    @acta_app.job("wire-money")
    def wire_money(ctx: SyncJobContext) -> str:
        def transfer() -> str:
            bodies.append(ctx.execution)
            acta_host.kill(first)  # dies inside the body: only the intent row is on record
            return "tx-1"

        return ctx.step("transfer", transfer, at_most_once=True)

    ref = wire_money.enqueue()
    assert acta_host.tick(first) == "killed"
    acta_host.run_until_idle(peer)
    assert bodies == [1]
    assert acta_host.job(ref).status is JobStatus.FAILED
    last = acta_host.events(ref)[-1]
    assert last.reason is Reason.STEP_INTERRUPTED


@pytest.mark.xfail(
    strict=True,
    reason="core bug: a suspended job is not woken by its strict deadline (the suspension's "
    "next_run_at is the wait's timer only, 9999-01-01 without one), so it outlives the deadline",
)
def test_a_strict_deadline_ends_a_job_suspended_on_a_wait(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("await-approval")
    async def await_approval(ctx: JobContext) -> str:
        answer: str = await ctx.wait_signal("approved")  # no timeout of its own
        return answer

    ref = await_approval.enqueue(deadline="1h")
    assert acta_host.tick() == "suspended"
    acta_host.run_until_idle()
    job = acta_host.job(ref)
    assert job.status is JobStatus.FAILED
    assert acta_host.events(ref)[-1].reason is Reason.DEADLINE
