"""Admission of a batch: the jobs one claim leased, admitted together in one transaction.

A worker with free executors claims several gated jobs at once; their admissions are
group-committed (one lock and one commit per gate and meter for the whole batch). The gates
must count within the batch exactly as across batches: a limit of N admits N of them, a meter
gives each of the others its own turn, and jobs of other keys are not held back.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from acta import Acta, EventCode, JobStatus
from acta_testing import AsyncHost


async def test_a_batch_of_one_key_admits_as_many_as_the_limit(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    release, running = asyncio.Event(), asyncio.Event()
    started: list[int] = []

    @acta_app.job("rebuild", concurrency_limit=2)
    async def rebuild(n: int) -> None:
        started.append(n)
        if len(started) == 3:
            running.set()
        await release.wait()  # keep the admitted ones running while the batch is admitted

    refs = [await rebuild.enqueue_async(n, concurrency_key="acme") for n in range(5)]
    other = await rebuild.enqueue_async(9, concurrency_key="globex")
    wide = await acta_async_host.add_worker(executors=6)
    runs = await wide.claim(6)
    assert len(runs) == 6
    tasks = [asyncio.ensure_future(wide.execute(run)) for run in runs]
    await running.wait()  # three handlers run: two of key 'acme' (its limit), one of 'globex'
    executing = await acta_async_host.jobs(status="executing")
    assert sorted(j.concurrency_key or "" for j in executing) == ["acme", "acme", "globex"]
    release.set()
    ends = sorted(str(end) for end in await asyncio.gather(*tasks))
    assert ends == ["bounced"] * 3 + ["completed"] * 3
    for ref in [*refs, other]:
        job = await acta_async_host.job(ref)
        assert job.attempts == 0
        assert job.status in (JobStatus.SUCCEEDED, JobStatus.READY)
    assert (await acta_async_host.job(other)).status is JobStatus.SUCCEEDED


async def test_a_batch_behind_a_meter_gets_one_turn_each(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("send-sms", rate_limit="10/s")
    async def send(n: int) -> None:
        pass

    refs = [await send.enqueue_async(n) for n in range(14)]
    begin = acta_async_host.clock.now()
    wide = await acta_async_host.add_worker(executors=14)
    runs = await wide.claim(14)
    ends = [str(end) for end in await asyncio.gather(*(wide.execute(r) for r in runs))]
    assert sorted(ends) == ["bounced"] * 4 + ["completed"] * 10
    waiting = [await acta_async_host.job(r) for r in refs]
    turns = sorted(j.next_run_at for j in waiting if j.status is JobStatus.READY)
    step = timedelta(milliseconds=100)
    assert turns == [begin + n * step for n in range(1, 5)]  # one turn each, in line
    for ref in refs:
        bounced = [e for e in await acta_async_host.events(ref) if e.code is EventCode.BOUNCED]
        assert len(bounced) <= 1
    await acta_async_host.run_until_idle(wide)
    done = [(await acta_async_host.job(r)).status for r in refs]
    assert done == [JobStatus.SUCCEEDED] * len(refs)
