"""The bulk profile's own promise: finished runs are committed together on a flush window.

A bulk worker's finished run frees its executor at once and its settle waits, up to the flush
window (or until ``flush_max`` are waiting), to share one fenced transaction with others. The
price is explicit: a crash loses the settles still in the window, and recovery runs those jobs
again (at-least-once). Nothing else is relaxed: the lease of a run whose settle waits is renewed
by heartbeats, a flush that comes after the lease was lost is refused like any late write, a
graceful stop flushes, and a run that used durable state never waits in the window.

The specs drive the worker's claim and runs themselves, so the window is the real one: it ends
only when the test clock passes it, the buffer fills, or the worker flushes.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from acta import Acta, EventCode, JobContext, JobStatus
from acta.clock import ManualClock
from acta.provider.protocol import Provider
from acta.runtime.run import Run, RunEnd
from acta.runtime.worker import Worker
from acta_testing import AsyncHost
from conformance.serving_support import turn, until


async def _run_to_the_window(
    worker: Worker, runs: list[Run], waiting: int
) -> list[asyncio.Future[RunEnd]]:
    """Start every run and return once ``waiting`` settles sit in the flush window."""
    tasks = [asyncio.ensure_future(worker.execute(run)) for run in runs]
    for _ in range(10_000):  # yields only: the handlers are async and write nothing
        if worker.env.committer.unflushed >= waiting:
            return tasks
        await asyncio.sleep(0)
    raise AssertionError(f"only {worker.env.committer.unflushed} settles reached the window")


async def _statuses(host: AsyncHost, refs: list[object]) -> list[JobStatus]:
    return [(await host.job(ref)).status for ref in refs]


async def test_settles_wait_for_the_window_then_commit_together(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("resize")
    async def resize(n: int) -> int:
        return n * 2

    refs = [await resize.enqueue_async(n) for n in range(4)]
    bulk = await acta_async_host.add_worker(profile="bulk", executors=4, flush="2s")
    runs = await bulk.claim(4)
    tasks = await _run_to_the_window(bulk, runs, 4)
    # Finished, not yet committed: every job is still executing, and no executor is held.
    assert await _statuses(acta_async_host, refs) == [JobStatus.EXECUTING] * 4
    assert bulk.free_executors() == 4
    # The heartbeat renews the leases of runs whose settles wait.
    beat = await bulk.beat()
    assert beat is not None and not beat.lost
    acta_async_host.clock.advance("2s")  # the window ends on the worker's clock
    assert [str(end) for end in await asyncio.gather(*tasks)] == ["completed"] * 4
    assert await _statuses(acta_async_host, refs) == [JobStatus.SUCCEEDED] * 4
    assert [await acta_app.result_async(ref) for ref in refs] == [0, 2, 4, 6]


async def test_a_full_buffer_is_flushed_without_waiting(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("ping")
    async def ping(n: int) -> None:
        return None

    refs = [await ping.enqueue_async(n) for n in range(5)]
    bulk = await acta_async_host.add_worker(profile="bulk", executors=5, flush="5s", flush_max=3)
    runs = await bulk.claim(5)
    tasks = [asyncio.ensure_future(bulk.execute(run)) for run in runs]
    # The first three fill the buffer and go at once; two wait for the window.
    pending: set[asyncio.Future[RunEnd]] = set(tasks)
    while len(pending) > 2:
        _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    succeeded = (await _statuses(acta_async_host, refs)).count(JobStatus.SUCCEEDED)
    assert succeeded == 3
    assert bulk.env.committer.unflushed == 2
    bulk.flush()
    assert [str(end) for end in await asyncio.gather(*tasks)] == ["completed"] * 5


async def test_a_crash_before_the_flush_runs_those_jobs_again(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    ran: Counter[int] = Counter()

    @acta_app.job("thumbnail")
    async def thumbnail(n: int) -> int:
        ran[n] += 1
        return n

    refs = [await thumbnail.enqueue_async(n) for n in range(3)]
    bulk = await acta_async_host.add_worker(profile="bulk", executors=3, flush="5s")
    runs = await bulk.claim(3)
    tasks = await _run_to_the_window(bulk, runs, 3)
    acta_async_host.kill(bulk)  # the process dies with three finished runs unflushed
    assert [str(end) for end in await asyncio.gather(*tasks)] == ["killed"] * 3
    assert await _statuses(acta_async_host, refs) == [JobStatus.EXECUTING] * 3
    peer = acta_async_host.worker
    await acta_async_host.advance(bulk.lease + peer.heartbeat)
    assert await acta_async_host.run_until_idle(peer) == 3
    assert ran == Counter({0: 2, 1: 2, 2: 2})  # at-least-once: each ran again
    for n, ref in enumerate(refs):
        job = await acta_async_host.job(ref)
        assert job.status is JobStatus.SUCCEEDED and job.executions == 2
        assert await acta_app.result_async(ref) == n
        codes = [e.code for e in await acta_async_host.events(ref)]
        # The ledger says what happened: the first run's lease lapsed, one success.
        assert codes.count(EventCode.LEASE_LOST) == 1
        assert codes.count(EventCode.SUCCEEDED) == 1


async def test_a_flush_after_the_lease_was_lost_is_refused(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("export")
    async def export(ctx: JobContext) -> int:
        return ctx.execution

    ref = await export.enqueue_async()
    zombie = await acta_async_host.add_worker(
        profile="bulk", executors=1, flush="5s", heartbeat=0.05
    )
    peer = await acta_async_host.add_worker(heartbeat=0.05)
    tasks = await _run_to_the_window(zombie, await zombie.claim(1), 1)
    acta_async_host.pause(zombie)  # its leases lapse while its settle waits
    await acta_async_host.advance(zombie.lease + peer.heartbeat)
    assert str(await acta_async_host.tick(peer)) == "completed"
    acta_async_host.resume(zombie)
    zombie.flush()
    assert [str(end) for end in await asyncio.gather(*tasks)] == ["lease-lost"]
    assert await acta_app.result_async(ref) == 2  # the peer's run stands
    assert (await acta_async_host.event_names(ref)).count("write-fenced") == 1


async def test_a_graceful_stop_flushes_the_window(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("index")
    async def index(n: int) -> None:
        return None

    refs = [await index.enqueue_async(n) for n in range(3)]
    bulk = await acta_async_host.add_worker(profile="bulk", executors=3, flush="5s")
    for run in await bulk.claim(3):
        bulk._spawn(run)  # as the claim loop does: the worker owns these tasks
    for _ in range(10_000):
        if bulk.env.committer.unflushed == 3:
            break
        await asyncio.sleep(0)
    assert bulk.env.committer.unflushed == 3
    await acta_async_host.stop(bulk)
    assert await _statuses(acta_async_host, refs) == [JobStatus.SUCCEEDED] * 3
    for ref in refs:
        assert (await acta_async_host.job(ref)).executions == 1


async def test_a_run_that_used_durable_state_does_not_wait(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("charge")
    async def charge(ctx: JobContext) -> str:
        return str(await ctx.step("receipt", lambda: "r-1", at_most_once=True))

    @acta_app.job("plain")
    async def plain() -> None:
        return None

    simple = await plain.enqueue_async()
    bulk = await acta_async_host.add_worker(profile="bulk", executors=2, flush="5s")
    waiting = await _run_to_the_window(bulk, await bulk.claim(1), 1)
    assert (await acta_async_host.job(simple)).status is JobStatus.EXECUTING
    durable = await charge.enqueue_async()
    (run,) = await bulk.claim(1)
    # Committed without the clock moving (the bound only keeps a wrong build from hanging).
    assert str(await asyncio.wait_for(bulk.execute(run), 60)) == "completed"
    assert (await acta_async_host.job(durable)).status is JobStatus.SUCCEEDED
    # An urgent settle takes the open window with it: one commit for both.
    assert [str(end) for end in await asyncio.gather(*waiting)] == ["completed"]
    assert (await acta_async_host.job(simple)).status is JobStatus.SUCCEEDED


async def test_a_serving_bulk_worker_starts_three_batches_ahead_and_flushes_on_the_clock(
    acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock
) -> None:
    running, release = 0, asyncio.Event()

    @acta_app.job("transcode")
    async def transcode(n: int) -> None:
        nonlocal running
        running += 1
        await release.wait()
        running -= 1

    with acta_app.bound(acta_provider, acta_clock):
        await acta_app.enqueue_batch_async([transcode.request(i) for i in range(10)])
        worker = acta_app.worker(executors=2, profile="bulk", flush="1s", clock=acta_clock)
        stopping = asyncio.Event()
        serving = asyncio.create_task(worker.serve(stopping))

        async def labels() -> list[str]:
            return sorted(j.status.label for j in await acta_app.jobs_async())

        async def ahead() -> bool:  # two running, three batches of two claimed and waiting
            return running == 2 and (await labels()).count("executing") == 8

        try:
            await until(ahead, "two running and eight executing")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: running={running} labels={await labels()}") from None
        for _ in range(100):  # it must not take more than three batches ahead
            await turn()
        # Bulk starts what it claims in the claim's commit: the eight are all executing (a
        # crash now would charge each an attempt), though only two handlers run.
        assert running == 2
        assert await labels() == ["executing"] * 8 + ["ready"] * 2
        release.set()

        async def all_finished() -> bool:  # every handler returned; settles in the window
            return (
                running == 0
                and worker.env.committer.unflushed + (await labels()).count("succeeded") == 10
            )

        await until(all_finished, "every handler returned")
        assert worker.env.committer.unflushed > 0  # the clock has not moved: they wait
        acta_clock.advance("1s")

        async def drained() -> bool:
            return await labels() == ["succeeded"] * 10

        await until(drained, "all ten succeeded")
        stopping.set()
        await serving


async def test_a_crash_charges_an_attempt_to_jobs_claimed_ahead(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    ran: Counter[int] = Counter()

    @acta_app.job("digest", max_attempts=3)
    async def digest(n: int) -> None:
        ran[n] += 1

    refs = [await digest.enqueue_async(n) for n in range(3)]
    bulk = await acta_async_host.add_worker(profile="bulk", executors=1)
    runs = await bulk.claim(3)
    # All three were started by the claim, though one executor could run only one of them.
    assert await _statuses(acta_async_host, refs) == [JobStatus.EXECUTING] * 3
    assert [r.started is not None for r in runs] == [True] * 3
    acta_async_host.kill(bulk)  # before any handler ran
    peer = acta_async_host.worker
    await acta_async_host.advance(bulk.lease + peer.heartbeat)
    assert await acta_async_host.run_until_idle(peer) == 3
    assert ran == Counter({0: 1, 1: 1, 2: 1})
    for ref in refs:
        job = await acta_async_host.job(ref)
        # The relaxation bulk documents: the lapsed start counts as an attempt.
        assert job.status is JobStatus.SUCCEEDED and (job.attempts, job.executions) == (1, 2)
