"""A mixed durable and gated workload through a link that loses PostgreSQL replies (issue 26).

Two in-process workers reach PostgreSQL through ``acta_testing.faultproxy`` dropping 3% of the
server's replies (seeded), COMMIT replies included, so durable writes, gate admissions and
operator-free settles are all left in doubt now and then and retried whole by the provider.
The workload: durable jobs (a plain step and an at-most-once step whose bodies leave witness
rows, a variable, a note, and an alert from every fifth job), laned jobs, jobs under a
concurrency key limit and jobs under a rate meter. When every job has ended, the ledger alone
must hold: the project's SQL checks (anvil/checks: lanes, concurrency, rate, durable steps,
at-most-once steps) return no rows, no note or alert was written twice by one execution, and
no write was fenced without a real lease loss. Real time, a few seconds; the proxy applies to
PostgreSQL only (SQLite has no link to lose: tests/integration/test_in_doubt_*.py play the
same retry in process on both dialects).
"""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Any

import pytest

from acta import Acta, SyncJobContext
from acta.clock import SystemClock
from acta_testing.faultproxy import postgres_proxy
from anvil.checks import CHECKS, WITNESSED, describe, run_checks, witness

pytestmark = pytest.mark.chaos

DROP, SEED = 0.03, 7
DURABLE, LANES, MEMBERS, KEYED, RATED = 40, 4, 6, 20, 20
TOTAL = DURABLE + LANES * MEMBERS + KEYED + RATED
DEADLINE = 60.0  # seconds for the whole drain; it takes a few on two cores
_clock = SystemClock()


class Witness:
    """Step bodies record each real run here, on a direct connection (not through the proxy),
    committed before the body returns (anvil.checks.witness)."""

    def __init__(self, dsn: str, schema: str) -> None:
        self.dsn, self.insert = dsn, witness.prepare_insert("postgres", schema)
        self._local = threading.local()

    def run(self, ctx: SyncJobContext, step: str) -> str:
        import psycopg

        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = psycopg.connect(self.dsn, autocommit=True)
        params = {"job_ref": str(ctx.job), "step": step, "execution": ctx.execution}
        conn.execute(self.insert, {**params, "pid": os.getpid(), "token": os.urandom(8).hex()})
        return step


def register(app: Acta, sink: Witness | None) -> None:
    """The workload's four definitions (``sink`` None: the producer's, never run)."""

    @app.job("chaos.durable", input=int, max_attempts=5)
    def durable(n: int, ctx: SyncJobContext) -> int:
        assert sink is not None
        ctx.step("fetch", lambda: sink.run(ctx, "fetch"))
        ctx.step("charge", lambda: sink.run(ctx, "charge"), at_most_once=True)
        ctx.set("seen", n)
        ctx.note(f"order {n} charged")
        if n % 5 == 0:
            ctx.alert(f"order {n} needs a look", severity="warning")
        return n

    @app.job("chaos.laned", input=str, max_attempts=5)
    def laned(member: str) -> str:
        return member

    @app.job("chaos.keyed", input=int, max_attempts=5, concurrency_limit=2)
    def keyed(n: int) -> int:
        return n

    @app.job("chaos.rated", input=int, max_attempts=5, rate_limit="40/s", rate_key="chaos")
    def rated(n: int) -> int:
        return n


def enqueue(app: Acta) -> None:
    app.enqueue_batch([app.request("chaos.durable", n) for n in range(DURABLE)])
    for m in range(MEMBERS):  # interleaved across lanes
        for lane in range(LANES):
            app.enqueue("chaos.laned", f"{lane}.{m}", lane=f"lane-{lane}")
    for n in range(KEYED):
        app.enqueue("chaos.keyed", n, concurrency_key=f"key-{n % 3}")
    app.enqueue_batch([app.request("chaos.rated", n) for n in range(RATED)])


async def _serve(app: Acta, conn: Any, schema: str) -> bool:
    import asyncio

    stopping = asyncio.Event()
    # A 1 s heartbeat (4 s leases): what this checks is replies lost in doubt, and a busy
    # CI machine must not turn a slow heartbeat into a real lease loss.
    fleet = [
        app.worker(executors=8, heartbeat=1.0, poll=0.05, shutdown_grace=2.0) for _ in range(2)
    ]
    serving = [asyncio.ensure_future(w.serve(stopping)) for w in fleet]
    deadline = _clock.now() + timedelta(seconds=DEADLINE)
    query = (
        f'SELECT count(*) FROM "{schema}".runtime r JOIN "{schema}".definitions d '
        "ON d.id = r.definition_id WHERE d.name LIKE 'chaos.%%' AND r.status >= 100"
    )
    done = False
    while not done and _clock.now() < deadline:
        done = conn.execute(query).fetchone()[0] >= TOTAL
        await _clock.sleep_until(_clock.now() + timedelta(seconds=0.1))
    stopping.set()
    await asyncio.gather(*serving, return_exceptions=True)
    await app.provider.aclose()
    return done


def _doubled(conn: Any, schema: str) -> list[tuple[Any, ...]]:
    """Notes and manual alerts written more than once by one execution of a job."""
    s = f'"{schema}"'
    return list(
        conn.execute(
            f"SELECT job_ref, code, execution, count(*) FROM {s}.events "
            "WHERE code = 44 GROUP BY job_ref, code, execution HAVING count(*) > 1 "
            "UNION ALL "
            f"SELECT a.job_ref, 45, NULL, count(*) FROM {s}.alerts a "
            f"JOIN {s}.runtime r ON r.job_id = a.job_id "
            "WHERE a.kind = 1 GROUP BY a.job_ref, r.executions "
            "HAVING count(*) > r.executions"
        ).fetchall()
    )


def _fenced_without_loss(conn: Any, schema: str) -> int:
    s = f'"{schema}"'
    return int(
        conn.execute(
            f"SELECT count(*) FROM {s}.events f WHERE f.code = 31 AND NOT EXISTS "
            f"(SELECT 1 FROM {s}.events l WHERE l.job_id = f.job_id AND l.epoch = f.epoch "
            "AND l.code = 30)"
        ).fetchone()[0]
    )


def test_a_mixed_workload_through_a_lossy_link_keeps_every_invariant(
    pg_ledger: tuple[str, str],
) -> None:
    import asyncio

    import psycopg

    dsn, schema = pg_ledger
    producer = Acta(dsn, schema=schema)
    register(producer, None)
    with psycopg.connect(dsn, autocommit=True) as conn:
        witness.create(conn, "postgres", schema)
        try:
            enqueue(producer)
            with postgres_proxy(dsn, drop_rate=DROP, seed=SEED) as proxy:
                app = Acta(proxy.dsn(dsn), schema=schema)
                register(app, Witness(dsn, schema))
                drained = asyncio.run(_serve(app, conn, schema))
                dropped = proxy.counts["dropped_replies"]
            assert drained, f"not every job ended within {DEADLINE} s"
            assert dropped > 0  # the link did lose replies
            found = run_checks(conn, "postgres", schema, names=CHECKS + WITNESSED)
            broken = {name: rows for name, rows in found.items() if rows}
            assert not broken, "\n".join(describe(n, rows) for n, rows in broken.items())
            assert _doubled(conn, schema) == []
            assert _fenced_without_loss(conn, schema) == 0
            alerts = conn.execute(f'SELECT count(*) FROM "{schema}".alerts WHERE kind = 1')
            assert alerts.fetchone()[0] >= 1  # the workload did open alerts
        finally:
            producer.close()
            witness.drop(conn, "postgres", schema)
