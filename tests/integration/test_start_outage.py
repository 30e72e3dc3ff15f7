"""A start the database cannot take right now is kept and tried again (issue 8 item 7).

On SQLite a claim only leases the job; starting it is a write of its own. If the database goes
away between the two, the run must not give up and leave the job leased until its lease lapses
(a whole lease window of nothing, then a lease-lost event and recovery): it keeps the start
and tries again with a short backoff, so the job starts and completes as soon as the database
is back, with one execution-started event, no lease lost, and no attempt charged.

A worker with one executor claims two jobs: the claim starts one in its own commit and only
leases the other (dispatched), which is started when the executor frees up. The outage is real:
before that start another connection takes the write lock and holds it past busy_timeout, which
acta reports as DatabaseUnavailableError. Time is the test clock's, so the retry's backoff is
passed by advancing it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

from outage_support import Seen, job_status

from acta import Acta, EventCode, JobStatus
from acta.clock import ManualClock
from acta.provider.sqlite import SqliteProvider
from acta.runtime.run import RunEnd
from acta_testing import AsyncHost


async def test_a_start_waits_out_the_outage_and_the_job_runs_at_once(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    setup = SqliteProvider(ledger)
    setup.migrate()
    setup.close()
    # A short busy_timeout so the outage is reported within a fraction of a second.
    app, provider, clock = Acta(), SqliteProvider(ledger, busy_timeout=0.02), ManualClock()
    blocker = sqlite3.connect(ledger, isolation_level=None, check_same_thread=False)
    runs: list[int] = []

    @app.job("nightly-report", input=int)
    def nightly_report(n: int) -> str:
        runs.append(n)
        return f"{n} pages"

    host = AsyncHost(app, provider, clock, retry_settles=True, executors=1)
    worker = host.worker
    waiting = Seen("could not start job")
    logging.getLogger("acta.worker").addHandler(waiting)
    try:
        refs = {n: await app.enqueue_async("nightly-report", n) for n in (1, 2)}
        claimed = await worker.claim(2)
        started = [r for r in claimed if r.started is not None]
        dispatched = [r for r in claimed if r.started is None]
        assert len(started) == 1 and len(dispatched) == 1
        assert await worker.execute(started[0]) is RunEnd.COMPLETED
        ref = refs[2 if runs == [1] else 1]
        assert (await asyncio.to_thread(job_status, ledger, ref)) == "dispatched"

        blocker.execute("BEGIN IMMEDIATE")  # the outage starts before the second run's start
        began = clock.now()
        running = asyncio.create_task(worker.execute(dispatched[0]))
        # The start fails after SQLite's busy_timeout (real time: the database waits for the
        # lock); the run then waits on the test clock to try again, the job leased only.
        assert await asyncio.to_thread(waiting.event.wait, 30)
        assert not running.done()
        assert (await asyncio.to_thread(job_status, ledger, ref)) == "dispatched"
        assert len(runs) == 1

        blocker.execute("COMMIT")  # the outage ends
        clock.advance("1s")  # past the retry's backoff: far less than the lease
        assert clock.now() - began < worker.lease
        assert await asyncio.wait_for(running, 10) is RunEnd.COMPLETED

        assert sorted(runs) == [1, 2]
        job = await app.get_async(ref)
        assert job.status is JobStatus.SUCCEEDED
        assert (job.attempts, job.executions) == (0, 1)
        codes = [e.code for e in await app.events_async(ref)]
        assert codes.count(EventCode.EXECUTION_STARTED) == 1, codes
        assert EventCode.LEASE_LOST not in codes, codes
        assert codes.count(EventCode.EXECUTION_FINISHED) == 1, codes
    finally:
        logging.getLogger("acta.worker").removeHandler(waiting)
        blocker.close()
        host.release()
        provider.close()
