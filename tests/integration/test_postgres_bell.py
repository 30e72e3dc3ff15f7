"""LISTEN/NOTIFY on PostgreSQL: an idle worker claims at once when another process enqueues;
with the listener disabled, or its connection killed, jobs still run by polling."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, JobStatus
from acta.clock import ManualClock
from conformance.serving_support import never, until

if TYPE_CHECKING:
    import psycopg

    from acta.provider.postgres import PostgresProvider
    from acta_testing.schemas import PostgresSchemas


@pytest.fixture
def pg_schemas(request: pytest.FixtureRequest) -> PostgresSchemas:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    return schemas


@pytest.fixture
def acta_provider(pg_schemas: PostgresSchemas) -> Iterator[PostgresProvider]:
    with pg_schemas.provider(max_connections=4) as provider:
        yield provider


def _idle(worker: Any, clock: ManualClock) -> Callable[[], Awaitable[bool]]:
    """True once the worker has claimed (nothing) and its next poll lies in the future."""

    async def idle() -> bool:
        return worker.registered and worker.next_claim > clock.now()

    return idle


def _apps(provider: PostgresProvider, clock: ManualClock) -> tuple[Acta, Acta, Any]:
    """A worker's app and a separate producer app (another process, as far as bells go)."""
    worker_app, producer = Acta(), Acta()

    @worker_app.job("notify-me")
    async def handler() -> str:
        return "woken"

    producer.define("notify-me")
    return worker_app, producer, handler


async def test_notify_wakes_an_idle_worker(acta_provider: PostgresProvider) -> None:
    clock = ManualClock()
    worker_app, producer, _ = _apps(acta_provider, clock)
    with worker_app.bound(acta_provider, clock), producer.bound(acta_provider, clock):
        worker = worker_app.worker(clock=clock, poll="10m")
        stopping = asyncio.Event()
        serving = asyncio.create_task(worker.serve(stopping))

        async def listening() -> bool:
            return any(getattr(b, "connected", False) for b in worker.bells)

        await until(listening)
        await until(_idle(worker, clock))  # first claim done, next poll 10 min away
        ref = await producer.enqueue_async("notify-me")

        async def done() -> bool:
            return (await worker_app.get_async(ref)).status is JobStatus.SUCCEEDED

        # The clock never moves: only NOTIFY can wake a worker whose next poll is 10 min away.
        await until(done)
        stopping.set()
        await serving


async def test_without_the_listener_jobs_still_run_by_poll(acta_provider: PostgresProvider) -> None:
    clock = ManualClock()
    worker_app, producer, _ = _apps(acta_provider, clock)
    with worker_app.bound(acta_provider, clock), producer.bound(acta_provider, clock):
        worker = worker_app.worker(clock=clock, poll="10m", listen=False)
        stopping = asyncio.Event()
        serving = asyncio.create_task(worker.serve(stopping))
        await until(_idle(worker, clock))
        assert worker.bells == []
        ref = await producer.enqueue_async("notify-me")

        async def done() -> bool:
            return (await worker_app.get_async(ref)).status is JobStatus.SUCCEEDED

        assert await never(done), "nothing may wake it before its poll"
        clock.advance("10m")  # the safety poll comes due
        await until(done)
        stopping.set()
        await serving


async def test_a_killed_listener_reconnects(
    acta_provider: PostgresProvider, pg_schemas: PostgresSchemas
) -> None:
    import psycopg

    clock = ManualClock()
    worker_app, producer, _ = _apps(acta_provider, clock)
    with worker_app.bound(acta_provider, clock), producer.bound(acta_provider, clock):
        worker = worker_app.worker(clock=clock, poll="10m")
        stopping = asyncio.Event()
        serving = asyncio.create_task(worker.serve(stopping))

        async def listening() -> bool:
            return any(getattr(b, "connected", False) for b in worker.bells)

        await until(listening)
        # Only this worker's listener: other tests (xdist) may be listening on the server too.
        [pid] = [b.backend_pid for b in worker.bells if getattr(b, "connected", False)]
        admin: psycopg.Connection[Any]
        with psycopg.connect(pg_schemas.dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))

        async def dropped() -> bool:
            return not any(getattr(b, "connected", False) for b in worker.bells)

        await until(dropped)
        clock.advance("1s")  # past the bell's reconnect backoff, well before the 10 min poll
        await until(listening)
        assert [b.backend_pid for b in worker.bells] != [pid]  # a new session listens now
        await until(_idle(worker, clock))
        ref = await producer.enqueue_async("notify-me")

        async def done() -> bool:
            return (await worker_app.get_async(ref)).status is JobStatus.SUCCEEDED

        await until(done)
        stopping.set()
        await serving
