"""SQLite faults of the file itself: read-only, disk full, a lock held past busy_timeout.

Each is a DatabaseUnavailableError naming the file, the cause and what to do, never a raw
sqlite3 error (before, a full disk surfaced as "cannot rollback - no transaction is active":
acta rolled back a transaction SQLite had already rolled back). Because the error is typed,
a worker keeps a finished run's outcome and settles it once the disk has room again, so no job
runs twice for a dropped settle.

The faults are real: a small tmpfs filled up, a read-only bind mount (chmod does not stop root).
Mounting needs root and a kernel that allows it; elsewhere these tests skip, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from acta import Acta, DatabaseUnavailableError, JobStatus
from acta.clock import ManualClock
from acta.provider.sqlite import SqliteProvider
from acta_testing import AsyncHost, TickOutcome

JOBS = 200
FILL_EVERY = 25  # every 25th run fills the disk while it runs, so its settle meets ENOSPC


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount ({' '.join(args)}): {done.stderr.strip() or done.returncode}")


def _unmount(where: Path) -> None:
    done = subprocess.run(["umount", str(where)], capture_output=True, check=False)
    if done.returncode != 0:  # something still holds a file open: detach it anyway
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


@contextlib.contextmanager
def _tmpfs(where: Path, size: str = "8m") -> Iterator[Path]:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("a tmpfs of its own needs Linux and root")
    where.mkdir()
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    try:
        yield where
    finally:
        _unmount(where)


def _migrated(path: Path) -> SqliteProvider:
    provider = SqliteProvider(path, busy_timeout=0.05)
    provider.migrate()
    return provider


def _fill(ledger: Path) -> Path:
    """Fill the ledger's file system. The WAL is emptied first: SQLite reuses WAL space it has
    already got, so only a write that must grow a file meets the full disk."""
    with closing(sqlite3.connect(ledger)) as conn:
        (busy, _, _) = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0, "the WAL could not be emptied"
    filler = ledger.parent / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return filler


def _rows(ledger: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(ledger)) as conn:
        return conn.execute(sql).fetchall()


def _counts(ledger: Path) -> tuple[object, ...]:
    return _rows(
        ledger,
        "SELECT (SELECT count(*) FROM acta_jobs), (SELECT count(*) FROM acta_runtime), "
        "(SELECT count(*) FROM acta_events)",
    )[0]


# -- enqueue ------------------------------------------------------------------------------------


def test_a_full_disk_refuses_an_enqueue_with_a_typed_error(tmp_path: Path) -> None:
    app = Acta()
    report = app.define("nightly-report")
    with _tmpfs(tmp_path / "disk") as disk:
        ledger = disk / "ledger.sqlite3"
        provider = _migrated(ledger)
        try:
            with app.bound(provider, ManualClock()):
                app.enqueue("nightly-report")
                before = _counts(ledger)
                filler = _fill(ledger)
                with pytest.raises(DatabaseUnavailableError) as err:
                    app.enqueue_batch([report.request() for _ in range(50)])
                message = str(err.value)
                assert str(ledger) in message and "disk is full" in message, message
                assert "free space" in message and "SQLITE_FULL" in message, message
                filler.unlink()
                assert _counts(ledger) == before  # nothing half written
                app.enqueue("nightly-report")  # room again: the same provider carries on
                assert _counts(ledger)[0] == before[0] + 1
        finally:
            provider.close()


def test_a_full_disk_inside_the_callers_transaction_is_typed_too(tmp_path: Path) -> None:
    app = Acta()
    report = app.define("nightly-report")
    with _tmpfs(tmp_path / "disk") as disk:
        ledger = disk / "ledger.sqlite3"
        provider = _migrated(ledger)
        try:
            with app.bound(provider, ManualClock()), closing(sqlite3.connect(ledger)) as conn:
                # A small page cache makes SQLite write the open transaction to the WAL as it
                # goes (as a large transaction would), so the batch itself meets the full disk.
                conn.execute("PRAGMA cache_size = 2")
                before = _counts(ledger)
                filler = _fill(ledger)
                with pytest.raises(DatabaseUnavailableError) as err:
                    app.enqueue_batch([report.request() for _ in range(200)], connection=conn)
                assert "disk is full" in str(err.value)
                filler.unlink()
                conn.rollback()
                assert _counts(ledger) == before
                app.enqueue("nightly-report", connection=conn)  # the connection still works
                conn.commit()
                assert _counts(ledger)[0] == before[0] + 1
        finally:
            provider.close()


def test_a_read_only_ledger_refuses_an_enqueue_with_a_typed_error(tmp_path: Path) -> None:
    app = Acta()
    app.define("nightly-report")
    with _tmpfs(tmp_path / "disk") as disk:
        ledger = disk / "ledger.sqlite3"
        writer = _migrated(ledger)
        view = tmp_path / "read-only"
        view.mkdir()
        reader: SqliteProvider | None = None
        try:
            with app.bound(writer, ManualClock()):
                app.enqueue("nightly-report")  # the WAL and its index exist, as in service
            before = _counts(ledger)
            # The same files seen through a read-only mount: what root meets too.
            _mount("--bind", str(disk), str(view))
            try:
                _mount("-o", "remount,ro,bind", str(view))
                reader = SqliteProvider(view / ledger.name, busy_timeout=0.05)
                with app.bound(reader, ManualClock()), pytest.raises(DatabaseUnavailableError) as e:
                    app.enqueue("nightly-report")
                message = str(e.value)
                assert str(view / ledger.name) in message and "read-only" in message, message
                assert "SQLITE_READONLY" in message, message
                assert _counts(ledger) == before  # nothing half written
            finally:
                if reader is not None:
                    reader.close()
                _unmount(view)
        finally:
            writer.close()


def test_a_lock_held_past_busy_timeout_is_a_typed_error(tmp_path: Path) -> None:
    app = Acta()
    app.define("nightly-report")
    ledger = tmp_path / "ledger.sqlite3"
    provider = _migrated(ledger)
    blocker = sqlite3.connect(ledger, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with app.bound(provider, ManualClock()), pytest.raises(DatabaseUnavailableError) as err:
            app.enqueue("nightly-report")
        assert "locked by another writer" in str(err.value)
        blocker.execute("ROLLBACK")
    finally:
        blocker.close()
        provider.close()


# -- a worker whose settles meet a full disk ------------------------------------------------------


class _Seen(logging.Handler):
    """Wakes the test when the worker says a settle could not be written."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "could not settle job" in record.getMessage():
            self.loop.call_soon_threadsafe(self.event.set)


