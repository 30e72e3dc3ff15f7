"""pgqueuer as a peer: its ``Queries`` for enqueue, its ``QueueManager`` in worker processes.

Each run's tables live in their own schema (``PGQUEUER_SCHEMA``) with their own NOTIFY channel
(``PGQUEUER_CHANNEL``), so runs never see each other. The worker is pgqueuer's default
continuous mode with ``batch_size`` = the executors asked for (16 in the table), no per-worker
cap, and the periodic folding of its log into statistics turned off so the log keeps one
'picked' and one 'successful' row per job, which is where the drain window is read from.
Completions go through pgqueuer's own buffer (its default), i.e. they are group-committed.
The connection is asyncpg's, the driver pgqueuer's documentation leads with (its psycopg
driver was several times slower here and woke late on NOTIFY).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from datetime import timedelta
from importlib.metadata import version as _version
from typing import Any

from anvil.peers import base


@contextlib.asynccontextmanager
async def _connection(dsn: str, schema: str) -> AsyncIterator[Any]:
    import asyncpg

    conn = await asyncpg.connect(
        dsn, server_settings={"search_path": schema, "application_name": schema}
    )
    try:
        yield conn
    finally:
        await conn.close()


def _configure(schema: str) -> None:
    from pgqueuer.domain.settings import db_settings

    os.environ["PGQUEUER_SCHEMA"] = schema
    os.environ["PGQUEUER_CHANNEL"] = f"{schema}_ch"
    db_settings.cache_clear()


class _Producer:
    def __init__(self, queries: object) -> None:
        self.queries = queries

    async def enqueue(self, task: str, n: int) -> None:
        await self.queries.enqueue(task, str(n).encode())  # type: ignore[attr-defined]

    async def enqueue_many(self, task: str, ns: list[int]) -> None:
        payloads: list[bytes | None] = [str(n).encode() for n in ns]
        await self.queries.enqueue([task] * len(ns), payloads, [0] * len(ns))  # type: ignore[attr-defined]


class PgQueuer:
    name = "pgqueuer"
    worker_module = "anvil.peers.pgqueuer_peer"

    def version(self) -> str:
        return _version("pgqueuer")

    async def install(self, dsn: str, schema: str) -> None:
        from pgqueuer import Queries

        _configure(schema)
        async with _connection(dsn, schema) as conn:
            await Queries.from_asyncpg_connection(conn).install(create_schema=False)

    @contextlib.asynccontextmanager
    async def producer(self, dsn: str, schema: str) -> AsyncIterator[_Producer]:
        from pgqueuer import Queries

        _configure(schema)
        async with _connection(dsn, schema) as conn:
            yield _Producer(Queries.from_asyncpg_connection(conn))

    def worker_env(self, dsn: str, schema: str, executors: int) -> dict[str, str]:
        return {"PEER_DSN": dsn, "PEER_SCHEMA": schema, "PEER_EXECUTORS": str(executors)}

    def remaining_sql(self, schema: str) -> str:
        # A settled job leaves the queue table (its log row is written in the same statement).
        return f"SELECT count(*) FROM {schema}.pgqueuer"

    def settled_sql(self, schema: str) -> str:
        return f"SELECT count(*) FROM {schema}.pgqueuer_log WHERE status = 'successful'"

    def window_sql(self, schema: str) -> str:
        return (
            f"SELECT min(created) FILTER (WHERE status = 'picked'), "
            f"max(created) FILTER (WHERE status = 'successful'), "
            f"count(*) FILTER (WHERE status = 'successful') FROM {schema}.pgqueuer_log"
        )


PEER = PgQueuer()


async def _worker() -> None:
    from pgqueuer import Queries, QueueManager
    from pgqueuer.models import Job

    dsn, schema = os.environ["PEER_DSN"], os.environ["PEER_SCHEMA"]
    executors = int(os.environ["PEER_EXECUTORS"])
    _configure(schema)
    async with _connection(dsn, schema) as conn:
        qm = QueueManager(Queries.from_asyncpg_connection(conn))

        @qm.entrypoint(base.NOOP)
        async def noop(job: Job) -> None:
            return None

        @qm.entrypoint(base.PICKUP)
        async def pickup(job: Job) -> None:
            print(f"{base.PICKUP_MARK} {(job.payload or b'').decode()} "
                  f"{base.clock.now().timestamp():.6f}", flush=True)  # fmt: skip

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, qm.shutdown.set)
        print(base.READY_MARK, flush=True)
        await qm.run(batch_size=executors, log_aggregation_interval=timedelta(0))


if __name__ == "__main__":
    asyncio.run(_worker())
