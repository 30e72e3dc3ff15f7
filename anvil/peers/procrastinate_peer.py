"""procrastinate as a peer: its ``App`` with the psycopg connector, tasks deferred through the
public API, workers running ``run_worker_async``.

Each run's tables live in their own schema (the connections' search path). The worker runs
with ``concurrency`` = the executors asked for and LISTEN/NOTIFY on (its defaults otherwise);
finished jobs are kept (its default), and the drain window is read from its events table
(first 'started' to last 'succeeded').
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from importlib.metadata import version as _version
from typing import Any

from anvil.peers import base


def _app(dsn: str, schema: str) -> Any:
    import procrastinate

    connector = procrastinate.PsycopgConnector(
        conninfo=dsn,
        kwargs={"options": f"-c search_path={schema}", "application_name": schema},
    )
    app = procrastinate.App(connector=connector)

    @app.task(name=base.NOOP)
    async def noop(n: int) -> None:
        return None

    @app.task(name=base.PICKUP)
    async def pickup(n: int) -> None:
        print(f"{base.PICKUP_MARK} {n} {base.clock.now().timestamp():.6f}", flush=True)

    return app


class _Producer:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def enqueue(self, task: str, n: int) -> None:
        await self.app.tasks[task].defer_async(n=n)

    async def enqueue_many(self, task: str, ns: list[int]) -> None:
        await self.app.tasks[task].batch_defer_async(*({"n": n} for n in ns))


class Procrastinate:
    name = "procrastinate"
    worker_module = "anvil.peers.procrastinate_peer"

    def version(self) -> str:
        return _version("procrastinate")

    async def install(self, dsn: str, schema: str) -> None:
        async with _app(dsn, schema).open_async() as app:
            await app.schema_manager.apply_schema_async()

    @contextlib.asynccontextmanager
    async def producer(self, dsn: str, schema: str) -> AsyncIterator[_Producer]:
        async with _app(dsn, schema).open_async() as app:
            yield _Producer(app)

    def worker_env(self, dsn: str, schema: str, executors: int) -> dict[str, str]:
        return {"PEER_DSN": dsn, "PEER_SCHEMA": schema, "PEER_EXECUTORS": str(executors)}

    def remaining_sql(self, schema: str) -> str:
        return f"SELECT count(*) FROM {schema}.procrastinate_jobs WHERE status <> 'succeeded'"

    def settled_sql(self, schema: str) -> str:
        return f"SELECT count(*) FROM {schema}.procrastinate_jobs WHERE status = 'succeeded'"

    def window_sql(self, schema: str) -> str:
        return (
            f"SELECT min(at) FILTER (WHERE type = 'started'), "
            f"max(at) FILTER (WHERE type = 'succeeded'), "
            f"count(*) FILTER (WHERE type = 'succeeded') FROM {schema}.procrastinate_events"
        )


PEER = Procrastinate()


async def _worker() -> None:
    dsn, schema = os.environ["PEER_DSN"], os.environ["PEER_SCHEMA"]
    executors = int(os.environ["PEER_EXECUTORS"])
    async with _app(dsn, schema).open_async() as app:
        task = asyncio.create_task(
            app.run_worker_async(concurrency=executors, install_signal_handlers=False)
        )
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        print(base.READY_MARK, flush=True)
        with contextlib.suppress(asyncio.CancelledError):
            await task


if __name__ == "__main__":
    asyncio.run(_worker())
