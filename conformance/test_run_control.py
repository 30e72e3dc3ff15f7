"""Cancellation and execution timeouts, sync and async, driven on the manual clock."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobContext, JobStatus, Outcome, Reason
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


async def _until_started(tick: asyncio.Task[Any], started: asyncio.Event) -> None:
    """Wait for the handler to signal it is running; fail (not hang) if the tick ends first."""
    waiter = asyncio.ensure_future(started.wait())
    await asyncio.wait({tick, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if not started.is_set():
        waiter.cancel()
        raise AssertionError(f"the tick ended before the handler started: {tick.result()}")


# -- cancel --------------------------------------------------------------------------------


def test_cancel_a_waiting_job(acta_app: Acta, acta_host: Host) -> None:
    ran: list[str] = []

    @acta_app.job("send-reminder")
    def remind(who: str) -> None:
        ran.append(who)

    now_ready = remind.enqueue("ada")
    later = remind.enqueue("grace", delay="1h")
    assert acta_app.cancel(now_ready) is JobStatus.CANCELLED
    assert acta_app.cancel(later, reason="customer unsubscribed") is JobStatus.CANCELLED

    for ref, message in ((now_ready, "cancelled by an operator"), (later, "customer unsubscribed")):
        job = acta_app.get(ref)
        assert job.status is JobStatus.CANCELLED and job.attempts == 0
        events = acta_app.events(ref)
        assert [e.code for e in events] == [EventCode.ENQUEUED, EventCode.CANCELLED]
        assert events[1].reason is Reason.OPERATOR and events[1].message == message
    acta_host.advance("2h")
    assert acta_host.run_until_idle() == 0
    assert ran == []


def test_cancel_a_finished_job_changes_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("finish", max_attempts=1)
    def finish(ok: bool) -> str:
        if not ok:
            raise ValueError("no")
        return "done"

    succeeded = finish.enqueue(True)
    failed = finish.enqueue(False)
    cancelled = finish.enqueue(True, delay="1h")
    acta_app.cancel(cancelled)
    assert acta_host.run_until_idle() == 2
    before = ledger.snapshot()

    assert acta_app.cancel(succeeded) is JobStatus.SUCCEEDED
    assert acta_app.cancel(failed) is JobStatus.FAILED
    assert acta_app.cancel(cancelled) is JobStatus.CANCELLED
    assert ledger.snapshot() == before
    assert acta_app.result(succeeded) == "done"


def test_cancel_a_running_sync_job(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    seen: list[Any] = []
    returned = threading.Event()

    @acta_app.job("long-export", max_attempts=3)
    def export(ctx: JobContext) -> str:
        try:
            seen.append(acta_app.cancel(ctx.job, reason="wrong month"))
            seen.append(acta_app.cancel(ctx.job))  # asking twice changes nothing more
            seen.append(ctx.cancelled)  # not yet: the worker learns it at its next heartbeat
            acta_host.advance(acta_host.worker.heartbeat)
            seen.append(ctx.cancelled)
            return "partial export"
        finally:
            returned.set()

    ref = export.enqueue()
    assert acta_host.tick() == "cancelled"
    # A thread cannot be interrupted: the run is settled without waiting for it to return.
    assert returned.wait(timeout=30)
    assert seen == [JobStatus.EXECUTING, JobStatus.EXECUTING, False, True]

    job = acta_host.job(ref)
    assert job.status is JobStatus.CANCELLED
    assert (job.attempts, job.executions) == (0, 1)  # cancelling spends no attempt
    assert job.cancel_requested is False
    events = acta_host.events(ref)
    assert [e.code for e in events] == [
        EventCode.ENQUEUED,
        EventCode.EXECUTION_STARTED,
        EventCode.CANCEL_REQUESTED,
        EventCode.EXECUTION_FINISHED,
        EventCode.CANCELLED,
    ]
    requested, finished = events[2], events[3]
    assert requested.reason is Reason.OPERATOR and requested.message == "wrong month"
    assert finished.outcome is Outcome.CANCELLED and finished.reason is Reason.OPERATOR
    assert acta_app.result(ref) is None  # the value returned after the stop is dropped
    assert ledger.count("results") == 0
    assert acta_host.run_until_idle() == 0


async def test_cancel_interrupts_an_async_handler(
    acta_app: Acta, acta_async_host: AsyncHost, ledger: Ledger
) -> None:
    started = asyncio.Event()
    interrupted: list[str] = []

    @acta_app.job("await-signal")
    async def await_signal(ctx: JobContext) -> str:
        started.set()
        try:
            await ctx.cancellation.wait_async()
        except asyncio.CancelledError:
            interrupted.append("cancelled-error")
            raise
        interrupted.append(f"woke: {ctx.cancellation.reason}")
        return "after the signal"

    ref = await await_signal.enqueue_async()
    tick = asyncio.create_task(acta_async_host.tick())
    await _until_started(tick, started)
    assert await acta_app.cancel_async(ref) is JobStatus.EXECUTING
    assert not tick.done()
    await acta_async_host.advance(acta_async_host.worker.heartbeat)
    assert await tick == "cancelled"

    assert interrupted in (["woke: cancel"], ["cancelled-error"])
    job = await acta_app.get_async(ref)
    assert job.status is JobStatus.CANCELLED and job.attempts == 0
    names = await acta_async_host.event_names(ref)
    assert names == [
        "enqueued",
        "execution-started",
        "cancel-requested",
        "execution-finished",
        "cancelled",
    ]
    assert ledger.count("results") == 0


# -- timeouts ------------------------------------------------------------------------------


def test_sync_handler_past_its_timeout_is_timed_out_and_retried(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    flags: list[bool] = []

    @acta_app.job("slow-report", timeout="30s", backoff="1m")
    def report(ctx: JobContext) -> str:
        if ctx.execution == 1:
            acta_host.advance("31s")
            return "too late"
        flags.append(ctx.cancelled)
        return "on time"

    ref = report.enqueue()
    assert acta_host.tick() == "rearmed"
    after_first = acta_host.clock.now()

    job = acta_host.job(ref)
    assert job.status is JobStatus.READY
    assert (job.attempts, job.executions) == (1, 1)
    assert job.next_run_at == after_first + timedelta(minutes=1)
    events = acta_host.events(ref)
    assert [e.code for e in events] == [
        EventCode.ENQUEUED,
        EventCode.EXECUTION_STARTED,
        EventCode.EXECUTION_FINISHED,
        EventCode.RETRY_SCHEDULED,
    ]
    finished, retry = events[2], events[3]
    assert finished.outcome is Outcome.TIMED_OUT and finished.reason is Reason.TIMEOUT
    assert finished.message == "execution timed out after 30 s"
    assert retry.reason is Reason.TIMEOUT
    assert acta_app.result(ref) is None and ledger.count("results") == 0

    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    assert flags == [False]
    assert acta_app.result(ref) == "on time"


@pytest.mark.parametrize("repeat", range(20))
def test_a_late_return_is_never_a_success(acta_app: Acta, acta_host: Host, repeat: int) -> None:
    """However the threads interleave, a handler that returns after its deadline timed out."""

    @acta_app.job("late", timeout="1s", max_attempts=1)
    def late() -> str:
        acta_host.advance("2s")
        return "late"

    ref = late.enqueue()
    assert acta_host.tick() == "failed"
    assert acta_app.result(ref) is None
    finished = [e for e in acta_app.events(ref) if e.code is EventCode.EXECUTION_FINISHED]
    assert [(e.outcome, e.reason) for e in finished] == [(Outcome.TIMED_OUT, Reason.TIMEOUT)]


async def test_async_handler_is_interrupted_at_its_timeout(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    started = asyncio.Event()
    interrupted: list[str] = []

    @acta_app.job("await-forever", timeout="30s", max_attempts=1)
    async def await_forever(ctx: JobContext) -> str:
        started.set()
        try:
            await ctx.cancellation.wait_async()
        except asyncio.CancelledError:
            interrupted.append("cancelled-error")
            raise
        interrupted.append(f"woke: {ctx.cancellation.reason}")
        return "never stored"

    ref = await await_forever.enqueue_async()
    tick = asyncio.create_task(acta_async_host.tick())
    await _until_started(tick, started)
    await acta_async_host.advance(timedelta(seconds=30) - timedelta(milliseconds=1))
    assert not tick.done()  # a millisecond short of the limit, the handler keeps waiting
    await acta_async_host.advance("1ms")
    assert await tick == "failed"

    assert interrupted in (["woke: timeout"], ["cancelled-error"])
    job = await acta_app.get_async(ref)
    assert job.status is JobStatus.FAILED
    assert (job.attempts, job.executions) == (1, 1)
    events = await acta_app.events_async(ref)
    assert [e.code for e in events][-2:] == [EventCode.EXECUTION_FINISHED, EventCode.FAILED]
    finished, failed = events[-2], events[-1]
    assert (finished.outcome, finished.reason) == (Outcome.TIMED_OUT, Reason.TIMEOUT)
    assert finished.duration_ms == 30_000
    assert failed.reason is Reason.ATTEMPTS_EXHAUSTED
    assert await acta_app.result_async(ref) is None


def test_an_abandoned_sync_handler_keeps_its_executor_busy(acta_app: Acta, acta_host: Host) -> None:
    worker = acta_host.add_worker(executors=1)
    release = threading.Event()

    @acta_app.job("wedged", timeout="10s", max_attempts=1)
    def wedged(ctx: JobContext) -> None:
        acta_host.advance("11s")  # the timeout fires while this thread is still busy
        release.wait(30)  # bounded: the test releases it below

    @acta_app.job("quick")
    def quick() -> str:
        return "ran"

    stuck = wedged.enqueue()
    later = quick.enqueue()
    assert acta_host.tick(worker) == "failed"  # timed out and settled, thread still inside
    assert acta_host.job(stuck).status.label == "failed"
    assert acta_host.tick(worker) == "nothing-claimed"  # its only executor is still occupied
    release.set()
    for thread in list(worker.slots.abandoned):
        thread.result(timeout=30)
    assert acta_host.tick(worker) == "completed"
    assert acta_app.result(later) == "ran"
