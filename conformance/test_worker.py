"""The production worker loop (serve), driven on the manual clock: no real waiting."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from acta import Acta, EventCode, JobContext, JobStatus, Outcome, Reason, WorkerStatus
from acta.clock import ManualClock
from acta.provider.protocol import Provider
from conformance.serving_support import turn, until


@pytest.fixture
def app(acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock) -> Iterator[Acta]:
    with acta_app.bound(acta_provider, acta_clock):
        yield acta_app


def _shutting_down(worker: Any) -> Callable[[], Awaitable[bool]]:
    """True once the worker entered shutdown (it stops claiming and fixes its grace deadline
    in the same step)."""

    async def entered() -> bool:
        return not worker.claiming

    return entered


async def test_serve_drains_with_bounded_concurrency(app: Acta, acta_clock: ManualClock) -> None:
    running = 0
    peak = 0
    release = asyncio.Event()

    @app.job("resize-image")
    async def resize(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return n * 2

    refs = await app.enqueue_batch_async([resize.request(i) for i in range(20)])
    worker = app.worker(executors=4, clock=acta_clock)
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))

    async def four_running() -> bool:
        return running == 4

    await until(four_running)
    for _ in range(100):  # give the worker every chance to overshoot its executors
        await turn()
    assert running == 4
    release.set()

    async def all_done() -> bool:
        jobs = await app.jobs_async(limit=100)
        return sum(j.status is JobStatus.SUCCEEDED for j in jobs) == 20

    await until(all_done)
    stopping.set()
    await serving
    assert peak == 4
    assert [await app.result_async(r) for r in refs] == [i * 2 for i in range(20)]
    [info] = await app.workers_async()
    assert info.status is WorkerStatus.STOPPED and info.executors == 4
    assert [w.incarnation for w in app.workers()] == [info.incarnation]


async def test_sync_handlers_run_in_threads(app: Acta, acta_clock: ManualClock) -> None:
    threads: set[str] = set()
    gate = threading.Barrier(3, timeout=10)

    @app.job("crunch")
    def crunch(n: int) -> None:
        threads.add(threading.current_thread().name)
        gate.wait()  # three runs at once prove they are on three threads

    await app.enqueue_batch_async([crunch.request(i) for i in range(3)])
    worker = app.worker(executors=3, clock=acta_clock)
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))

    async def done() -> bool:
        jobs = await app.jobs_async()
        return all(j.status is JobStatus.SUCCEEDED for j in jobs)

    await until(done)
    stopping.set()
    await serving
    assert len(threads) == 3 and all(t.startswith("acta-handler") for t in threads)


async def test_shutdown_hands_back_unfinished_runs(app: Acta, acta_clock: ManualClock) -> None:
    started = asyncio.Event()

    @app.job("long-import")
    async def long_import(ctx: JobContext) -> None:
        started.set()
        await ctx.cancellation.wait_async()

    ref = await long_import.enqueue_async()
    worker = app.worker(executors=1, clock=acta_clock, shutdown_grace="30s")
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))
    await started.wait()
    stopping.set()
    await until(_shutting_down(worker))  # its grace deadline is set now
    for _ in range(50):
        await turn()
    assert not serving.done()  # still inside the grace period
    acta_clock.advance(31)
    await serving

    job = await app.get_async(ref)
    assert job.status is JobStatus.READY and job.attempts == 0  # no attempt spent
    events = await app.events_async(ref)
    finished = [e for e in events if e.code is EventCode.EXECUTION_FINISHED]
    assert finished[-1].outcome is Outcome.INTERRUPTED and finished[-1].reason is Reason.SHUTDOWN
    assert events[-1].code is EventCode.HANDED_BACK


async def test_worker_without_the_handler_hands_back_and_skips(
    acta_provider: Provider, acta_clock: ManualClock
) -> None:
    old_build, new_build = Acta(), Acta()

    @old_build.job("legacy-report")
    def legacy() -> str:
        return "old build ran it"

    @new_build.job("fresh-report")
    def fresh() -> str:
        return "new build ran it"

    with old_build.bound(acta_provider, acta_clock):
        ref = await legacy.enqueue_async()
    with new_build.bound(acta_provider, acta_clock):
        worker = new_build.worker(clock=acta_clock)
        outcome, name = await worker.run_one()
        assert (outcome, name) == ("rearmed", "legacy-report")
        assert (await worker.run_one())[0] is None  # it no longer claims it
        job = await new_build.get_async(ref)
        assert job.status is JobStatus.READY and job.attempts == 0 and job.executions == 0
        events = await new_build.events_async(ref)
        assert events[-1].code is EventCode.HANDED_BACK and events[-1].reason is Reason.NO_HANDLER
    with old_build.bound(acta_provider, acta_clock):
        outcome, _ = await old_build.worker(clock=acta_clock).run_one()
        assert outcome == "completed"
        assert await old_build.result_async(ref) == "old build ran it"


async def test_enqueue_in_process_wakes_an_idle_worker(app: Acta, acta_clock: ManualClock) -> None:
    @app.job("ping")
    async def ping() -> str:
        return "pong"

    worker = app.worker(clock=acta_clock, poll="10m")
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))

    async def idle() -> bool:  # registered, found nothing, next poll ten minutes away
        return worker.registered and worker.next_claim > acta_clock.now()

    await until(idle)
    ref = await ping.enqueue_async()

    async def done() -> bool:
        return (await app.get_async(ref)).status is JobStatus.SUCCEEDED

    await until(done)  # the clock never moved: the bell, not the poll, woke it
    stopping.set()
    await serving


async def test_buffered_workers_claim_one_batch_ahead(app: Acta, acta_clock: ManualClock) -> None:
    running = 0
    release = asyncio.Event()

    @app.job("transcode")
    async def transcode(n: int) -> None:
        nonlocal running
        running += 1
        await release.wait()
        running -= 1

    await app.enqueue_batch_async([transcode.request(i) for i in range(6)])
    worker = app.worker(executors=2, clock=acta_clock)
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))

    async def buffered() -> bool:
        jobs = await app.jobs_async()
        statuses = sorted(j.status.label for j in jobs)
        return running == 2 and statuses.count("dispatched") == 2

    await until(buffered)
    for _ in range(100):  # it must not take more than one batch ahead, nor run more than 2
        await turn()
    jobs = await app.jobs_async()
    assert running == 2
    assert sorted(j.status.label for j in jobs) == [
        "dispatched",
        "dispatched",
        "executing",
        "executing",
        "ready",
        "ready",
    ]
    release.set()

    async def drained() -> bool:
        return all(j.status is JobStatus.SUCCEEDED for j in await app.jobs_async())

    await until(drained)
    stopping.set()
    await serving


async def test_shutdown_hands_back_buffered_runs_too(app: Acta, acta_clock: ManualClock) -> None:
    started = asyncio.Event()

    @app.job("long-export")
    async def long_export(ctx: JobContext) -> None:
        started.set()
        await ctx.cancellation.wait_async()

    refs = await app.enqueue_batch_async([long_export.request() for _ in range(3)])
    worker = app.worker(executors=1, clock=acta_clock, shutdown_grace="5s")
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))
    await started.wait()

    async def one_buffered() -> bool:
        labels = [j.status.label for j in await app.jobs_async()]
        return labels.count("dispatched") == 1 and labels.count("executing") == 1

    await until(one_buffered)
    stopping.set()
    await until(_shutting_down(worker))  # its grace deadline is set now
    acta_clock.advance(6)
    await serving

    jobs = [await app.get_async(r) for r in refs]
    assert all(j.status is JobStatus.READY and j.attempts == 0 for j in jobs)
    assert sorted(j.executions for j in jobs) == [0, 0, 1]  # only one handler ever started
    handed = [(await app.events_async(r))[-1].code for r in refs]
    assert handed.count(EventCode.HANDED_BACK) == 2  # the running one and the buffered one


async def test_a_run_that_finishes_within_the_grace_period_settles_normally(
    app: Acta, acta_clock: ManualClock
) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    @app.job("close-books")
    async def close_books(ctx: JobContext) -> str:
        started.set()
        await release.wait()
        return f"closed (cancelled: {ctx.cancelled})"

    ref = await app.enqueue_async("close-books")
    worker = app.worker(clock=acta_clock, shutdown_grace="30s")
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))
    await started.wait()
    stopping.set()
    await until(_shutting_down(worker))
    acta_clock.advance("10s")  # well inside the grace period
    release.set()
    await serving

    job = await app.get_async(ref)
    assert job.status is JobStatus.SUCCEEDED and job.attempts == 0
    assert await app.result_async(ref) == "closed (cancelled: False)"  # never asked to stop
    codes = [e.code for e in await app.events_async(ref)]
    assert EventCode.HANDED_BACK not in codes and codes[-1] is EventCode.SUCCEEDED
    [info] = await app.workers_async()
    assert info.status is WorkerStatus.STOPPED
