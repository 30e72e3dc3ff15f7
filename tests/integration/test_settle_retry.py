"""A settle the database cannot take right now is kept and tried again, so a finished run is
not lost (and its job not run again by recovery) because of a passing outage.

On SQLite the outage is real: another connection holds the write lock past busy_timeout, which
acta reports as DatabaseUnavailableError."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest
from outage_support import Seen, job_status

from acta import Acta, DatabaseUnavailableError, EventCode, JobStatus
from acta.clock import ManualClock
from acta.provider.sqlite import SqliteProvider
from acta_testing import AsyncHost, Host


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite3"
    provider = SqliteProvider(path)
    provider.migrate()
    provider.close()
    return path


def _provider(path: Path) -> SqliteProvider:
    # A short busy_timeout so the outage is reported within a fraction of a second.
    return SqliteProvider(path, busy_timeout=0.02)


def test_a_writer_that_keeps_the_lock_is_a_typed_unavailable_error(ledger: Path) -> None:
    app, provider = Acta(), _provider(ledger)
    app.define("nightly-report")
    blocker = sqlite3.connect(ledger, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with app.bound(provider, ManualClock()), pytest.raises(DatabaseUnavailableError) as err:
            app.enqueue("nightly-report")
        assert "locked by another writer" in str(err.value)
    finally:
        blocker.close()
        provider.close()


async def test_a_settle_waits_out_the_outage_and_the_run_counts_once(ledger: Path) -> None:
    app, provider, clock = Acta(), _provider(ledger), ManualClock()
    blocker = sqlite3.connect(ledger, isolation_level=None, check_same_thread=False)
    runs: list[int] = []

    @app.job("nightly-report")
    def nightly_report() -> str:
        runs.append(1)
        blocker.execute("BEGIN IMMEDIATE")  # the outage starts while the handler runs
        return "42 pages"

    host = AsyncHost(app, provider, clock, retry_settles=True)
    waiting = Seen("could not settle job")
    logging.getLogger("acta.worker").addHandler(waiting)
    try:
        ref = await app.enqueue_async("nightly-report")
        ticking = asyncio.create_task(host.tick())
        # The first settle attempt fails after SQLite's busy_timeout (real time: it is the
        # database waiting for the lock); then the worker waits on the test clock to retry.
        assert await asyncio.to_thread(waiting.event.wait, 30)
        assert not ticking.done()
        assert (await asyncio.to_thread(job_status, ledger, ref)) == "executing"

        blocker.execute("COMMIT")  # the outage ends
        clock.advance("1s")  # past the retry's backoff
        assert await asyncio.wait_for(ticking, 10) == "completed"

        assert runs == [1]  # the handler ran once: the result was kept, not recomputed
        job = await app.get_async(ref)
        assert job.status is JobStatus.SUCCEEDED and (job.attempts, job.executions) == (0, 1)
        assert await app.result_async(ref) == "42 pages"
        codes = [e.code for e in await app.events_async(ref)]
        assert codes.count(EventCode.EXECUTION_FINISHED) == 1
    finally:
        logging.getLogger("acta.worker").removeHandler(waiting)
        blocker.close()
        host.release()
        provider.close()


def test_the_test_host_reports_a_refused_settle_instead_of_waiting(ledger: Path) -> None:
    app, provider, clock = Acta(), _provider(ledger), ManualClock()
    blocker = sqlite3.connect(ledger, isolation_level=None, check_same_thread=False)

    @app.job("nightly-report")
    def nightly_report() -> str:
        blocker.execute("BEGIN IMMEDIATE")
        return "42 pages"

    host = Host(app, provider, clock)
    try:
        ref = app.enqueue("nightly-report")
        with pytest.raises(DatabaseUnavailableError):
            host.tick()
        blocker.execute("ROLLBACK")
        assert app.get(ref).status is JobStatus.EXECUTING  # recovery takes it back later
    finally:
        blocker.close()
        host.close()
        provider.close()
