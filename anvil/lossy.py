"""The lossy-link run: real workers on PostgreSQL through a proxy that drops server replies.

``python -m anvil.lossy --jobs 3000 --drop 0.02`` enqueues jobs with ``max_attempts=1`` (so a
lost run fails the job for good), serves them with in-process workers (real time, short
heartbeats, so recovery runs within the run) reaching the database through
``acta_testing.faultproxy`` at the given drop rate, then checks the ledger directly:

- every job succeeded and its handler ran at least once;
- no job failed without a run (no execution-started event);
- no write-fenced event without a real lease loss (a lease-lost event at that epoch);
- no job is left on an expired lease.

``chaos/test_lossy_proxy.py`` runs a short form of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import secrets
import threading
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from acta import Acta, EventCode, JobContext, JobStatus
from acta.clock import SystemClock
from acta_testing.faultproxy import postgres_proxy

DSN = "postgresql://postgres@127.0.0.1:5432/test"
_clock = SystemClock()


@dataclass(frozen=True)
class LossyReport:
    jobs: int
    drop: float
    seconds: float
    succeeded: int
    handler_ran: int
    failed_without_run: int
    fenced_without_loss: int
    on_expired_leases: int
    lease_lost: int
    dropped_replies: int
    connections: int

    @property
    def ok(self) -> bool:
        return (
            self.succeeded == self.jobs
            and self.handler_ran == self.jobs
            and self.failed_without_run == 0
            and self.fenced_without_loss == 0
            and self.on_expired_leases == 0
        )


def run_lossy(
    jobs: int,
    drop: float,
    *,
    dsn: str = DSN,
    schema: str | None = None,
    workers: int = 2,
    executors: int = 10,
    heartbeat: float = 0.2,
    seed: int = 1,
    timeout: float = 120.0,
) -> LossyReport:
    """Run ``jobs`` jobs through a link dropping ``drop`` of the server's replies; the schema
    (made here, dropped at the end) defaults to a fresh ``acta_bench_lossy_*``."""
    import psycopg
    from psycopg import sql

    schema = schema or f"acta_bench_lossy_{secrets.token_hex(4)}"
    producer = Acta(dsn, schema=schema, apply_migrations=True)
    runs: Counter[str] = Counter()
    lock = threading.Lock()
    try:
        producer.define("lossy.step", max_attempts=1)
        for start in range(0, jobs, 500):
            count = min(jobs, start + 500) - start
            producer.enqueue_batch([producer.request("lossy.step") for _ in range(count)])
        began = _clock.monotonic()
        with postgres_proxy(dsn, drop_rate=drop, seed=seed) as proxy:
            app = Acta(proxy.dsn(dsn), schema=schema)

            @app.job("lossy.step", max_attempts=1)
            def step(ctx: JobContext) -> str:
                with lock:
                    runs[str(ctx.job)] += 1
                return "done"

            asyncio.run(_serve(app, dsn, schema, jobs, workers, executors, heartbeat, timeout))
            dropped, connections = proxy.counts["dropped_replies"], proxy.counts["connections"]
        seconds = _clock.monotonic() - began
        with psycopg.connect(dsn, autocommit=True) as conn:
            counts = _check(conn, schema)
        return LossyReport(
            jobs=jobs,
            drop=drop,
            seconds=round(seconds, 2),
            handler_ran=len(runs),
            dropped_replies=dropped,
            connections=connections,
            **counts,
        )
    finally:
        producer.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


async def _serve(
    app: Acta,
    dsn: str,
    schema: str,
    jobs: int,
    workers: int,
    executors: int,
    heartbeat: float,
    limit: float,
) -> None:
    import psycopg

    stopping = asyncio.Event()
    fleet = [
        app.worker(executors=executors, heartbeat=heartbeat, poll=0.05, shutdown_grace=2.0)
        for _ in range(workers)
    ]
    serving = [asyncio.ensure_future(w.serve(stopping)) for w in fleet]
    deadline = _clock.now() + timedelta(seconds=limit)
    query = (
        f'SELECT count(*) FROM "{schema}".runtime r JOIN "{schema}".definitions d '
        "ON d.id = r.definition_id WHERE d.name = 'lossy.step' AND r.status >= 100"
    )
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        while _clock.now() < deadline:
            cur = await conn.execute(query)
            row = await cur.fetchone()
            if row is not None and row[0] >= jobs:
                break
            await _clock.sleep_until(_clock.now() + timedelta(seconds=0.1))
    stopping.set()
    await asyncio.gather(*serving, return_exceptions=True)
    await app.provider.aclose()


def _check(conn: Any, schema: str) -> dict[str, int]:
    s = f'"{schema}"'
    user = f"JOIN {s}.definitions d ON d.id = r.definition_id AND d.name = 'lossy.step'"

    def one(query: str, *params: Any) -> int:
        return int(conn.execute(query, params).fetchone()[0])

    return {
        "succeeded": one(
            f"SELECT count(*) FROM {s}.runtime r {user} WHERE r.status = %s",
            int(JobStatus.SUCCEEDED),
        ),
        "failed_without_run": one(
            f"SELECT count(*) FROM {s}.runtime r {user} WHERE r.status = %s AND NOT EXISTS "
            f"(SELECT 1 FROM {s}.events e WHERE e.job_id = r.job_id AND e.code = %s)",
            int(JobStatus.FAILED),
            int(EventCode.EXECUTION_STARTED),
        ),
        "fenced_without_loss": one(
            f"SELECT count(*) FROM {s}.events f WHERE f.code = %s AND NOT EXISTS "
            f"(SELECT 1 FROM {s}.events l WHERE l.job_id = f.job_id AND l.epoch = f.epoch "
            "AND l.code = %s)",
            int(EventCode.WRITE_FENCED),
            int(EventCode.LEASE_LOST),
        ),
        "on_expired_leases": one(
            f"SELECT count(*) FROM {s}.runtime r {user} "
            "WHERE r.status IN (20, 21) AND r.lease_expires_at < now()"
        ),
        "lease_lost": one(
            f"SELECT count(*) FROM {s}.events e JOIN {s}.runtime r ON r.job_id = e.job_id "
            f"{user} WHERE e.code = %s",
            int(EventCode.LEASE_LOST),
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--drop", type=float, default=0.02)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dsn", default=DSN)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    report = run_lossy(
        args.jobs,
        args.drop,
        dsn=args.dsn,
        workers=args.workers,
        seed=args.seed,
        timeout=args.timeout,
    )
    print(json.dumps({**asdict(report), "ok": report.ok, "machine": platform.node()}, indent=2))
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
