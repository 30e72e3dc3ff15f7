"""``AsyncHost.stop()`` awaited from inside an async handler: a whole graceful shutdown.

docs/guide/testing.md says ``stop(worker)`` is a graceful shutdown (like SIGTERM) that may be
called from inside a handler to see a run handed back: the worker stops claiming, hands back
the run in flight and marks itself stopped. From a sync handler that holds (conformance
test_recovery). From an async handler the host awaits the shutdown inside the handler's own
task, so cancelling the handler cancels the shutdown with it (issue 8 item 12): no stopped
worker row, no worker-stopped event, no log line. This spec pins the documented outcome.
"""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING

import pytest

from acta import Acta, JobContext, JobStatus, ManualClock
from acta.model.codes import EventCode, WorkerStatus
from acta.provider.protocol import Provider
from acta.runtime.worker import Worker
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


async def test_stop_awaited_in_an_async_handler_stops_the_worker(
    acta_app: Acta, acta_async_host: AsyncHost, ledger: Ledger
) -> None:
    leaving = acta_async_host.worker
    peer = await acta_async_host.add_worker()

    @acta_app.job("reindex")
    async def reindex(ctx: JobContext) -> str:
        if ctx.execution == 1:
            await acta_async_host.stop(leaving)  # SIGTERM while this handler runs
            ctx.raise_if_cancelled()
        return f"done on execution {ctx.execution}"

    ref = await reindex.enqueue_async()
    assert await acta_async_host.tick(leaving) == "rearmed"

    # The worker shut down for good: its row says so, and so does its event.
    [row] = [w for w in await acta_app.workers_async() if w.incarnation == leaving.incarnation]
    assert row.status is WorkerStatus.STOPPED and row.stopped_at is not None
    stopped = ledger.value(
        "SELECT count(*) FROM {schema}.events WHERE worker_id = :worker AND code = :code",
        {"worker": row.worker_id, "code": int(EventCode.WORKER_STOPPED)},
    )
    assert stopped == 1

    # The run in flight was handed back, with no attempt spent, and a peer finishes it.
    job = await acta_async_host.job(ref)
    assert job.status is JobStatus.READY and job.attempts == 0
    assert (await acta_async_host.event_names(ref))[-2:] == ["execution-finished", "handed-back"]
    assert await acta_async_host.tick(peer) == "completed"
    assert await acta_app.result_async(ref) == "done on execution 2"


def test_a_stopped_worker_stays_stopped(acta_app: Acta, acta_host: Host) -> None:
    """Issue 26 item 6: ``advance()`` after ``stop(worker)`` registered the stopped worker
    again, and its next tick claimed a job and failed it ("cannot schedule new futures after
    shutdown"), spending an attempt."""
    leaving = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("tidy-up")
    def tidy_up() -> str:
        return "tidy"

    assert acta_host.tick(leaving) == "nothing-claimed"  # registered, idle
    before = leaving.incarnation
    acta_host.stop(leaving)
    ref = tidy_up.enqueue()
    acta_host.advance("10m")  # crosses many heartbeat intervals

    assert leaving.incarnation == before
    assert acta_host.tick(leaving) == "nothing-claimed"  # a stopped worker claims nothing
    job = acta_host.job(ref)
    assert job.status is JobStatus.READY and (job.attempts, job.executions) == (0, 0)
    rows = [w for w in acta_app.workers() if w.host == peer_host(acta_app, peer)]
    assert [w.status for w in rows if w.incarnation == before] == [WorkerStatus.STOPPED]
    assert len(rows) == 2  # no new incarnation of the stopped worker
    assert acta_host.tick(peer) == "completed"


def peer_host(app: Acta, worker: Worker) -> str:
    return next(w.host for w in app.workers() if w.incarnation == worker.incarnation)


def test_closing_after_a_cooperative_stop_leaves_no_pending_task(
    acta_app: Acta,
    acta_provider: Provider,
    acta_clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 26 item 6: closing the host after a stop from inside a handler logged
    "Task was destroyed but it is pending!" (tasks cancelled on the host's loop were never
    let finish before the loop closed)."""
    host = Host(acta_app, acta_provider, acta_clock)

    @acta_app.job("reindex-sync")
    def reindex(ctx: JobContext) -> str:
        if ctx.execution == 1:
            host.stop()  # SIGTERM while this handler runs
            ctx.raise_if_cancelled()
        return "done"

    reindex.enqueue()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        try:
            assert host.tick() == "rearmed"
        finally:
            host.close()
        gc.collect()  # a destroyed pending task is reported when it is collected
    assert "Task was destroyed but it is pending" not in caplog.text
