"""Deadlines: ``enqueue(deadline=..., deadline_policy=...)``, an instant or a duration counted
from the enqueue. Strict (the default) fails the job with reason deadline: at a claim after the
deadline without running its handler, at the deadline while its handler runs, and when a job
suspended past it comes back. Advisory only informs the handler (``ctx.is_overdue``).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobContext, JobStatus, Reason, SyncJobContext, ValidationError
from acta.clock import ManualClock
from acta.provider.protocol import Provider
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def instant(value: Any) -> datetime | None:
    """A timestamp column as an aware datetime (SQLite keeps UTC text, PostgreSQL timestamptz)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def deadline_of(ledger: Ledger, ref: object) -> tuple[datetime | None, str | None]:
    [(at, policy)] = ledger.rows(
        "SELECT deadline_at, deadline_policy FROM {schema}.jobs_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    return instant(at), policy


def failed_by_deadline(host: Host, ref: object) -> bool:
    """The job ended failed, and its failed event gives the deadline as the reason."""
    failed = [e for e in host.events(ref) if e.code is EventCode.FAILED]
    return (
        host.job(ref).status is JobStatus.FAILED
        and len(failed) == 1
        and failed[0].reason is Reason.DEADLINE
    )


def runs_recorded(host: Host, ref: object) -> tuple[int, int, int, int]:
    """(execution-started events, execution-finished events, executions, attempts): a run
    failed by its deadline before its handler ran adds to none of them."""
    codes = [e.code for e in host.events(ref)]
    job = host.job(ref)
    return (
        codes.count(EventCode.EXECUTION_STARTED),
        codes.count(EventCode.EXECUTION_FINISHED),
        job.executions,
        job.attempts,
    )


def test_the_deadline_and_its_policy_are_in_jobs_view(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("report")
    def report(n: int) -> None:
        pass

    start = acta_host.clock.now()
    fixed = datetime(2026, 1, 2, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    by_duration = report.enqueue(1, deadline=timedelta(hours=1))
    by_text = report.enqueue(2, deadline="90m", deadline_policy="advisory", delay="1h")
    by_instant = report.enqueue(3, deadline=fixed, deadline_policy="strict")
    without = report.enqueue(4)
    assert deadline_of(ledger, by_duration) == (start + timedelta(hours=1), "strict")
    # A duration counts from the enqueue, not from when the job becomes due.
    assert deadline_of(ledger, by_text) == (start + timedelta(minutes=90), "advisory")
    assert deadline_of(ledger, by_instant) == (fixed, "strict")
    assert deadline_of(ledger, without) == (None, None)


@pytest.mark.parametrize("max_attempts", [1, 3])
def test_a_strict_job_claimed_after_its_deadline_fails_without_running(
    acta_app: Acta, acta_host: Host, ledger: Ledger, max_attempts: int
) -> None:
    ran: list[int] = []

    @acta_app.job("send-offer", max_attempts=max_attempts)
    def send_offer(n: int) -> None:
        ran.append(n)

    ref = send_offer.enqueue(1, delay="2h", deadline="1h")
    acta_host.advance("2h")
    assert acta_host.tick() == "failed"
    assert ran == []
    assert failed_by_deadline(acta_host, ref)
    assert acta_host.run_until_idle() == 0  # no retry, whatever attempts are left
    # The handler never ran: no execution is recorded and no attempt is spent.
    assert runs_recorded(acta_host, ref) == (0, 0, 0, 0)
    [(reason,)] = ledger.rows(
        "SELECT last_error_reason FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
    )
    assert reason == "deadline"


@pytest.mark.parametrize("profile", ["direct", "bulk"])
@pytest.mark.parametrize("gated", [False, True], ids=["plain", "gated"])
def test_a_job_claimed_too_late_records_no_run_on_any_profile_or_gate(
    acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock, profile: str, gated: bool
) -> None:
    ran: list[int] = []
    gate: dict[str, Any] = {"concurrency_limit": 1} if gated else {}

    @acta_app.job("late-offer", **gate)
    def late_offer(n: int) -> None:
        ran.append(n)

    host = Host(acta_app, acta_provider, acta_clock, profile=profile)
    try:
        key = {"concurrency_key": "eu"} if gated else {}
        ref = late_offer.enqueue(1, delay="2h", deadline="1h", **key)
        host.advance("2h")
        assert host.tick() == "failed"
        assert ran == []
        assert failed_by_deadline(host, ref)
        assert runs_recorded(host, ref) == (0, 0, 0, 0)
        assert EventCode.ADMITTED not in [e.code for e in host.events(ref)]  # no gate slot used
    finally:
        host.close()


def test_a_strict_job_whose_retry_comes_after_the_deadline_fails_at_that_claim(
    acta_app: Acta, acta_host: Host
) -> None:
    ran: list[int] = []

    @acta_app.job("flaky-export", max_attempts=5, backoff="10m")
    def export(n: int, ctx: SyncJobContext) -> None:
        ran.append(ctx.attempt)
        raise ConnectionError("warehouse unreachable")

    ref = export.enqueue(1, deadline="5m")
    assert acta_host.tick() == "rearmed"
    acta_host.run_until_idle()
    assert ran == [1]  # the retry was due after the deadline: its handler never ran
    assert failed_by_deadline(acta_host, ref)
    assert runs_recorded(acta_host, ref) == (1, 1, 1, 1)  # only the first run counts


def test_a_sync_handler_still_running_at_the_deadline_is_failed_not_retried(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("slow-render", max_attempts=3)
    def render(n: int) -> str:
        acta_host.advance("61s")  # the work takes past the deadline
        return "too late"

    ref = render.enqueue(1, deadline="1m")
    assert acta_host.tick() == "failed"
    assert failed_by_deadline(acta_host, ref)
    assert acta_app.result(ref) is None
    assert acta_host.run_until_idle() == 0


async def test_an_async_handler_is_interrupted_at_its_deadline(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    started = asyncio.Event()
    woke: list[str | None] = []

    @acta_app.job("await-forever", max_attempts=3)
    async def await_forever(n: int, ctx: JobContext) -> None:
        started.set()
        try:
            await ctx.cancellation.wait_async()
        finally:
            woke.append(ctx.cancellation.reason)

    ref = await await_forever.enqueue_async(1, deadline="30s")
    tick = asyncio.create_task(acta_async_host.tick())
    waiter = asyncio.ensure_future(started.wait())
    await asyncio.wait({tick, waiter}, return_when=asyncio.FIRST_COMPLETED)
    assert started.is_set(), f"the tick ended before the handler started: {tick.result()}"
    await acta_async_host.advance(timedelta(seconds=30) - timedelta(milliseconds=1))
    assert not tick.done()  # a millisecond short of the deadline, it keeps running
    await acta_async_host.advance("1ms")
    assert await tick == "failed"
    assert len(woke) == 1
    job = await acta_app.get_async(ref)
    assert job.status is JobStatus.FAILED and job.executions == 1
    events = await acta_app.events_async(ref)
    [failed] = [e for e in events if e.code is EventCode.FAILED]
    assert failed.reason is Reason.DEADLINE


def test_a_strict_job_asleep_past_its_deadline_fails_when_it_comes_back(
    acta_app: Acta, acta_host: Host
) -> None:
    after_sleep: list[int] = []

    @acta_app.job("remind-later", max_attempts=3)
    def remind(n: int, ctx: SyncJobContext) -> None:
        ctx.sleep("2h")
        after_sleep.append(ctx.execution)

    ref = remind.enqueue(1, deadline="1h")
    assert acta_host.tick() == "suspended"
    acta_host.advance("2h")
    assert acta_host.tick() == "failed"
    assert after_sleep == []
    assert failed_by_deadline(acta_host, ref)
    assert runs_recorded(acta_host, ref) == (1, 1, 1, 0)  # the run that slept, nothing after


def test_a_strict_job_that_finishes_in_time_is_untouched(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("quick-sum")
    def quick_sum(numbers: list[int], ctx: SyncJobContext) -> int:
        acta_host.advance("59s")
        return sum(numbers)

    ref = quick_sum.enqueue([1, 2, 3], deadline="1m")
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == 6


def test_an_advisory_deadline_lets_the_handler_run_and_tells_it_when_it_is_overdue(
    acta_app: Acta, acta_host: Host
) -> None:
    seen: list[tuple[Any, ...]] = []

    @acta_app.job("nightly-digest", max_attempts=1)
    def digest(n: int, ctx: SyncJobContext) -> str:
        before = ctx.is_overdue
        acta_host.advance("2m")  # the handler runs on past the deadline
        seen.append((before, ctx.is_overdue, ctx.deadline, ctx.deadline_policy))
        return "sent anyway"

    start = acta_host.clock.now()
    ref = digest.enqueue(1, deadline="1m", deadline_policy="advisory")
    late = digest.enqueue(2, deadline="1m", deadline_policy="advisory", delay="5m")
    assert acta_host.tick() == "completed"
    acta_host.run_until_idle()
    due = start + timedelta(minutes=1)
    assert seen == [(False, True, due, "advisory"), (True, True, due, "advisory")]
    assert acta_app.result(ref) == acta_app.result(late) == "sent anyway"


def test_a_job_without_a_deadline_is_never_overdue(acta_app: Acta, acta_host: Host) -> None:
    seen: list[tuple[Any, ...]] = []

    @acta_app.job("plain")
    async def plain(n: int, ctx: JobContext) -> None:
        seen.append((ctx.is_overdue, ctx.deadline, ctx.deadline_policy))

    plain.enqueue(1)
    acta_host.run_until_idle()
    assert seen == [(False, None, None)]


def test_a_child_spawned_with_a_deadline_keeps_its_own(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("leaf")
    def leaf(n: int) -> int:
        return n

    @acta_app.job("fan-out")
    def fan_out(n: int, ctx: SyncJobContext) -> list[str]:
        ctx.spawn(leaf, n, name="in-time", deadline="1h")
        ctx.spawn(leaf, n, name="too-late", deadline="1m", delay="5m")
        return [o.status for o in ctx.wait_children()]

    start = acta_host.clock.now()
    ref = fan_out.enqueue(1)
    acta_host.run_until_idle()
    assert acta_app.result(ref) == ["succeeded", "failed"]
    rows = ledger.rows(
        "SELECT child_name, deadline_at, deadline_policy FROM {schema}.jobs_view "
        "WHERE parent_ref = :ref ORDER BY child_name",
        {"ref": str(ref)},
    )
    assert [(r[0], instant(r[1]), r[2]) for r in rows] == [
        ("in-time", start + timedelta(hours=1), "strict"),
        ("too-late", start + timedelta(minutes=1), "strict"),
    ]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"deadline": "1h", "deadline_policy": "x"}, "deadline_policy"),
        ({"deadline": "1h", "deadline_policy": "STRICT"}, "deadline_policy"),
        ({"deadline": timedelta(seconds=-1)}, "deadline"),
        ({"deadline": "-5m"}, "deadline"),
        ({"deadline": -30}, "deadline"),
        ({"deadline": "tomorrow"}, "deadline"),
        ({"deadline": datetime(2026, 1, 1, 12, 0)}, "deadline"),  # noqa: DTZ001 - naive on purpose
    ],
)
def test_a_bad_deadline_is_refused_and_nothing_is_written(
    acta_app: Acta, acta_host: Host, ledger: Ledger, options: dict[str, Any], field: str
) -> None:
    @acta_app.job("report")
    def report(n: int) -> None:
        pass

    before = ledger.snapshot()
    with pytest.raises(ValidationError) as raised:
        report.enqueue(1, **options)
    assert raised.value.field == field
    with pytest.raises(ValidationError):
        acta_app.request(report, 1, **options)
    assert ledger.snapshot() == before
