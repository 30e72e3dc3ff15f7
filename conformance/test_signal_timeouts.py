"""Signal waits with a timeout (issue 10): the timeout is an absolute instant armed the first
time the wait is reached and never moved by re-entry (a crash, a retry, a later sleep). When it
passes, the plain wait cancels the job (reason wait-timed-out) and the try form answers
``SignalResult(received=False)``; a signal that comes after the instant never revives the wait.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from acta import Acta, JobContext, JobStatus, Reason, SignalOutcome, SignalResult, SyncJobContext
from acta_testing import Host
from conformance.wait_support import place, the_wait, waits

if TYPE_CHECKING:
    from conformance.conftest import Ledger

MS = timedelta(milliseconds=1)


def test_the_plain_wait_cancels_the_job_when_its_timeout_passes(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    after: list[Any] = []

    @acta_app.job("approve")
    async def approve(x: int, ctx: JobContext) -> None:
        after.append(await ctx.wait_signal("go", timeout=timedelta(minutes=30)))

    armed = acta_host.clock.now()
    ref = approve.enqueue(1)
    assert acta_host.tick() == "suspended"
    wait = the_wait(ledger, ref)
    assert (wait.kind, wait.name, wait.armed_at) == ("signal", "go", armed)
    assert wait.due_at == armed + timedelta(minutes=30)
    now = place(ledger, ref)
    assert (now.status, now.lease_worker, now.waiting_for) == ("suspended", None, "signal:go")
    assert now.next_run_at == wait.due_at  # the timeout is the job's timer
    acta_host.advance(timedelta(minutes=30) - MS)
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance(MS)
    assert acta_host.tick() == "cancelled"
    assert acta_host.job(ref).status is JobStatus.CANCELLED
    assert after == []  # the code after the wait never ran
    cancelled = [e for e in acta_host.events(ref) if e.code.label == "cancelled"]
    assert [e.reason for e in cancelled] == [Reason.WAIT_TIMED_OUT]
    assert acta_app.signal(ref, "go", 1) is SignalOutcome.JOB_FINISHED


def test_the_try_form_reports_the_timeout_and_the_handler_goes_on(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("maybe")
    async def maybe(x: int, ctx: JobContext) -> list[Any]:
        answer = await ctx.try_wait_signal("go", timeout="10m")
        assert isinstance(answer, SignalResult)
        return [answer.received, answer.timed_out, answer.value]

    late, prompt = maybe.enqueue(1), maybe.enqueue(2)
    assert acta_host.tick() == "suspended"
    assert acta_host.tick() == "suspended"
    assert acta_app.signal(prompt, "go", {"ok": True}) is SignalOutcome.RELEASED
    assert acta_host.tick() == "completed"
    acta_host.advance(timedelta(minutes=10))
    assert acta_host.tick() == "completed"
    assert acta_app.result(prompt) == [True, False, {"ok": True}]
    assert acta_app.result(late) == [False, True, None]


def test_a_zero_timeout_polls_without_suspending(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("poll")
    async def poll(x: int, ctx: JobContext) -> list[Any]:
        got = await ctx.try_wait_signal("go", timeout=0)
        return [got.received, got.value]

    sent, silent = poll.enqueue(1), poll.enqueue(2)
    assert acta_app.signal(sent, "go", "here") is SignalOutcome.STORED
    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "completed"
    assert acta_app.result(sent) == [True, "here"]
    assert acta_app.result(silent) == [False, None]
    assert all("suspended" not in acta_host.event_names(r) for r in (sent, silent))


def test_a_signal_after_the_timeout_does_not_revive_the_wait(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("try-late")
    async def try_late(x: int, ctx: JobContext) -> bool:
        return (await ctx.try_wait_signal("go", timeout="10m")).received

    @acta_app.job("plain-late")
    async def plain_late(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go", timeout="10m")

    tried, plain = try_late.enqueue(1), plain_late.enqueue(2)
    assert acta_host.tick() == "suspended"
    assert acta_host.tick() == "suspended"
    acta_host.advance(timedelta(minutes=10, seconds=1))
    # Past the instant and not yet re-claimed: the signal is kept, the wait is not released.
    for ref in (tried, plain):
        assert acta_app.signal(ref, "go", "too late") is SignalOutcome.STORED
        assert acta_host.job(ref).status is JobStatus.SUSPENDED
        wait = the_wait(ledger, ref)
        assert wait.signalled and wait.released_at is None
    acta_host.run_until_idle()
    assert acta_app.result(tried) is False
    assert acta_host.job(plain).status is JobStatus.CANCELLED


def test_a_signal_at_the_very_instant_of_the_timeout_is_too_late(
    acta_app: Acta, acta_host: Host
) -> None:
    # One boundary for sender and waiter: a wait is expired from due_at on, so a signal sent
    # at due_at releases nothing (STORED) and the wait, re-entered on its timer, times out.
    @acta_app.job("edge")
    async def edge(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go", timeout="10m")

    ref = edge.enqueue(1)
    assert acta_host.tick() == "suspended"
    acta_host.advance(timedelta(minutes=10))
    assert acta_app.signal(ref, "go", "too late") is SignalOutcome.STORED
    assert acta_host.tick() == "cancelled"
    assert acta_host.job(ref).status is JobStatus.CANCELLED


def test_a_crash_before_the_timeout_does_not_extend_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    host = acta_host

    @acta_app.job("fragile", max_attempts=3, backoff="1s")
    def fragile(x: int, ctx: SyncJobContext) -> Any:
        try:
            return ctx.wait_signal("go", timeout=timedelta(hours=1))
        finally:
            if ctx.execution == 1:
                host.kill()  # dies after arming the timeout, before the run settles

    start = host.clock.now()
    ref = fragile.enqueue(1)
    assert host.tick() == "killed"
    armed = the_wait(ledger, ref)
    assert armed.due_at == start + timedelta(hours=1)
    peer = host.add_worker()
    # Recovery re-runs the handler well before the hour is up; it suspends on the same wait.
    while host.job(ref).executions < 2 or host.job(ref).status is not JobStatus.SUSPENDED:
        assert host.clock.now() < start + timedelta(minutes=30), host.event_names(ref)
        if host.tick(peer) == "nothing-claimed":
            host.advance(timedelta(seconds=15))
    again = the_wait(ledger, ref)
    assert (again.due_at, again.armed_at, again.execution) == (armed.due_at, armed.armed_at, 1)
    assert place(ledger, ref).next_run_at == armed.due_at
    assert armed.due_at is not None
    host.advance(armed.due_at - host.clock.now() - MS)
    assert host.tick(peer) == "nothing-claimed"
    host.advance(MS)
    assert host.tick(peer) == "cancelled"
    assert host.job(ref).status is JobStatus.CANCELLED


def test_re_entry_after_a_later_sleep_keeps_the_answer_and_the_instant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("answered")
    async def answered(x: int, ctx: JobContext) -> list[Any]:
        got = await ctx.try_wait_signal("go", timeout=timedelta(hours=1))
        await ctx.sleep(timedelta(hours=2))  # the re-entry after it passes the timeout instant
        return [got.received, got.value, ctx.execution]

    @acta_app.job("unanswered")
    async def unanswered(x: int, ctx: JobContext) -> list[Any]:
        got = await ctx.try_wait_signal("go", timeout=timedelta(minutes=10))
        await ctx.sleep(timedelta(hours=1))
        return [got.received, got.value, ctx.execution]

    start = acta_host.clock.now()
    yes, no = answered.enqueue(1), unanswered.enqueue(2)
    assert acta_host.tick() == "suspended"
    assert acta_host.tick() == "suspended"
    acta_host.advance(timedelta(minutes=5))
    assert acta_app.signal(yes, "go", "in time") is SignalOutcome.RELEASED
    assert acta_host.tick() == "suspended"  # now on its sleep
    acta_host.advance(timedelta(minutes=25))
    assert acta_host.tick() == "suspended"  # "no" timed out and sleeps
    # A signal while "no" sleeps, after its wait expired: kept, no release, no revival.
    assert acta_app.signal(no, "go", "too late") is SignalOutcome.STORED
    assert place(ledger, no).waiting_for == "sleep:sleep-1"
    acta_host.run_until_idle()
    assert acta_app.result(yes) == [True, "in time", 3]
    assert acta_app.result(no) == [False, None, 3]
    kept = the_wait(ledger, yes, "signal")
    assert (kept.due_at, kept.execution) == (start + timedelta(hours=1), 1)
    assert the_wait(ledger, no, "signal").due_at == start + timedelta(minutes=10)
    assert [w.kind for w in waits(ledger, no)] == ["signal", "sleep"]


def test_a_retry_re_enters_the_wait_without_moving_its_instant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("retried", max_attempts=3, backoff="1m")
    async def retried(x: int, ctx: JobContext) -> Any:
        got = await ctx.wait_signal("go", timeout=timedelta(hours=1))
        if ctx.execution == 2:
            raise RuntimeError("failed after the signal came")
        return [got, ctx.execution]

    start = acta_host.clock.now()
    ref = retried.enqueue(1)
    assert acta_host.tick() == "suspended"
    acta_host.advance(timedelta(minutes=59))
    assert acta_app.signal(ref, "go", "ok") is SignalOutcome.RELEASED
    assert acta_host.tick() == "rearmed"
    acta_host.advance(timedelta(minutes=1, seconds=30))  # the retry runs after the hour
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == ["ok", 3]
    wait = the_wait(ledger, ref)
    assert (wait.due_at, wait.execution) == (start + timedelta(hours=1), 1)


def test_run_until_idle_jumps_to_a_timeout(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("forgotten")
    async def forgotten(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go", timeout=timedelta(hours=4))

    @acta_app.job("forever")
    async def forever(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go")

    start = acta_host.clock.now()
    timed, untimed = forgotten.enqueue(1), forever.enqueue(2)
    acta_host.run_until_idle()
    assert acta_host.job(timed).status is JobStatus.CANCELLED
    assert acta_host.clock.now() == start + timedelta(hours=4)
    # A wait with no timeout is parked work: time alone never moves it.
    assert acta_host.job(untimed).status is JobStatus.SUSPENDED
