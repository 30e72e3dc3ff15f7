"""A sync handler's thread cannot be stopped. While one still runs a job, that job must not be
run again by anyone, unless a lease loss is recorded first: a retry waits for the thread, and
a shutdown leaves the job leased for recovery instead of handing it back."""

from __future__ import annotations

import asyncio
import threading

from acta import Acta, EventCode, JobStatus, Outcome, WorkerStatus
from acta.clock import ManualClock
from acta_testing import AsyncHost
from conformance.serving_support import until


async def _yield(times: int = 50) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


async def test_a_timed_out_thread_delays_the_retry_until_it_returns(
    acta_app: Acta, acta_async_host: AsyncHost, acta_clock: ManualClock
) -> None:
    entered, release = threading.Event(), threading.Event()
    runs: list[int] = []

    @acta_app.job("wedged-import", timeout="10s", max_attempts=3, backoff="1s")
    def wedged_import() -> str:
        runs.append(1)
        if len(runs) == 1:
            acta_clock.advance("11s")  # the timeout passes while this thread is busy
            entered.set()
            release.wait(30)  # bounded: the test releases it below
            return "too late"
        return "imported"

    ref = await wedged_import.enqueue_async()
    worker = await acta_async_host.add_worker(executors=2)
    tick = asyncio.create_task(acta_async_host.tick(worker))
    assert await asyncio.to_thread(entered.wait, 30)
    await _yield()
    assert not tick.done()  # the run is not settled while its thread runs
    job = await acta_app.get_async(ref)
    assert job.status is JobStatus.EXECUTING and job.attempts == 0  # so nobody can retry it

    # The waiting run and its thread hold one executor between them, not two: the worker's
    # other executor still takes work.
    @acta_app.job("meanwhile")
    def meanwhile() -> str:
        return "ran"

    other = await meanwhile.enqueue_async()
    assert await acta_async_host.tick(worker) == "completed"
    assert await acta_app.result_async(other) == "ran"

    release.set()
    assert await tick == "rearmed"
    job = await acta_app.get_async(ref)
    assert job.status is JobStatus.READY and job.attempts == 1
    finished = [
        e for e in await acta_app.events_async(ref) if e.code is EventCode.EXECUTION_FINISHED
    ]
    assert [e.outcome for e in finished] == [Outcome.TIMED_OUT]
    assert await acta_app.result_async(ref) is None  # the late value is dropped

    await acta_async_host.advance("1s")
    assert await acta_async_host.tick(worker) == "completed"
    assert runs == [1, 1] and await acta_app.result_async(ref) == "imported"


async def test_shutdown_leaves_a_job_leased_while_its_thread_runs(
    acta_app: Acta, acta_async_host: AsyncHost, acta_clock: ManualClock
) -> None:
    entered, release = threading.Event(), threading.Event()

    @acta_app.job("stubborn-sync")
    def stubborn_sync() -> None:
        entered.set()
        release.wait(30)  # ignores its cancellation

    ref = await stubborn_sync.enqueue_async()
    leaving = acta_app.worker(clock=acta_clock, shutdown_grace="5s")
    stopping = asyncio.Event()
    serving = asyncio.create_task(leaving.serve(stopping))
    assert await asyncio.to_thread(entered.wait, 30)
    stopping.set()

    async def shut() -> bool:  # shutdown has fixed its grace deadline
        return not leaving.claiming

    await until(shut, "the worker entered shutdown")
    # Past the shutdown grace: the worker stops the run, whose handler race gives the
    # thread its cancel grace (on the test clock); then past that grace too.
    acta_clock.advance("6s")

    async def graced() -> bool:
        return all(run.grace_from is not None for run in leaving.runs.values())

    await until(graced, "every run's thread got its cancel grace")
    acta_clock.advance("1s")

    async def gone() -> bool:
        return not leaving.tasks

    await until(gone, "every run task ended")
    await serving

    job = await acta_app.get_async(ref)
    assert job.status is JobStatus.EXECUTING  # not handed back: a peer must not run it now
    codes = [e.code for e in await acta_app.events_async(ref)]
    assert EventCode.HANDED_BACK not in codes
    [info] = [w for w in await acta_app.workers_async() if w.incarnation == leaving.incarnation]
    assert info.status is WorkerStatus.STOPPED
    release.set()

    # Once the lease lapses, recovery takes the job back and records the loss.
    peer = await acta_async_host.add_worker()
    await acta_async_host.advance(leaving.lease + peer.heartbeat)
    await acta_async_host.tick(peer)
    codes = [e.code for e in await acta_app.events_async(ref)]
    assert EventCode.LEASE_LOST in codes
    assert (await acta_app.get_async(ref)).status is JobStatus.SUCCEEDED
