"""Durable sleep (issue 10): a sleeping job leaves its worker and becomes a timer row; it is
claimed again, by any worker, once the timer is due, and re-entry never restarts the timer.
Time only moves when the spec moves the host's clock.
"""

from __future__ import annotations

from datetime import timedelta, timezone
from typing import TYPE_CHECKING

from acta import Acta, JobContext, JobStatus, SyncJobContext
from acta_testing import Host
from conformance.wait_support import place, the_wait, waits

if TYPE_CHECKING:
    from conformance.conftest import Ledger

MS = timedelta(milliseconds=1)


def test_a_sleeping_job_leaves_the_worker_and_frees_its_executor(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    ran: list[str] = []

    @acta_app.job("nap")
    async def nap(x: int, ctx: JobContext) -> str:
        await ctx.sleep(timedelta(minutes=5))
        return "rested"

    @acta_app.job("quick")
    async def quick(x: int) -> None:
        ran.append("quick")

    solo = acta_host.add_worker(executors=1)
    armed = acta_host.clock.now()
    ref = nap.enqueue(1)
    assert acta_host.tick(solo) == "suspended"
    assert acta_host.job(ref).status is JobStatus.SUSPENDED
    now = place(ledger, ref)
    assert (now.status, now.lease_worker, now.waiting_for) == ("suspended", None, "sleep:sleep-1")
    assert now.next_run_at == armed + timedelta(minutes=5)
    wait = the_wait(ledger, ref)
    assert (wait.kind, wait.name, wait.execution) == ("sleep", "sleep-1", 1)
    assert wait.armed_at == armed
    assert wait.due_at == armed + timedelta(minutes=5)
    assert wait.released_at is None

    # The one executor is free: another job runs while the first one sleeps.
    assert solo.free_executors() == 1
    quick.enqueue(2)
    assert acta_host.tick(solo) == "completed"
    assert ran == ["quick"]
    assert acta_host.job(ref).status is JobStatus.SUSPENDED


def test_nothing_is_claimed_before_the_timer_is_due(acta_app: Acta, acta_host: Host) -> None:
    runs: list[int] = []

    @acta_app.job("nap")
    async def nap(x: int, ctx: JobContext) -> int:
        runs.append(ctx.execution)
        await ctx.sleep("90s")
        return ctx.execution

    ref = nap.enqueue(1)
    assert acta_host.tick() == "suspended"
    acta_host.advance(timedelta(seconds=90) - MS)
    assert acta_host.tick() == "nothing-claimed"
    assert acta_host.job(ref).status is JobStatus.SUSPENDED
    acta_host.advance(MS)
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == 2
    assert runs == [1, 2]
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED


def test_a_due_sleeper_is_picked_up_by_any_worker(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("nap")
    async def nap(x: int, ctx: JobContext) -> str:
        await ctx.sleep(timedelta(minutes=10))
        return "awake"

    peer = acta_host.add_worker()
    ref = nap.enqueue(1)
    assert acta_host.tick() == "suspended"
    acta_host.advance(timedelta(minutes=10))
    assert acta_host.tick(peer) == "completed"
    assert acta_app.result(ref) == "awake"
    workers = [e.worker for e in acta_host.events(ref) if e.code.label == "execution-started"]
    assert workers == [acta_host.worker.incarnation, peer.incarnation]
    assert the_wait(ledger, ref).execution == 1


def test_a_sleep_outlives_the_worker_that_started_it(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("nap")
    async def nap(x: int, ctx: JobContext) -> str:
        await ctx.sleep(timedelta(hours=2))
        return f"woke in execution {ctx.execution}"

    ref = nap.enqueue(1)
    assert acta_host.tick() == "suspended"
    acta_host.stop()  # graceful shutdown: nothing of the sleep lives in the first process
    successor = acta_host.add_worker()
    assert acta_host.tick(successor) == "nothing-claimed"
    acta_host.advance(timedelta(hours=2))
    assert acta_host.tick(successor) == "completed"
    assert acta_app.result(ref) == "woke in execution 2"


def test_a_retry_after_the_sleep_does_not_sleep_again(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    runs: list[int] = []

    @acta_app.job("flaky", max_attempts=3, backoff="1m")
    async def flaky(x: int, ctx: JobContext) -> int:
        runs.append(ctx.execution)
        await ctx.sleep(timedelta(minutes=10), name="cool-off")
        if ctx.execution == 2:
            raise RuntimeError("upstream hiccup after the sleep")
        return ctx.execution

    start = acta_host.clock.now()
    ref = flaky.enqueue(1)
    assert acta_host.tick() == "suspended"
    acta_host.advance(timedelta(minutes=10))
    assert acta_host.tick() == "rearmed"  # a retry, due after its backoff
    acta_host.advance(timedelta(minutes=1))
    # The retry passes the sleep: its instant was armed once, in the first execution.
    assert acta_host.tick() == "completed"
    assert runs == [1, 2, 3]
    wait = the_wait(ledger, ref)
    assert (wait.name, wait.execution, wait.due_at) == (
        "cool-off",
        1,
        start + timedelta(minutes=10),
    )


def test_a_crash_before_the_sleep_is_due_keeps_the_armed_instant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    host = acta_host

    @acta_app.job("nap", max_attempts=3, backoff="1s")
    def nap(x: int, ctx: SyncJobContext) -> int:
        try:
            ctx.sleep(timedelta(hours=1))
        finally:
            if ctx.execution == 1:
                host.kill()  # the process dies after arming, before the run settles
        return ctx.execution

    start = host.clock.now()
    ref = nap.enqueue(1)
    assert host.tick() == "killed"
    armed = the_wait(ledger, ref)
    assert armed.due_at == start + timedelta(hours=1)
    peer = host.add_worker()
    ran = host.run_until_idle(peer)  # recovery, the re-entry, and the sleep's own wake-up
    assert ran >= 2
    assert acta_app.result(ref) == 3
    after = the_wait(ledger, ref)
    assert (after.due_at, after.armed_at, after.execution) == (
        armed.due_at,
        armed.armed_at,
        1,
    )
    # The re-entry came before the timer and slept on; only the timer's own instant woke it.
    events = host.events(ref)
    suspended = [e for e in events if e.code.label == "suspended"]
    assert [e.execution for e in suspended] == [2]
    assert armed.due_at is not None and suspended[0].at < armed.due_at
    last_start = [e for e in events if e.code.label == "execution-started"][-1]
    assert last_start.at == armed.due_at


def test_sleep_until_an_instant_in_the_past_returns_at_once(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("late")
    async def late(x: int, ctx: JobContext) -> str:
        await ctx.sleep_until(ctx.created_at - timedelta(hours=1), name="past")
        await ctx.sleep_until(ctx.created_at, name="now")
        await ctx.sleep(0, name="zero")
        return "never suspended"

    ref = late.enqueue(1)
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == "never suspended"
    assert "suspended" not in acta_host.event_names(ref)
    assert [w.name for w in waits(ledger, ref)] == ["now", "past", "zero"]


def test_sleep_until_a_future_instant_is_due_exactly_then(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    wake_at = acta_host.clock.now() + timedelta(hours=3, seconds=7)
    elsewhere = wake_at.astimezone(timezone(timedelta(hours=-5)))  # the same instant

    @acta_app.job("alarm")
    async def alarm(x: int, ctx: JobContext) -> str:
        await ctx.sleep_until(elsewhere, name="morning")
        return "up"

    ref = alarm.enqueue(1)
    assert acta_host.tick() == "suspended"
    assert place(ledger, ref).waiting_for == "sleep:morning"
    assert the_wait(ledger, ref).due_at == wake_at
    acta_host.advance(wake_at - acta_host.clock.now() - MS)
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance(MS)
    assert acta_host.tick() == "completed"


def test_two_sleeps_in_sequence_are_two_timers(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("twice", max_attempts=1)  # a suspension spends no attempt
    async def twice(x: int, ctx: JobContext) -> int:
        await ctx.sleep(timedelta(minutes=1))
        await ctx.sleep(timedelta(minutes=2))
        return ctx.execution

    start = acta_host.clock.now()
    ref = twice.enqueue(1)
    assert acta_host.tick() == "suspended"
    assert place(ledger, ref).waiting_for == "sleep:sleep-1"
    acta_host.advance(timedelta(minutes=1))
    assert acta_host.tick() == "suspended"
    # The second timer counts from the moment the handler reached it, not from the enqueue.
    assert place(ledger, ref).waiting_for == "sleep:sleep-2"
    first, second = waits(ledger, ref)
    assert (first.name, first.due_at, first.execution) == (
        "sleep-1",
        start + timedelta(minutes=1),
        1,
    )
    assert (second.name, second.due_at, second.execution) == (
        "sleep-2",
        start + timedelta(minutes=3),
        2,
    )
    acta_host.advance(timedelta(minutes=2) - MS)
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance(MS)
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == 3
    assert acta_host.job(ref).attempts == 0


def test_a_sync_handler_sleeps_the_same_way(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("sync-nap")
    def sync_nap(x: int, ctx: SyncJobContext) -> int:
        ctx.sleep("15m", name="blocking-nap")
        return x + ctx.execution

    ref = sync_nap.enqueue(40)
    assert acta_host.tick() == "suspended"
    now = place(ledger, ref)
    assert (now.status, now.lease_worker, now.waiting_for) == (
        "suspended",
        None,
        "sleep:blocking-nap",
    )
    acta_host.advance(timedelta(minutes=15))
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == 42


def test_run_until_idle_jumps_over_sleeps(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("long-nap")
    async def long_nap(x: int, ctx: JobContext) -> int:
        await ctx.sleep(timedelta(hours=2))
        await ctx.sleep(timedelta(minutes=45))
        return ctx.execution

    start = acta_host.clock.now()
    ref = long_nap.enqueue(1)
    assert acta_host.run_until_idle() == 3
    assert acta_app.result(ref) == 3
    assert acta_host.clock.now() == start + timedelta(hours=2, minutes=45)


def test_a_bad_sleep_name_fails_the_run_and_arms_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("badly-named", max_attempts=1)
    async def badly_named(x: int, ctx: JobContext) -> None:
        await ctx.sleep("1m", name=" padded ")

    ref = badly_named.enqueue(1)
    assert acta_host.tick() == "failed"
    [finished] = [e for e in acta_host.events(ref) if e.code.label == "execution-finished"]
    assert finished.message is not None and "InvalidNameError" in finished.message
    assert waits(ledger, ref) == []
