"""Handler directives: a handler ends its run on purpose by returning ``Reschedule``, ``Fail``,
``Cancel`` or ``Pause``. Each is one transition with events that carry reason handler-decided
and the handler's words; none is a failure of the run: a reschedule spends no attempt and keeps
the job's steps, a pause holds the job until an operator resumes it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from acta import (
    Acta,
    Cancel,
    ConflictError,
    Directive,
    EventCode,
    Fail,
    JobContext,
    JobNotFoundError,
    JobStatus,
    Outcome,
    Pause,
    Reason,
    Reschedule,
    SyncJobContext,
    ValidationError,
)
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def last_error(ledger: Ledger, ref: object) -> tuple[Any, ...]:
    [row] = ledger.rows(
        "SELECT last_error, last_error_reason FROM {schema}.jobs_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    return tuple(row)


def test_reschedule_after_a_delay_spends_no_attempt_and_keeps_the_steps(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    fetched: list[str] = []
    attempts: list[int] = []

    @acta_app.job("poll-supplier", max_attempts=2)
    def poll(order: str, ctx: SyncJobContext) -> Any:
        stock = ctx.step("fetch-stock", lambda: fetched.append(order) or 12)
        attempts.append(ctx.attempt)
        if ctx.execution == 1:
            return Reschedule(delay=timedelta(minutes=5), reason="supplier closed for the night")
        return f"{order}: {stock} in stock"

    start = acta_host.clock.now()
    ref = poll.enqueue("o-8")
    assert acta_host.tick() == "rescheduled"
    job = acta_host.job(ref)
    assert job.status is JobStatus.READY
    assert (job.attempts, job.executions) == (0, 1)
    assert job.next_run_at == start + timedelta(minutes=5)
    finished, rescheduled = acta_host.events(ref)[-2:]
    assert finished.code is EventCode.EXECUTION_FINISHED
    assert (finished.outcome, finished.reason) == (Outcome.RESCHEDULED, Reason.HANDLER_DECIDED)
    assert rescheduled.code is EventCode.RESCHEDULED
    assert rescheduled.reason is Reason.HANDLER_DECIDED
    assert rescheduled.message == "supplier closed for the night"
    assert last_error(ledger, ref) == (None, None)  # a decision, not an error

    acta_host.advance(timedelta(minutes=5) - timedelta(milliseconds=1))
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("1ms")
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == "o-8: 12 in stock"
    assert fetched == ["o-8"]  # the step's body ran once over both executions
    assert attempts == [1, 1]
    assert acta_host.job(ref).attempts == 0


@pytest.mark.parametrize("delay", ["10m", 600, timedelta(minutes=10)])
def test_reschedule_takes_a_delay_in_any_duration_form(
    acta_app: Acta, acta_host: Host, delay: Any
) -> None:
    @acta_app.job("retry-later")
    def later(n: int, ctx: SyncJobContext) -> Any:
        return Reschedule(delay=delay) if ctx.execution == 1 else "done"

    start = acta_host.clock.now()
    ref = later.enqueue(1)
    assert acta_host.tick() == "rescheduled"
    assert acta_host.job(ref).next_run_at == start + timedelta(minutes=10)


@pytest.mark.parametrize("offset", [timedelta(hours=1), timedelta(hours=-1)])
def test_reschedule_at_an_instant_in_any_zone(
    acta_app: Acta, acta_host: Host, offset: timedelta
) -> None:
    start = acta_host.clock.now()
    # The same instant written in another zone: the ledger must compare it as an instant.
    when = (start + offset).astimezone(timezone(timedelta(hours=5)))
    runs: list[int] = []

    @acta_app.job("send-digest")
    async def digest(user: str, ctx: JobContext) -> Any:
        runs.append(ctx.execution)
        return Reschedule(at=when) if ctx.execution == 1 else "sent"

    ref = digest.enqueue("u-1")
    assert acta_host.tick() == "rescheduled"
    job = acta_host.job(ref)
    assert job.next_run_at == when
    assert acta_host.events(ref)[-1].message == "rescheduled by its handler"
    if offset > timedelta(0):
        acta_host.advance(offset - timedelta(seconds=1))
        assert acta_host.tick() == "nothing-claimed"
        acta_host.advance("1s")
    assert acta_host.tick() == "completed"  # an instant already past is due at once
    assert runs == [1, 2]


def test_fail_fails_for_good_whatever_attempts_are_left(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    runs: list[int] = []

    @acta_app.job("renew-subscription", max_attempts=5, backoff="1s")
    def renew(account: str) -> Any:
        runs.append(1)
        return Fail(f"account {account} was closed by its owner")

    ref = renew.enqueue("a-3")
    assert acta_host.tick() == "failed"
    assert acta_host.run_until_idle() == 0  # no retry comes
    assert runs == [1]
    assert acta_host.job(ref).status is JobStatus.FAILED
    failed = acta_host.events(ref)[-1]
    assert failed.code is EventCode.FAILED and failed.reason is Reason.HANDLER_DECIDED
    assert failed.message == "account a-3 was closed by its owner"
    assert "retry-scheduled" not in acta_host.event_names(ref)
    assert last_error(ledger, ref) == ("account a-3 was closed by its owner", "handler-decided")


def test_cancel_cancels_the_job_with_the_handlers_reason(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("ship-order", max_attempts=3)
    async def ship(order: str) -> Any:
        return Cancel(f"order {order} was withdrawn")

    ref = ship.enqueue("o-4")
    assert acta_host.tick() == "cancelled"
    assert acta_host.job(ref).status is JobStatus.CANCELLED
    cancelled = acta_host.events(ref)[-1]
    assert cancelled.code is EventCode.CANCELLED and cancelled.reason is Reason.HANDLER_DECIDED
    assert cancelled.message == "order o-4 was withdrawn"
    assert (
        ledger.value(
            "SELECT status FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
        )
        == "cancelled"
    )
    assert acta_host.run_until_idle() == 0


def test_pause_holds_the_job_until_an_operator_resumes_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    runs: list[int] = []

    @acta_app.job("verify-address")
    def verify(order: str, ctx: SyncJobContext) -> Any:
        runs.append(ctx.execution)
        if ctx.execution == 1:
            return Pause("the address needs a human to check it")
        return "verified"

    ref = verify.enqueue("o-6")
    assert acta_host.tick() == "paused"
    assert acta_host.job(ref).status is JobStatus.PAUSED
    paused = acta_host.events(ref)[-1]
    assert paused.code is EventCode.PAUSED and paused.reason is Reason.HANDLER_DECIDED
    assert paused.message == "the address needs a human to check it"
    assert (
        ledger.value(
            "SELECT status FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
        )
        == "paused"
    )
    acta_host.advance("10m")
    assert acta_host.tick() == "nothing-claimed"
    assert acta_host.run_until_idle() == 0  # parked: time alone never moves it

    assert acta_app.resume(ref, "address confirmed by phone") is JobStatus.READY
    resumed = acta_host.events(ref)[-1]
    assert resumed.code is EventCode.RESUMED and resumed.message == "address confirmed by phone"
    assert acta_host.tick() == "completed"
    assert runs == [1, 2]
    assert acta_app.result(ref) == "verified"
    assert acta_host.job(ref).attempts == 0


def test_resuming_a_job_that_is_not_paused_is_a_conflict(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("noop")
    def noop(n: int) -> None:
        pass

    waiting, done = noop.enqueue(1, delay="1h"), noop.enqueue(2)
    assert acta_host.tick() == "completed"
    before = [acta_host.events(ref) for ref in (waiting, done)]
    for ref in (waiting, done):
        with pytest.raises(ConflictError):
            acta_app.resume(ref)
    assert [acta_host.events(ref) for ref in (waiting, done)] == before  # nothing written
    with pytest.raises(JobNotFoundError):
        acta_app.resume("job_00000000000000000000000000")
    with pytest.raises(ValidationError):
        acta_app.resume(waiting, "")
    assert acta_host.job(waiting).status is JobStatus.READY


async def test_resume_async_takes_a_paused_job_back_to_ready(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("hold-once")
    async def hold_once(n: int, ctx: JobContext) -> Any:
        return Pause("hold for review") if ctx.execution == 1 else n

    ref = await hold_once.enqueue_async(7)
    assert await acta_async_host.tick() == "paused"
    assert await acta_app.resume_async(ref) is JobStatus.READY
    with pytest.raises(ConflictError):
        await acta_app.resume_async(ref)  # ready now, no longer paused
    assert await acta_async_host.tick() == "completed"
    assert await acta_app.result_async(ref) == 7


@pytest.mark.parametrize("directive", ["reschedule", "pause"])
def test_a_cancel_asked_during_the_run_wins_over_a_directive(
    acta_app: Acta, acta_host: Host, directive: str
) -> None:
    @acta_app.job("sync-catalog")
    def sync_catalog(shop: str, ctx: SyncJobContext) -> Any:
        assert acta_app.cancel(ctx.job, "shop closed") is JobStatus.EXECUTING
        if directive == "pause":
            return Pause("waiting for the catalog owner")
        return Reschedule(delay=timedelta(hours=1))

    ref = sync_catalog.enqueue("s-1")
    assert acta_host.tick() == "cancelled"
    assert acta_host.job(ref).status is JobStatus.CANCELLED
    assert acta_host.run_until_idle() == 0


NAIVE = datetime(2026, 1, 1, 12, 0)  # noqa: DTZ001 - the mistake under test
AWARE = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
BAD: dict[str, Callable[[], Directive]] = {
    "reschedule-neither": lambda: Reschedule(),
    "reschedule-both": lambda: Reschedule(at=AWARE, delay=timedelta(minutes=1)),
    "reschedule-naive-at": lambda: Reschedule(at=NAIVE),
    "reschedule-negative-delay": lambda: Reschedule(delay=timedelta(seconds=-1)),
    "reschedule-delay-not-a-duration": lambda: Reschedule(delay="soon"),
    "reschedule-delay-negative-seconds": lambda: Reschedule(delay=-30),
    "reschedule-empty-reason": lambda: Reschedule(delay=timedelta(1), reason=""),
    "fail-empty": lambda: Fail(""),
    "cancel-blank": lambda: Cancel("   "),
    "pause-too-long": lambda: Pause("x" * 1001),
    "fail-not-text": lambda: Fail(42),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_badly_built_directive_is_refused_where_it_is_built(case: str) -> None:
    with pytest.raises(ValidationError):
        BAD[case]()


def test_a_directive_built_badly_in_a_handler_fails_the_run_like_any_error(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("bad-directive", max_attempts=1)
    def bad(n: int) -> Any:
        return Reschedule(at=NAIVE)

    ref = bad.enqueue(1)
    assert acta_host.tick() == "failed"
    error, reason = last_error(ledger, ref)
    assert reason == "attempts-exhausted" and "ValidationError: at" in error


def test_a_handler_may_say_it_returns_a_result_or_a_directive(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("count-later")
    def count_later(n: int, ctx: SyncJobContext) -> int | Reschedule:
        return Reschedule(delay=timedelta(seconds=1)) if ctx.execution == 1 else n * 2

    ref = count_later.enqueue(21)
    acta_host.run_until_idle()
    assert acta_app.result(ref) == 42
