"""Signals (issue 10): a job waits, suspended and holding no lease, for a named signal; the
sender learns what its signal did (released, stored, already sent, job finished, no such job).
A signal is kept when it comes early, the first of a name stands, a paused job keeps it without
waking. Timeouts are in test_signal_timeouts.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from acta import (
    Acta,
    ConflictError,
    InvalidNameError,
    JobContext,
    JobRef,
    JobStatus,
    Pause,
    PayloadError,
    SignalOutcome,
    SyncJobContext,
)
from acta_testing import AsyncHost, Host
from conformance.wait_support import place, the_wait, waits

if TYPE_CHECKING:
    from conformance.conftest import Ledger


@dataclass(frozen=True)
class Approval:
    by: str
    amount: int


def signals_kept(ledger: Ledger) -> int:
    return int(ledger.value("SELECT count(*) FROM {schema}.signals"))


@pytest.mark.parametrize(
    "payload",
    [{"approved": True, "by": ["ana", "bo"]}, "yes", 42, None],
    ids=["dict", "str", "int", "none"],
)
def test_a_wait_suspends_until_the_signal_releases_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger, payload: Any
) -> None:
    @acta_app.job("approval")
    async def approval(x: int, ctx: JobContext) -> dict[str, Any]:
        got = await ctx.wait_signal("go")
        return {"got": got, "execution": ctx.execution}

    ref = approval.enqueue(1)
    assert acta_host.tick() == "suspended"
    now = place(ledger, ref)
    assert (now.status, now.lease_worker, now.waiting_for) == ("suspended", None, "signal:go")
    wait = the_wait(ledger, ref)
    assert (wait.kind, wait.name, wait.due_at, wait.signalled) == ("signal", "go", None, False)
    assert acta_host.tick() == "nothing-claimed"

    assert acta_app.signal(ref, "go", payload) is SignalOutcome.RELEASED
    assert acta_host.job(ref).status is JobStatus.READY
    released = the_wait(ledger, ref)
    assert released.signalled and released.released_at == acta_host.clock.now()
    assert place(ledger, ref).waiting_for is None
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == {"got": payload, "execution": 2}
    assert "signalled" in acta_host.event_names(ref)


def test_a_typed_wait_decodes_the_payload_into_its_dataclass(
    acta_app: Acta, acta_host: Host
) -> None:
    seen: list[Approval] = []

    @acta_app.job("typed")
    async def typed(x: int, ctx: JobContext) -> int:
        got = await ctx.wait_signal("approved", type=Approval)
        seen.append(got)
        return int(got.amount)

    ref = typed.enqueue(1)
    assert acta_host.tick() == "suspended"
    # The sender has no type to encode by: it sends the JSON shape, the waiter decodes it.
    with pytest.raises(PayloadError):
        acta_app.signal(ref, "approved", Approval("ana", 7))
    assert acta_app.signal(ref, "approved", {"by": "bo", "amount": 9}) == "released"
    assert acta_host.tick() == "completed"
    assert seen == [Approval("bo", 9)]
    assert acta_app.result(ref) == 9


def test_a_payload_that_does_not_fit_the_wait_type_fails_the_run(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("strict", max_attempts=1)
    async def strict(x: int, ctx: JobContext) -> int:
        got = await ctx.wait_signal("approved", type=Approval)
        return int(got.amount)

    ref = strict.enqueue(1)
    assert acta_host.tick() == "suspended"
    assert acta_app.signal(ref, "approved", {"by": "bo"}) is SignalOutcome.RELEASED
    assert acta_host.tick() == "failed"
    finished = [e for e in acta_host.events(ref) if e.code.label == "execution-finished"][-1]
    assert finished.message is not None and "amount" in finished.message
    assert acta_host.job(ref).status is JobStatus.FAILED


def test_a_signal_that_comes_before_the_wait_is_kept_for_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("early")
    async def early(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go")

    ref = early.enqueue(1)
    assert acta_app.signal(ref, "go", {"n": 1}) is SignalOutcome.STORED
    assert acta_host.job(ref).status is JobStatus.READY
    assert acta_host.tick() == "completed"  # the wait returned at once, without suspending
    assert acta_app.result(ref) == {"n": 1}
    assert "suspended" not in acta_host.event_names(ref)
    assert the_wait(ledger, ref).signalled


def test_a_second_signal_of_a_name_is_dropped_and_the_first_stands(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("once")
    async def once(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go")

    waiting, early = once.enqueue(1), once.enqueue(2)
    assert acta_host.tick() == "suspended"
    assert acta_app.signal(waiting, "go", "first") is SignalOutcome.RELEASED
    assert acta_app.signal(waiting, "go", "second") is SignalOutcome.ALREADY_SENT
    assert acta_app.signal(early, "go", "first") is SignalOutcome.STORED
    assert acta_app.signal(early, "go", "second") is SignalOutcome.ALREADY_SENT
    assert signals_kept(ledger) == 2
    acta_host.run_until_idle()
    assert acta_app.result(waiting) == "first"
    assert acta_app.result(early) == "first"
    assert acta_host.event_names(waiting).count("signalled") == 1


def test_a_signal_of_another_name_is_kept_but_does_not_release(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("two-keys")
    async def two_keys(x: int, ctx: JobContext) -> list[Any]:
        return [await ctx.wait_signal("first"), await ctx.wait_signal("second")]

    ref = two_keys.enqueue(1)
    assert acta_host.tick() == "suspended"
    assert acta_app.signal(ref, "second", 2) is SignalOutcome.STORED
    assert acta_host.job(ref).status is JobStatus.SUSPENDED
    assert place(ledger, ref).waiting_for == "signal:first"
    assert acta_host.tick() == "nothing-claimed"
    assert acta_app.signal(ref, "first", 1) is SignalOutcome.RELEASED
    assert acta_host.tick() == "completed"  # "second" was already there
    assert acta_app.result(ref) == [1, 2]


def test_a_paused_job_keeps_a_signal_without_waking(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("gated")
    async def gated(x: int, ctx: JobContext) -> Any:
        if ctx.execution == 1:
            return Pause("waiting for a person to look")
        return await ctx.wait_signal("go")

    ref = gated.enqueue(1)
    assert acta_host.tick() == "paused"
    assert acta_app.signal(ref, "go", "green") is SignalOutcome.STORED
    assert acta_host.job(ref).status is JobStatus.PAUSED
    assert place(ledger, ref).status == "paused"
    assert acta_host.tick() == "nothing-claimed"
    assert acta_app.resume(ref, reason="looked at it") is JobStatus.READY
    with pytest.raises(ConflictError):
        acta_app.resume(ref)  # only a paused job is resumed
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == "green"
    assert "resumed" in acta_host.event_names(ref)


def test_no_such_job_and_a_finished_job_store_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("quick")
    async def quick(x: int) -> int:
        return x

    ref = quick.enqueue(1)
    acta_host.run_until_idle()
    stranger = JobRef.new(int(acta_host.clock.now().timestamp() * 1000))
    assert acta_app.signal(stranger, "go", 1) is SignalOutcome.NO_SUCH_JOB
    assert acta_app.signal(str(stranger), "go") is SignalOutcome.NO_SUCH_JOB
    assert acta_app.signal(ref, "go", 1) is SignalOutcome.JOB_FINISHED
    assert signals_kept(ledger) == 0
    assert "signalled" not in acta_host.event_names(ref)


def test_bad_names_and_payloads_are_refused_at_the_call(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("waiter")
    async def waiter(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go")

    ref = waiter.enqueue(1)
    assert acta_host.tick() == "suspended"
    for bad in ("", " go", "go\n", "x" * 201):
        with pytest.raises(InvalidNameError):
            acta_app.signal(ref, bad, 1)
    with pytest.raises(PayloadError):
        acta_app.signal(ref, "go", object())
    with pytest.raises(PayloadError):
        acta_app.signal(ref, "go", {"nan": float("nan")})
    with pytest.raises(PayloadError):
        acta_app.signal(ref, "go", "x" * (acta_app.registry.payload_cap + 1))
    assert signals_kept(ledger) == 0
    assert acta_host.job(ref).status is JobStatus.SUSPENDED


def test_a_signal_sent_while_the_handler_runs_is_not_lost(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    host = acta_host
    answers: list[SignalOutcome] = []

    @acta_app.job("self-async")
    async def self_async(x: int, ctx: JobContext) -> Any:
        if ctx.execution == 1:
            answers.append(await acta_app.signal_async(ctx.job, "go", "from-async"))
        return await ctx.wait_signal("go")

    @acta_app.job("self-sync")
    def self_sync(x: int, ctx: SyncJobContext) -> Any:
        if ctx.execution == 1:
            answers.append(acta_app.signal(ctx.job, "go", "from-sync"))
            assert host.job(ctx.job).status is JobStatus.EXECUTING
        return ctx.wait_signal("go")

    a, s = self_async.enqueue(1), self_sync.enqueue(1)
    assert host.tick() == "completed"
    assert host.tick() == "completed"
    assert answers == [SignalOutcome.STORED, SignalOutcome.STORED]
    assert (acta_app.result(a), acta_app.result(s)) == ("from-async", "from-sync")
    assert all("suspended" not in host.event_names(r) for r in (a, s))
    assert [w.signalled for r in (a, s) for w in waits(ledger, r)] == [True, True]


def test_a_signal_sent_as_the_handler_suspends_wakes_it_at_once(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    app = acta_app
    answers: list[SignalOutcome] = []

    @acta_app.job("in-the-gap")
    def in_the_gap(x: int, ctx: SyncJobContext) -> Any:
        try:
            return ctx.wait_signal("go")
        finally:
            # The wait found no signal and is on its way out of the worker: a signal sent now,
            # before the suspension commits, must not be lost.
            if ctx.execution == 1:
                answers.append(app.signal(ctx.job, "go", "in the gap"))

    ref = in_the_gap.enqueue(1)
    assert acta_host.tick() == "suspended"
    assert answers == [SignalOutcome.STORED]  # the job was still executing
    assert acta_host.job(ref).status is JobStatus.READY  # the suspension saw it and let go
    assert place(ledger, ref).waiting_for is None
    assert acta_host.event_names(ref)[-2:] == ["suspended", "released"]
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == "in the gap"


async def test_signal_async_answers_like_signal(acta_app: Acta, acta_async_host: AsyncHost) -> None:
    host = acta_async_host

    @acta_app.job("waiter")
    async def waiter(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go")

    ref = waiter.enqueue(1)
    assert await host.tick() == "suspended"
    assert await acta_app.signal_async(ref, "early", 0) is SignalOutcome.STORED
    assert await acta_app.signal_async(ref, "go", [1, 2]) is SignalOutcome.RELEASED
    assert await acta_app.signal_async(ref, "go", [3]) is SignalOutcome.ALREADY_SENT
    assert await host.tick() == "completed"
    assert await acta_app.signal_async(ref, "go", 1) is SignalOutcome.JOB_FINISHED
    stranger = JobRef.new(int(host.clock.now().timestamp() * 1000))
    assert await acta_app.signal_async(stranger, "go") is SignalOutcome.NO_SUCH_JOB
    assert acta_app.result(ref) == [1, 2]


def test_a_refused_signal_payload_is_named_payload_in_the_error(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("waiter")
    async def waiter(x: int, ctx: JobContext) -> Any:
        return await ctx.wait_signal("go")

    ref = waiter.enqueue(1)
    with pytest.raises(PayloadError) as refused:
        acta_app.signal(ref, "go", {"when": float("inf")})
    assert refused.value.field.startswith("payload"), refused.value


def test_waiting_for_names_the_wait_that_suspended_the_job(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("after-warm-up")
    async def after_warm_up(x: int, ctx: JobContext) -> Any:
        await ctx.sleep_until(ctx.created_at, name="warm-up")  # due already: returns at once
        return await ctx.wait_signal("go")

    ref = after_warm_up.enqueue(1)
    assert acta_host.tick() == "suspended"
    assert place(ledger, ref).waiting_for == "signal:go"
