"""Durable steps: a completed step's body never runs again when its handler is re-entered
(after a retry, a durable sleep, or a worker's death), the gap between a body and its record
is at-least-once, names identify steps, step retries stay inside one execution, and the stored
result decodes to the same value the first execution got. Sync handlers behave alike.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

from acta import Acta, EventCode, JobContext, JobStatus, StepConflictError, SyncJobContext
from acta_testing import AsyncHost, Host
from conformance.conftest import Ledger
from conformance.durable_support import Calls, last_error, steps_of, tick_through_backoffs


@dataclass(frozen=True)
class Receipt:
    order: str
    cents: int


def issue_receipt() -> Receipt:
    return Receipt("A-17", 1250)


def test_retry_returns_the_stored_result(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    charge = Calls()
    seen: list[object] = []

    @acta_app.job("charge-then-flake", max_attempts=2, backoff="5s")
    async def flaky(ctx: JobContext) -> str:
        seen.append(await ctx.step("charge", charge.body({"id": "ch_1", "cents": 900})))
        if ctx.execution == 1:
            raise RuntimeError("the mail server hung up")  # after the step: the charge stands
        return "mailed"

    ref = flaky.enqueue()
    assert acta_host.tick() == "rearmed"
    acta_host.advance("5s")
    assert acta_host.tick() == "completed"
    assert charge.count == 1
    assert seen == [{"id": "ch_1", "cents": 900}] * 2
    assert steps_of(ledger, ref) == [("charge", "completed", False, 1)]
    completed = [e for e in acta_host.events(ref) if e.code is EventCode.STEP_COMPLETED]
    assert [(e.message, e.execution) for e in completed] == [("charge", 1)]
    row = ledger.rows(
        "SELECT started_at, completed_at FROM {schema}.steps_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    assert row[0][0] is not None and row[0][1] is not None


def test_sleep_reentry_skips_the_completed_step(acta_app: Acta, acta_host: Host) -> None:
    fetch = Calls()

    @acta_app.job("fetch-then-nap")
    async def napper(ctx: JobContext) -> int:
        rows = await ctx.step("fetch", fetch.body(42))
        await ctx.sleep(timedelta(minutes=10))
        return int(rows) + ctx.execution

    ref = napper.enqueue()
    assert acta_host.tick() == "suspended"
    assert fetch.count == 1
    acta_host.advance("10m")
    assert acta_host.tick() == "completed"
    assert fetch.count == 1
    assert acta_app.result(ref) == 42 + 2  # the stored 42, read by execution 2


def test_crash_after_the_step_keeps_its_result(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    upload = Calls()

    @acta_app.job("upload-then-die")
    async def uploader(ctx: JobContext) -> str:
        url = await ctx.step("upload", upload.body("s3://bucket/report.pdf"))
        if ctx.execution == 1:
            acta_host.kill(first)  # the process dies once the step is recorded
        return str(url)

    ref = uploader.enqueue()
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"
    assert upload.count == 1
    assert acta_app.result(ref) == "s3://bucket/report.pdf"
    assert acta_host.job(ref).executions == 2


def test_death_between_body_and_record_runs_the_body_again(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    effects: list[int] = []

    async def send_email() -> str:
        effects.append(len(effects) + 1)  # the effect happens...
        if len(effects) == 1:
            acta_host.kill(first)  # ...and the process dies before the result is recorded
            await asyncio.Event().wait()
        return "sent"

    @acta_app.job("mailer")
    async def mailer(ctx: JobContext) -> str:
        return str(await ctx.step("email", send_email))

    ref = mailer.enqueue()
    assert acta_host.tick(first) == "killed"
    assert steps_of(ledger, ref) == []
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"
    # Documented at-least-once: a plain step's effect may happen twice across a crash.
    assert effects == [1, 2]
    assert steps_of(ledger, ref) == [("email", "completed", False, 2)]


def test_concurrent_steps_are_told_apart_by_name(acta_app: Acta, acta_host: Host) -> None:
    left, right = Calls(), Calls()
    got: list[list[object]] = []

    @acta_app.job("fan-out")
    async def fan(ctx: JobContext) -> None:
        pair = await asyncio.gather(
            ctx.step("left", left.body("L")), ctx.step("right", right.body("R"))
        )
        got.append(list(pair))
        await ctx.sleep("1m")

    ref = fan.enqueue()
    assert acta_host.tick() == "suspended"
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    assert (left.count, right.count) == (1, 1)
    assert got == [["L", "R"], ["L", "R"]]
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED


def test_one_name_with_two_bodies_is_a_conflict(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    ran: list[str] = []

    def resize() -> str:
        ran.append("resize")
        return "small.png"

    def watermark() -> str:
        ran.append("watermark")
        return "marked.png"

    @acta_app.job("confused", max_attempts=1)
    async def confused(ctx: JobContext) -> None:
        await ctx.step("image", resize)
        await ctx.step("image", resize)  # the same body again: its stored result, no re-run
        await ctx.step("image", watermark)  # another body under a used name

    ref = confused.enqueue()
    assert acta_host.tick() == "failed"
    error, reason = last_error(ledger, ref)
    assert error is not None and "StepConflictError: step 'image'" in error
    assert reason == "attempts-exhausted"  # an ordinary handler failure, retried if allowed
    assert ran == ["resize"]
    assert issubclass(StepConflictError, ValueError)


async def test_step_retries_back_off_inside_one_execution(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    clock = acta_async_host.clock
    calls: list[datetime] = []
    failed = asyncio.Event()

    def call_partner() -> str:
        calls.append(clock.now())
        if len(calls) < 3:
            failed.set()
            raise ConnectionError(f"partner down (call {len(calls)})")
        return "accepted"

    @acta_app.job("partner-call", max_attempts=1)
    async def partner(ctx: JobContext) -> str:
        return str(await ctx.step("call", call_partner, attempts=3, backoff="10s"))

    ref = await partner.enqueue_async()
    assert await tick_through_backoffs(acta_async_host, failed, timedelta(seconds=10), 2) == (
        "completed"
    )
    assert await acta_app.result_async(ref) == "accepted"
    start = calls[0]
    assert calls == [start, start + timedelta(seconds=10), start + timedelta(seconds=20)]
    job = await acta_async_host.job(ref)
    assert (job.executions, job.attempts) == (1, 0)  # the job itself spent nothing
    assert "retry-scheduled" not in await acta_async_host.event_names(ref)


async def test_exhausted_step_attempts_raise_the_body_error(
    acta_app: Acta, acta_async_host: AsyncHost, ledger: Ledger
) -> None:
    failed = asyncio.Event()
    calls: list[int] = []

    def always_down() -> str:
        calls.append(1)
        failed.set()
        raise TimeoutError(f"no answer (call {len(calls)})")

    @acta_app.job("give-up")
    async def give_up(ctx: JobContext) -> str:
        try:
            await ctx.step("call", always_down, attempts=2, backoff="3s")
        except TimeoutError as exc:
            return f"handler saw: {exc}"
        return "unreachable"

    ref = await give_up.enqueue_async()
    assert await tick_through_backoffs(acta_async_host, failed, timedelta(seconds=3), 1) == (
        "completed"
    )
    assert await acta_app.result_async(ref) == "handler saw: no answer (call 2)"
    assert steps_of(ledger, ref) == []  # a failed plain step leaves no row: it may run again


def test_typed_result_is_the_same_on_first_run_and_reentry(acta_app: Acta, acta_host: Host) -> None:
    seen: list[object] = []

    @acta_app.job("receipts", max_attempts=2, backoff="1s")
    async def receipts(ctx: JobContext) -> None:
        seen.append(await ctx.step("typed", lambda: Receipt("B-2", 75), returns=Receipt))
        seen.append(await ctx.step("pair", lambda: (1, "two")))  # untyped: JSON round trip
        if ctx.execution == 1:
            raise RuntimeError("retry, please")

    receipts.enqueue()
    assert acta_host.tick() == "rearmed"
    acta_host.advance("1s")
    assert acta_host.tick() == "completed"
    assert seen == [Receipt("B-2", 75), [1, "two"]] * 2
    assert isinstance(seen[0], Receipt) and isinstance(seen[2], Receipt)


def test_return_annotation_types_the_stored_result(acta_app: Acta, acta_host: Host) -> None:
    seen: list[object] = []

    @acta_app.job("annotated", max_attempts=2, backoff="1s")
    async def annotated(ctx: JobContext) -> None:
        seen.append(await ctx.step("receipt", issue_receipt))
        if ctx.execution == 1:
            raise RuntimeError("retry, please")

    annotated.enqueue()
    assert acta_host.tick() == "rearmed"
    assert seen == [Receipt("A-17", 1250)]
    acta_host.advance("1s")
    assert acta_host.tick() == "completed"
    assert seen == [Receipt("A-17", 1250)] * 2


def test_sync_handler_steps_survive_retry_and_crash(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    reserve, ship = Calls(), Calls()

    @acta_app.job("sync-order", max_attempts=3, backoff="2s")
    def order(ctx: SyncJobContext) -> str:
        stock = ctx.step("reserve", reserve.body("bin-4"))
        if ctx.execution == 1:
            raise RuntimeError("courier API flaked")
        label = ctx.step("ship", ship.body("label-9"))
        if ctx.execution == 2:
            acta_host.kill(first)  # both steps are recorded; the process dies now
        return f"{stock}/{label}"

    ref = order.enqueue()
    assert acta_host.tick(first) == "rearmed"
    acta_host.advance("2s")
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"
    assert acta_app.result(ref) == "bin-4/label-9"
    assert (reserve.count, ship.count) == (1, 1)
    assert acta_host.job(ref).executions == 3


def test_sync_death_between_body_and_record_runs_the_body_again(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    effects: list[int] = []

    def book_room() -> str:
        effects.append(len(effects) + 1)
        if len(effects) == 1:
            acta_host.kill(first)  # dies after the effect, before the record
        return "room 12"

    @acta_app.job("sync-booker")
    def booker(ctx: SyncJobContext) -> str:
        return str(ctx.step("book", book_room))

    ref = booker.enqueue()
    assert acta_host.tick(first) == "killed"
    first.threads.shutdown(wait=True)  # whatever the "dead" thread still does, let it finish
    assert steps_of(ledger, ref) == []  # a dead process records nothing
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "completed"
    assert effects == [1, 2]
