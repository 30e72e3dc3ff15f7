"""Results, and waiting for them from outside: a handler's return value is kept with its job and
read back typed by ref; ``wait``/``run_and_wait`` answer it once the job ends, raise
``JobFailedError`` when it failed or was cancelled, and ``WaitTimeoutError`` (the job goes on)
when their own timeout passes first.

The waits poll the job on the application's clock. Under the test host that clock is a
``ManualClock``, which moves only when the test moves it: ``driven`` runs a wait beside the host
and, round by round, runs what is due and moves the clock one step, which wakes the poller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from acta import (
    Acta,
    Cancel,
    Fail,
    JobContext,
    JobFailedError,
    JobNotFoundError,
    JobRef,
    JobStatus,
    ValidationError,
    WaitTimeoutError,
)
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

T = TypeVar("T")
ROUNDS = 500


@dataclass(frozen=True)
class Invoice:
    number: str
    total_cents: int
    issued: datetime


async def driven(host: AsyncHost, waiting: Awaitable[T], step: str = "1s") -> T:
    """Await ``waiting`` while the host works: each round runs at most one due job, then moves
    the clock by ``step`` (heartbeating the workers), so the wait's next poll comes round."""
    task = asyncio.ensure_future(waiting)
    for _ in range(ROUNDS):
        if task.done():
            break
        await host.tick()
        await host.advance(step)
    if not task.done():
        task.cancel()
        raise AssertionError(f"the wait did not end within {ROUNDS} rounds of {step}")
    return await task


def declare_invoice(app: Acta) -> Any:
    @app.job("issue-invoice", max_attempts=1)
    def issue(order: str, ctx: JobContext) -> Invoice:
        if order == "unpaid":
            raise ValueError("card declined for order unpaid")
        return Invoice(f"INV-{order}", 4200, ctx.created_at)

    return issue


