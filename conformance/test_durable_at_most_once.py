"""At-most-once steps: the intent row is written before the body runs, so a worker that dies
inside the body leaves evidence; re-entry then refuses to call the body again and raises
StepInterruptedError, which fails the job for good unless the handler reconciles. A body that
raised is never re-run either. Such a step cannot also be retried.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from acta import (
    Acta,
    EventCode,
    JobContext,
    JobStatus,
    Reason,
    StepInterruptedError,
    SyncJobContext,
    ValidationError,
)
from acta_testing import Host
from conformance.conftest import Ledger
from conformance.durable_support import last_error, steps_of

BOUND = 30.0
"""Seconds a thread handshake may take before the spec gives up (a bound, never a pause)."""


def test_intent_is_recorded_before_the_body_runs(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    entered, carry_on = threading.Event(), threading.Event()

    def wire_money() -> str:
        entered.set()
        carry_on.wait(BOUND)  # hold the body while the test looks at the ledger
        return "wire-881"

    @acta_app.job("payout", max_attempts=3)
    def payout(ctx: SyncJobContext) -> str:
        return str(ctx.step("wire", wire_money, at_most_once=True))

    ref = payout.enqueue()
    with ThreadPoolExecutor(1) as pool:
        tick = pool.submit(acta_host.tick)
        assert entered.wait(BOUND)
        inside = steps_of(ledger, ref)  # what an operator sees while the body runs
        carry_on.set()
        assert tick.result(BOUND) == "completed"
    assert inside == [("wire", "begun", True, 1)]
    assert steps_of(ledger, ref) == [("wire", "completed", True, 1)]
    codes = [e.code for e in acta_host.events(ref)]
    assert codes.index(EventCode.STEP_BEGUN) < codes.index(EventCode.STEP_COMPLETED)
    assert acta_app.result(ref) == "wire-881"


def test_death_inside_the_body_fails_the_job_for_good(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    calls: list[int] = []

    async def launch_rocket() -> str:
        calls.append(1)
        acta_host.kill(first)  # the process dies while the effect may or may not have happened
        await asyncio.Event().wait()
        return "launched"

    @acta_app.job("launch", max_attempts=5)
    async def launch(ctx: JobContext) -> str:
        return str(await ctx.step("ignite", launch_rocket, at_most_once=True))

    ref = launch.enqueue()
    assert acta_host.tick(first) == "killed"
    assert steps_of(ledger, ref) == [("ignite", "begun", True, 1)]
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "failed"
    assert calls == [1]  # never called again

    job = acta_host.job(ref)
    assert job.status is JobStatus.FAILED and job.executions == 2
    assert job.attempts < job.max_attempts  # attempts were left: no retry all the same
    assert acta_host.tick(peer) == "nothing-claimed"
    events = acta_host.events(ref)
    interrupted = [e for e in events if e.code is EventCode.STEP_INTERRUPTED]
    assert [(e.message, e.execution) for e in interrupted] == [("ignite", 2)]
    assert events[-1].code is EventCode.FAILED and events[-1].reason is Reason.STEP_INTERRUPTED
    error, reason = last_error(ledger, ref)
    assert reason == "step-interrupted"
    assert error is not None and "'ignite'" in error and "execution 1" in error


def test_caught_interruption_lets_the_handler_reconcile(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    caught: list[StepInterruptedError] = []
    calls: list[int] = []

    async def create_invoice() -> str:
        calls.append(1)
        acta_host.kill(first)
        await asyncio.Event().wait()
        return "inv-1"

    def look_up_invoice() -> str:
        return "inv-1 (found by its key)"

    @acta_app.job("invoice")
    async def invoice(ctx: JobContext) -> str:
        try:
            made = await ctx.step("create", create_invoice, at_most_once=True)
        except StepInterruptedError as exc:
            caught.append(exc)
            made = await ctx.step("reconcile", look_up_invoice)
        return str(made)

    ref = invoice.enqueue()
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"
    assert acta_app.result(ref) == "inv-1 (found by its key)"
    assert calls == [1]
    [exc] = caught
    assert (exc.step, exc.execution, exc.error) == ("create", 1, None)
    assert "step-interrupted" in acta_host.event_names(ref)  # written even when caught


def test_a_body_that_raised_is_never_run_again(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    calls: list[int] = []
    caught: list[StepInterruptedError] = []

    def send_sms() -> str:
        calls.append(1)
        raise ConnectionResetError("gateway hung up mid-request")

    @acta_app.job("sms", max_attempts=3, backoff="4s")
    async def sms(ctx: JobContext) -> str:
        try:
            return str(await ctx.step("send", send_sms, at_most_once=True))
        except StepInterruptedError as exc:
            caught.append(exc)
            raise

    ref = sms.enqueue()
    assert acta_host.tick() == "rearmed"  # the body's own error: an ordinary, retried failure
    assert steps_of(ledger, ref) == [("send", "interrupted", True, 1)]
    acta_host.advance("4s")
    assert acta_host.tick() == "failed"
    assert calls == [1]
    [exc] = caught
    assert exc.step == "send" and exc.execution == 1
    assert exc.error is not None
    assert exc.error.startswith("ConnectionResetError: gateway hung up mid-request")
    assert "gateway hung up" in str(exc)
    assert last_error(ledger, ref)[1] == "step-interrupted"


def test_sync_handler_gets_the_same_refusal(acta_app: Acta, acta_host: Host) -> None:
    calls: list[int] = []
    errors: list[str | None] = []

    def post_ledger_entry() -> None:
        calls.append(1)
        raise RuntimeError("bank API 502")

    @acta_app.job("sync-post", max_attempts=2, backoff="1s")
    def post(ctx: SyncJobContext) -> str:
        try:
            ctx.step("post", post_ledger_entry, at_most_once=True)
        except StepInterruptedError as exc:
            errors.append(exc.error)
            return "left for a human"
        return "posted"

    ref = post.enqueue()
    assert acta_host.tick() == "rearmed"
    acta_host.advance("1s")
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == "left for a human"
    assert calls == [1]
    assert len(errors) == 1 and errors[0] is not None and "bank API 502" in errors[0]


def test_interruption_is_recorded_whatever_the_audit_level(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    def refund() -> None:
        raise ValueError("card expired")

    @acta_app.job("quiet-refund", audit="off", max_attempts=2, backoff="1s")
    async def quiet(ctx: JobContext) -> None:
        await ctx.step("refund", refund, at_most_once=True)

    ref = quiet.enqueue()
    assert acta_host.tick() == "rearmed"
    acta_host.advance("1s")
    assert acta_host.tick() == "failed"
    names = acta_host.event_names(ref)
    assert "step-begun" not in names  # audit off: no timeline of intents
    # Written when the body's failure is recorded; the later refusal only reads the row.
    assert names.count("step-interrupted") == 1
    assert steps_of(ledger, ref) == [("refund", "interrupted", True, 1)]


def test_at_most_once_cannot_be_retried(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    refused: list[ValidationError] = []
    calls: list[int] = []

    def body() -> int:
        calls.append(1)
        return 1

    @acta_app.job("confused-amo")
    async def confused(ctx: JobContext) -> None:
        for options in ({"attempts": 3}, {"backoff": "5s"}):
            try:
                await ctx.step("pay", body, at_most_once=True, **options)
            except ValidationError as exc:
                refused.append(exc)

    ref = confused.enqueue()
    assert acta_host.tick() == "completed"
    assert [e.field for e in refused] == ["at_most_once", "at_most_once"]
    assert "cannot be retried" in str(refused[0])
    assert calls == [] and steps_of(ledger, ref) == []


def test_interruption_keeps_the_execution_that_began_the_step(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    began_in: list[int] = []

    async def transfer() -> None:
        acta_host.kill(first)
        await asyncio.Event().wait()

    @acta_app.job("transfer")
    async def run(ctx: JobContext) -> str:
        try:
            await ctx.step("move", transfer, at_most_once=True)
        except StepInterruptedError as exc:
            began_in.append(exc.execution)
        if ctx.execution == 2:
            await ctx.sleep("1m")  # re-entered once more: the refusal must say the same
        return "reconciled"

    ref = run.enqueue()
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "suspended"
    acta_host.advance("1m")
    assert acta_host.tick(peer) == "completed"
    assert began_in == [1, 1]
    assert steps_of(ledger, ref) == [("move", "interrupted", True, 1)]
