"""Durable execution at its edges, first written as specs of bugs the docs work found (now
fixed):

- A killed worker writes nothing more, durable rows included. The test host's ``kill`` stands
  for the process dying this instant: a step body that was running then cannot record its
  result, so on re-entry an ordinary step runs its body again (at least once) and an
  at-most-once step raises StepInterruptedError (docs/guide/durable-execution.md).
- A strict deadline ends a job at the deadline, even one suspended on a wait.
- A step's result is typed by ``returns=``, else by its body's return annotation, on the first
  run as on re-entry.
- A payload that cannot be encoded is refused with an error that names it (the signal's
  payload, the variable), not "input".
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from acta import Acta, JobContext, JobStatus, PayloadError, Reason, SyncJobContext
from acta_testing import Host


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


@dataclass
class Receipt:
    charge_id: str
    cents: int


def issue_receipt() -> Receipt:
    return Receipt("ch_1", 1999)


def corners() -> tuple[int, int]:
    return (3, 4)


def test_a_step_result_is_typed_by_its_body_annotation(acta_app: Acta, acta_host: Host) -> None:
    seen: list[object] = []

    @acta_app.job("bill-customer", backoff="1s")
    async def bill_customer(ctx: JobContext) -> str:
        receipt = await ctx.step("receipt", issue_receipt)
        size = await ctx.step("corners", corners)
        seen.append((receipt, size))
        if ctx.execution == 1:
            raise ConnectionError("re-enter, to compare with the stored results")
        return receipt.charge_id

    ref = bill_customer.enqueue()
    acta_host.run_until_idle()
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED
    assert seen == [(Receipt("ch_1", 1999), (3, 4))] * 2


class Opaque:
    """A value no codec can store."""


def test_an_unencodable_payload_is_named_in_the_error(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("await-go", max_attempts=1)
    async def await_go(ctx: JobContext) -> None:
        await ctx.set("cursor", Opaque())

    ref = await_go.enqueue()
    with pytest.raises(PayloadError) as refused:
        acta_app.signal(ref, "go", Opaque())
    assert str(refused.value).startswith("payload")
    assert acta_host.tick() == "failed"
    assert "variable cursor" in (acta_host.events(ref)[-1].message or "")