async def test_a_full_disk_during_settles_loses_no_run_and_runs_no_job_twice(
    tmp_path: Path,
) -> None:
    with _tmpfs(tmp_path / "disk", size="16m") as disk:
        ledger = disk / "ledger.sqlite3"
        provider, clock, app = _migrated(ledger), ManualClock(), Acta()
        runs: dict[int, int] = {}
        fillers: list[Path] = []

        @app.job("resize-image")
        def resize(n: int) -> int:
            runs[n] = runs.get(n, 0) + 1
            if sum(runs.values()) % FILL_EVERY == 0:
                fillers.append(_fill(ledger))  # the disk fills while this run is in flight
            return n * 2

        host = AsyncHost(app, provider, clock, retry_settles=True)
        seen = _Seen()
        logging.getLogger("acta.worker").addHandler(seen)
        try:
            await app.enqueue_batch_async([resize.request(n) for n in range(JOBS)])
            outages = 0
            for tick in range(1, JOBS + 1):
                ticking = asyncio.create_task(host.tick())
                if tick % FILL_EVERY == 0:
                    waiter = asyncio.create_task(seen.event.wait())
                    await asyncio.wait({waiter, ticking}, timeout=30, return_when="FIRST_COMPLETED")
                    waiter.cancel()
                    # The settle failed and waits on the test clock; it must not have given up.
                    assert seen.event.is_set() and not ticking.done(), ticking
                    seen.event.clear()
                    fillers.pop().unlink()  # room again
                    clock.advance("1s")  # past the settle retry's backoff
                    outages += 1
                assert await asyncio.wait_for(ticking, 30) is TickOutcome.COMPLETED
            assert outages == JOBS // FILL_EVERY
            assert await host.tick() is TickOutcome.NOTHING_CLAIMED
        finally:
            logging.getLogger("acta.worker").removeHandler(seen)
            for filler in fillers:
                filler.unlink()
            await host.aclose()
            provider.close()

        # Every job succeeded, and every handler ran exactly once: no settle was dropped.
        assert runs == dict.fromkeys(range(JOBS), 1)
        statuses = _rows(
            ledger,
            "SELECT status, count(*) FROM acta_jobs_view WHERE job_name = 'resize-image' "
            "GROUP BY status",
        )
        assert statuses == [(JobStatus.SUCCEEDED.label, JOBS)]
        per_job = _rows(
            ledger,
            "SELECT j.job_ref, "
            "sum(e.event = 'execution-started'), sum(e.event = 'execution-finished') "
            "FROM acta_jobs_view j LEFT JOIN acta_events_view e ON e.job_ref = j.job_ref "
            "WHERE j.job_name = 'resize-image' GROUP BY j.job_ref",
        )
        assert len(per_job) == JOBS
        assert {(started, finished) for _, started, finished in per_job} == {(1, 1)}
