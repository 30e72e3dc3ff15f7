"""What the peer benchmark needs from a queue, and how one peer is measured.

A peer module provides a ``Peer``: its name and version, how to install its tables in a fresh
PostgreSQL schema, a producer (single and batch enqueue through the peer's public API), the
module its worker processes run, and three SQL reads of its own tables (jobs left, jobs
settled, and the drain window). The measurements mirror ``anvil.measure`` and
``anvil.pickup``: the same sizes, the same zero-work async handlers, workers as real processes,
the drain window read from the peer's own records (first pick to last settle), and pickup from
the start of the enqueue call to the first line of the handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import sql

from anvil.pickup import latency_stats, pauses
from anvil.workload import BenchError, Child, clock, pause, spawn, wait_for

Run = dict[str, float]
READY_MARK = "peer-worker-ready"
PICKUP_MARK = "peer-pickup"
NOOP = "noop"
PICKUP = "pickup"
# Workers print READY just before they start listening; this much time lets every one of them
# reach its LISTEN before a measured backlog or pickup arrives.
SETTLE_IN = 1.0


class Producer(Protocol):
    async def enqueue(self, task: str, n: int) -> None: ...
    async def enqueue_many(self, task: str, ns: list[int]) -> None: ...


class Peer(Protocol):
    name: str
    worker_module: str

    def version(self) -> str: ...
    async def install(self, dsn: str, schema: str) -> None: ...
    def producer(
        self, dsn: str, schema: str
    ) -> contextlib.AbstractAsyncContextManager[Producer]: ...
    def worker_env(self, dsn: str, schema: str, executors: int) -> dict[str, str]: ...
    # SQL on the peer's tables in ``schema``: one row, one or three values.
    def remaining_sql(self, schema: str) -> str: ...
    def settled_sql(self, schema: str) -> str: ...
    def window_sql(self, schema: str) -> str: ...


@dataclass
class Space:
    """A fresh schema for one run, dropped afterwards, with a direct connection for reads."""

    dsn: str
    schema: str
    conn: psycopg.Connection[Any]

    def one(self, query: str) -> tuple[Any, ...]:
        row = self.conn.execute(query).fetchone()
        assert row is not None
        return tuple(row)


@contextlib.contextmanager
def fresh_space(peer: Peer, dsn: str) -> Iterator[Space]:
    schema = f"acta_peer_{secrets.token_hex(4)}"
    conn = psycopg.connect(dsn, autocommit=True)
    try:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        asyncio.run(peer.install(dsn, schema))
        yield Space(dsn, schema, conn)
    finally:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        conn.close()


@contextlib.contextmanager
def peer_workers(peer: Peer, space: Space, count: int, executors: int) -> Iterator[list[Child]]:
    env = peer.worker_env(space.dsn, space.schema, executors)
    children = [spawn(env, peer.worker_module) for _ in range(count)]
    try:
        wait_for(
            children,
            lambda: all(any(READY_MARK in line for line in c.lines) for c in children),
            60,
            "while starting",
        )
        pause(children, SETTLE_IN)
        yield children
    finally:
        for child in children:
            child.stop()


def _run(coro: Callable[[], Any]) -> Any:
    return asyncio.run(coro())


def enqueue_single(peer: Peer, dsn: str, count: int) -> Run:
    with fresh_space(peer, dsn) as space:

        async def go() -> float:
            async with peer.producer(dsn, space.schema) as producer:
                await producer.enqueue(NOOP, -1)  # connects and warms up: not timed
                start = clock.monotonic()
                for i in range(count):
                    await producer.enqueue(NOOP, i)
                return clock.monotonic() - start

        seconds = _run(go)
    return {"jobs_per_s": count / seconds, "us_per_job": seconds / count * 1e6,
            "seconds": seconds, "jobs": count}  # fmt: skip


def enqueue_batch(peer: Peer, dsn: str, total: int, per_call: int) -> Run:
    with fresh_space(peer, dsn) as space:

        async def go() -> float:
            async with peer.producer(dsn, space.schema) as producer:
                await producer.enqueue(NOOP, -1)
                start = clock.monotonic()
                for first in range(0, total, per_call):
                    await producer.enqueue_many(
                        NOOP, list(range(first, min(first + per_call, total)))
                    )
                return clock.monotonic() - start

        seconds = _run(go)
    return {"jobs_per_s": total / seconds, "ms_per_call": seconds / -(-total // per_call) * 1e3,
            "seconds": seconds, "jobs": total}  # fmt: skip


def _seconds(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)


def drain(peer: Peer, dsn: str, jobs: int, processes: int, executors: int) -> Run:
    with (
        fresh_space(peer, dsn) as space,
        peer_workers(peer, space, processes, executors) as children,
    ):

        async def backlog() -> None:
            async with peer.producer(dsn, space.schema) as producer:
                await producer.enqueue_many(NOOP, list(range(jobs)))  # one transaction

        committed = clock.monotonic()
        _run(backlog)
        remaining = peer.remaining_sql(space.schema)
        wait_for(children, lambda: space.one(remaining)[0] == 0, 120 + jobs / 20, "draining")
        wall = clock.monotonic() - committed
        first, last, done = space.one(peer.window_sql(space.schema))
    if done != jobs:
        raise BenchError(f"{peer.name} drain finished {done} jobs, expected {jobs}")
    window = _seconds(last) - _seconds(first)
    return {"jobs_per_s": done / window, "us_per_job": window / done * 1e6,
            "window_s": window, "wall_s": wall, "jobs": done}  # fmt: skip


def pickup(peer: Peer, dsn: str, samples: int, seed: int = 7) -> Run:
    """``samples`` enqueue-to-start latencies into one idle worker process (4 executors)."""
    rng = random.Random(seed)
    with fresh_space(peer, dsn) as space, peer_workers(peer, space, 1, 4) as children:
        started: dict[int, float] = {}

        def on_line(child: Child, line: str) -> None:
            if line.startswith(PICKUP_MARK):
                _, n, instant = line.split()
                started[int(n)] = float(instant)

        async def go() -> list[tuple[float, float]]:
            out = []
            async with peer.producer(dsn, space.schema) as producer:
                settled = peer.settled_sql(space.schema)
                for n, rest in enumerate(pauses(samples, False, 0, rng)):
                    pause(children, rest)
                    begun = clock.now()
                    await producer.enqueue(PICKUP, n)
                    call = (clock.now() - begun).total_seconds() * 1000
                    wait_for(
                        children, lambda n=n: n in started, 30, "for a pickup",
                        step=0.5, on_line=on_line,
                    )  # fmt: skip
                    wait_for(
                        children, lambda n=n: space.one(settled)[0] >= n + 1, 30,
                        "for a settle", step=0.002,
                    )  # fmt: skip
                    out.append(((started[n] - begun.timestamp()) * 1000, call))
            return out

        return latency_stats(_run(go))


@contextlib.asynccontextmanager
async def connection(dsn: str, schema: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """An autocommit connection whose search path is ``schema``, named after it."""
    conn = await psycopg.AsyncConnection.connect(
        dsn, autocommit=True, application_name=schema, options=f"-c search_path={schema}"
    )
    try:
        yield conn
    finally:
        await conn.close()
