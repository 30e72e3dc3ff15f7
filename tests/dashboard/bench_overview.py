"""How long the dashboard's overview takes on a large PostgreSQL ledger (docs/benchmarks).

    python -m tests.dashboard.bench_overview --jobs 100000 [--dsn postgresql://...]

It builds the ledger through acta's own verbs only: batch enqueues of ``--jobs`` jobs over five
definitions, a real worker draining ``--drain`` of them (successes, retries, failures, so the
last hour has events), and a bulk cancel of part of the rest. Then it ANALYZEs and times the
overview's reads (``Source.overview``, what ``/api/overview`` costs on the server) and the
whole page through the ASGI app, and prints each dashboard statement's plan summary.
Not a test: it takes minutes. The query-plan test (test_query_plans.py) is the CI guard.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import psycopg

from acta import Acta
from acta.dashboard import create_dashboard
from acta.dashboard.source import Source
from tests.dashboard.conftest import local_client
from tests.dashboard.plans import capture_ops, execution_ms, plan_summary

SCHEMA = "acta_dash_bench"
NAMES = ("bench.mail", "bench.bill", "bench.sync", "bench.report", "bench.flaky")


def build(dsn: str, jobs: int, drain: int) -> Acta:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{SCHEMA}" CASCADE')
    app = Acta(dsn, schema=SCHEMA, apply_migrations=True)

    def work(n: int) -> int:
        return n

    def flaky(n: int) -> int:
        if n % 3 == 0:
            raise RuntimeError(f"flaky {n}")
        return n

    for name in NAMES:
        app.job(name, max_attempts=2, backoff="1s")(flaky if name == "bench.flaky" else work)
    started = time.perf_counter()
    for first in range(0, jobs, 5000):
        batch = [
            app.request(NAMES[i % len(NAMES)], i, tags=[f"t{i % 7}"])
            for i in range(first, min(jobs, first + 5000))
        ]
        app.enqueue_batch(batch)
    print(f"enqueued {jobs} in {time.perf_counter() - started:.1f}s")
    started = time.perf_counter()
    asyncio.run(_drain(app, dsn, drain))
    print(f"drained {drain} in {time.perf_counter() - started:.1f}s")
    report = app.repairs.cancel_many(name="bench.report", reason="bench: cancelled in bulk")
    print(f"cancelled {report.changed}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{SCHEMA}".jobs, "{SCHEMA}".runtime, "{SCHEMA}".events')
    return app


async def _drain(app: Acta, dsn: str, target: int) -> None:
    worker = app.worker(executors=16)
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            await asyncio.sleep(0.5)
            row = conn.execute(
                f'SELECT count(*) FROM "{SCHEMA}".runtime WHERE status >= 100'
            ).fetchone()
            if row is not None and row[0] >= target:
                break
    stopping.set()
    await serving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--drain", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--reuse", action="store_true", help="measure the ledger a previous run built, as is"
    )
    args = parser.parse_args()
    if args.reuse:
        app = Acta(args.dsn, schema=SCHEMA)
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f'ANALYZE "{SCHEMA}".jobs, "{SCHEMA}".runtime, "{SCHEMA}".events')
            counts = conn.execute(
                f'SELECT status, count(*) FROM "{SCHEMA}".runtime GROUP BY 1 ORDER BY 1'
            ).fetchall()
            events = conn.execute(f'SELECT count(*) FROM "{SCHEMA}".events').fetchone()
        print(f"ledger: jobs by status {dict(counts)}, events {events[0] if events else 0}")
    else:
        app = build(args.dsn, args.jobs, args.drain)
    source = Source(app)
    source.overview()  # warm: connections, catalog, statement preparation
    reads = []
    for _ in range(args.runs):
        t = time.perf_counter()
        source.overview()
        reads.append((time.perf_counter() - t) * 1000)
    asgi = create_dashboard(app)
    pages: list[float] = []

    async def timed(scope: Any, receive: Any, send: Any) -> None:
        # Server time: from the request entering the ASGI app to its last byte sent.
        started = time.perf_counter()
        await asgi(scope, receive, send)
        if scope["type"] == "http":
            pages.append((time.perf_counter() - started) * 1000)

    client = local_client(timed)
    assert client.get("/").status_code == 200  # warm: templates compiled
    pages.clear()
    for _ in range(args.runs):
        assert client.get("/").status_code == 200
    print(f"overview reads: median {statistics.median(reads):.1f} ms, max {max(reads):.1f} ms")
    print(f"overview page:  median {statistics.median(pages):.1f} ms, max {max(pages):.1f} ms")
    for op in capture_ops(app, source.overview):
        print(plan_summary(args.dsn, app, op))
        times = sorted(execution_ms(args.dsn, app, op) for _ in range(5))
        print(f"  server execution: median {times[2]:.1f} ms, min {times[0]:.1f} ms")
    with open("/proc/loadavg") as loadavg:
        print("load average:", loadavg.read().split()[:3])


if __name__ == "__main__":
    main()