def test_a_return_value_is_kept_with_its_job_and_read_back_typed(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    issue = declare_invoice(acta_app)

    @acta_app.job("tally")
    def tally(words: list[str]) -> Any:  # no declared shape: plain data comes back
        return {w: len(w) for w in words}

    @acta_app.job("touch")
    def touch(n: int) -> None:
        pass

    invoice = issue.enqueue("o-17")
    counts = tally.enqueue(["ab", "abc"])
    nothing = touch.enqueue(1)
    assert acta_app.result(invoice) is None  # not run yet
    acta_host.run_until_idle()
    got = acta_app.result(invoice)
    assert isinstance(got, Invoice)
    assert got == Invoice("INV-o-17", 4200, acta_host.job(invoice).created_at)
    assert acta_app.result(str(invoice)) == got  # a ref given as text reads the same
    assert acta_app.result(counts) == {"ab": 2, "abc": 3}
    assert acta_app.result(nothing) is None
    assert ledger.count("results") == 2  # a None result stores no row
    with pytest.raises(JobNotFoundError):
        acta_app.result(JobRef.parse("job_00000000000000000000000000"))


async def test_run_and_wait_async_answers_the_typed_result(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    issue = declare_invoice(acta_app)
    got = await driven(acta_async_host, acta_app.run_and_wait_async(issue, "o-9"))
    assert isinstance(got, Invoice) and got.number == "INV-o-9"
    [job] = await acta_async_host.jobs(name="issue-invoice")
    assert job.status is JobStatus.SUCCEEDED
    # Once the job has ended, a wait answers at once, with no one moving the clock.
    assert await acta_app.wait_async(job.job_ref) == got


async def test_wait_async_follows_a_delayed_job_to_its_result(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    issue = declare_invoice(acta_app)
    start = acta_async_host.clock.now()
    ref = await issue.enqueue_async("o-3", delay="2m")
    got = await driven(acta_async_host, acta_app.wait_async(ref, timeout="1h"), step="10s")
    assert got.number == "INV-o-3"
    assert acta_async_host.clock.now() >= start + timedelta(minutes=2)


@pytest.mark.parametrize("how", ["raised", "fail-directive", "cancel-directive", "operator"])
async def test_a_job_that_did_not_succeed_raises_job_failed_error(
    acta_app: Acta, acta_async_host: AsyncHost, how: str
) -> None:
    @acta_app.job("charge", max_attempts=1)
    def charge(order: str) -> Any:
        if how == "raised":
            raise ValueError(f"card declined for {order}")
        if how == "fail-directive":
            return Fail(f"fraud check refused {order}")
        return Cancel(f"customer withdrew {order}")

    ref = await charge.enqueue_async("o-5", delay="1m" if how == "operator" else None)
    if how == "operator":
        await acta_app.cancel_async(ref, "duplicate order o-5")
    with pytest.raises(JobFailedError) as raised:
        await driven(acta_async_host, acta_app.wait_async(ref))
    failure = raised.value
    assert failure.ref == ref
    expected = {
        "raised": ("failed", "ValueError: card declined for o-5"),
        "fail-directive": ("failed", "fraud check refused o-5"),
        "cancel-directive": ("cancelled", "customer withdrew o-5"),
        "operator": ("cancelled", "duplicate order o-5"),
    }[how]
    assert failure.status == expected[0]
    assert failure.error is not None and expected[1] in failure.error
    assert expected[0] in str(failure)


async def test_a_wait_that_times_out_raises_and_the_job_goes_on(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("await-approval")
    async def await_approval(order: str, ctx: JobContext) -> str:
        who = await ctx.wait_signal("approved")
        return f"{order} approved by {who}"

    start = acta_async_host.clock.now()
    with pytest.raises(WaitTimeoutError) as raised:
        await driven(
            acta_async_host, acta_app.run_and_wait_async(await_approval, "o-2", timeout=30)
        )
    assert "still suspended" in str(raised.value)
    assert acta_async_host.clock.now() >= start + timedelta(seconds=30)
    [job] = await acta_async_host.jobs(name="await-approval")
    assert job.status is JobStatus.SUSPENDED  # the wait gave up; the job did not
    assert await acta_app.signal_async(job.job_ref, "approved", "ops") == "released"
    got = await driven(acta_async_host, acta_app.wait_async(job.job_ref, timeout="1m"))
    assert got == "o-2 approved by ops"


async def test_waiting_on_an_unknown_job_or_with_a_bad_timeout_is_refused(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    issue = declare_invoice(acta_app)
    with pytest.raises(JobNotFoundError):
        await acta_app.wait_async("job_00000000000000000000000000")
    with pytest.raises(ValidationError):
        await acta_app.wait_async("not-a-ref")
    ref = await issue.enqueue_async("o-4")
    for bad in ("-5s", "soon", -1, timedelta(days=-1)):
        with pytest.raises(ValidationError):
            await acta_app.wait_async(ref, timeout=bad)


async def test_run_and_wait_with_a_bad_timeout_enqueues_nothing(
    acta_app: Acta, acta_async_host: AsyncHost, ledger: Ledger
) -> None:
    issue = declare_invoice(acta_app)
    with pytest.raises(ValidationError):
        await acta_app.run_and_wait_async(issue, "o-1", timeout="-1s")
    assert ledger.user_jobs() == 0


def test_sync_run_and_wait_from_a_thread_answers_while_the_host_runs(
    acta_app: Acta, acta_host: Host, ledger: Ledger, request: pytest.FixtureRequest
) -> None:
    issue = declare_invoice(acta_app)
    answers: list[Any] = []
    with ThreadPoolExecutor(1) as pool:
        for order in ("o-1", "unpaid"):
            waiting = pool.submit(acta_app.run_and_wait, issue, order, timeout="1h")
            for _ in range(ROUNDS):
                if waiting.done():
                    break
                acta_host.tick()
                acta_host.advance("1s")
            assert waiting.done()
            answers.append(waiting.exception() or waiting.result())
    got, failure = answers
    assert isinstance(got, Invoice) and got.number == "INV-o-1"
    assert isinstance(failure, JobFailedError) and failure.status == "failed"
    assert "card declined for order unpaid" in (failure.error or "")
