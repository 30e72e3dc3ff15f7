"""The runtime is built from a Deployment, never from the application: a registry, a ledger
over a provider, and a namespace are enough to enqueue, run and read a job."""

from __future__ import annotations

from acta import JobDefinition, JobPolicy, JobStatus, ManualClock
from acta.ledger.facade import Ledger
from acta.producer import Producer
from acta.provider.protocol import Provider
from acta.reader import Reader
from acta.registry import Registry
from acta.runtime.deployment import Deployment
from acta.runtime.run import RunEnd
from acta.runtime.worker import Worker


async def test_a_worker_runs_a_job_with_no_application_object(
    acta_provider: Provider, acta_clock: ManualClock
) -> None:
    seen: list[int] = []

    def double(n: int) -> int:
        seen.append(n)
        return n * 2

    registry = Registry()
    job: JobDefinition[int, int] = registry.add(JobDefinition("double", double, JobPolicy()))
    ledger = Ledger(acta_provider, acta_clock)
    deployment = Deployment(ledger, registry, "plain")
    registry.bind(Producer(lambda: ledger, registry, "plain", deployment.bell))
    ref = await job.enqueue_async(21)

    worker = Worker(deployment, executors=1)
    try:
        assert await worker.run_one() == (RunEnd.COMPLETED, "double")
        assert await worker.run_one() == (None, None)  # nothing else is due
    finally:
        worker.threads.shutdown(wait=False)

    reader = Reader(lambda: ledger, registry, "plain")
    info = await reader.get_async(ref)
    assert (info.status, info.namespace, info.executions) == (JobStatus.SUCCEEDED, "plain", 1)
    assert await reader.result_async(ref) == 42
    assert seen == [21]
    [me] = await reader.workers_async()
    assert me.incarnation == worker.incarnation
