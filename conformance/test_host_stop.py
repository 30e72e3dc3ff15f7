"""``AsyncHost.stop()`` awaited from inside an async handler: a whole graceful shutdown.

docs/guide/testing.md says ``stop(worker)`` is a graceful shutdown (like SIGTERM) that may be
called from inside a handler to see a run handed back: the worker stops claiming, hands back
the run in flight and marks itself stopped. From a sync handler that holds (conformance
test_recovery). From an async handler the host awaits the shutdown inside the handler's own
task, so cancelling the handler cancels the shutdown with it (issue 8 item 12): no stopped
worker row, no worker-stopped event, no log line. This spec pins the documented outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acta import Acta, JobContext, JobStatus
from acta.model.codes import EventCode, WorkerStatus
from acta_testing import AsyncHost

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
