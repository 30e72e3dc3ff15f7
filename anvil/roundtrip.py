"""What one small write transaction costs on PostgreSQL, by how it is sent.

``python -m anvil.roundtrip [--dsn ...] [--count 500]`` times a one-row UPDATE committed in
three shapes, with psycopg's sync and async connections, with ``synchronous_commit`` on (the
server default: the commit waits for the WAL flush) and off (for this session only):

* ``transaction``: what acta does today for a verb: ``BEGIN``, the statement, ``COMMIT``, each
  its own round trip (psycopg sends ``BEGIN`` before the first statement and waits for it);
* ``pipeline``: the same three commands sent in one flight (psycopg pipeline mode);
* ``autocommit``: the statement alone, which PostgreSQL runs as its own transaction.

The difference between the shapes is the protocol overhead a one-statement verb pays on top of
the statement itself. The scratch table lives in its own schema, dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
from collections.abc import Awaitable, Callable

import psycopg
from psycopg import sql

from anvil.workload import clock

Shape = Callable[[psycopg.Connection[object], sql.Composed], None]
AsyncShape = Callable[[psycopg.AsyncConnection[object], sql.Composed], Awaitable[None]]


def _transaction(conn: psycopg.Connection[object], stmt: sql.Composed) -> None:
    conn.execute(stmt)
    conn.commit()


def _pipeline(conn: psycopg.Connection[object], stmt: sql.Composed) -> None:
    with conn.pipeline():
        conn.execute(stmt)
        conn.commit()


def _autocommit(conn: psycopg.Connection[object], stmt: sql.Composed) -> None:
    conn.execute(stmt)


async def _atransaction(conn: psycopg.AsyncConnection[object], stmt: sql.Composed) -> None:
    await conn.execute(stmt)
    await conn.commit()


async def _apipeline(conn: psycopg.AsyncConnection[object], stmt: sql.Composed) -> None:
    async with conn.pipeline():
        await conn.execute(stmt)
        await conn.commit()


async def _aautocommit(conn: psycopg.AsyncConnection[object], stmt: sql.Composed) -> None:
    await conn.execute(stmt)


SYNC: dict[str, Shape] = {
    "transaction": _transaction,
    "pipeline": _pipeline,
    "autocommit": _autocommit,
}
ASYNC: dict[str, AsyncShape] = {
    "transaction": _atransaction,
    "pipeline": _apipeline,
    "autocommit": _aautocommit,
}


def _options(sync_commit: bool) -> str:
    return "" if sync_commit else "-c synchronous_commit=off"


def measure_sync(dsn: str, stmt: sql.Composed, shape: str, sync_commit: bool, count: int) -> float:
    """Median milliseconds per committed write."""
    autocommit = shape == "autocommit"
    with psycopg.connect(dsn, autocommit=autocommit, options=_options(sync_commit)) as conn:
        times = []
        for _ in range(count):
            begun = clock.monotonic()
            SYNC[shape](conn, stmt)
            times.append(clock.monotonic() - begun)
    return statistics.median(times) * 1e3


async def measure_async(
    dsn: str, stmt: sql.Composed, shape: str, sync_commit: bool, count: int
) -> float:
    autocommit = shape == "autocommit"
    conn = await psycopg.AsyncConnection.connect(
        dsn, autocommit=autocommit, options=_options(sync_commit)
    )
    async with conn:
        times = []
        for _ in range(count):
            begun = clock.monotonic()
            await ASYNC[shape](conn, stmt)
            times.append(clock.monotonic() - begun)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anvil.roundtrip", description=__doc__)
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--count", type=int, default=500)
    args = parser.parse_args(argv)
    schema = sql.Identifier(f"acta_bench_rt_{secrets.token_hex(4)}")
    with psycopg.connect(args.dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
        try:
            table = sql.SQL("{}.probe").format(schema)
            admin.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, n bigint)").format(table))
            admin.execute(sql.SQL("INSERT INTO {} VALUES (1, 0)").format(table))
            stmt = sql.SQL("UPDATE {} SET n = n + 1 WHERE id = 1").format(table)
            print("| shape | client | synchronous_commit | median ms per write |")
            print("| --- | --- | --- | ---: |")
            for sync_commit in (True, False):
                for shape in SYNC:
                    flag = "on" if sync_commit else "off"
                    ms = measure_sync(args.dsn, stmt, shape, sync_commit, args.count)
                    print(f"| {shape} | sync | {flag} | {ms:.3f} |")
                    ms = asyncio.run(measure_async(args.dsn, stmt, shape, sync_commit, args.count))
                    print(f"| {shape} | async | {flag} | {ms:.3f} |")
        finally:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(schema))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
