"""Jobs enqueued inside the caller's own transaction: three in four commit, one rolls back.

The producer opens a driver connection of its own to the ledger's database, begins a
transaction, enqueues a few jobs on it and commits or rolls back. A committed job must run to
success; a rolled-back one must never appear in the ledger (expected outcome GONE), even
though ``enqueue`` handed back its ref.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.ledger import GONE
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload

JOB = "certify.txn"
PER_TRANSACTION = 4


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=int, max_attempts=100)
    def in_transaction(n: int, ctx: SyncJobContext) -> None:
        sink.run(ctx)
        time.sleep(0.005)


def _connect(ctx: Enqueueing) -> Any:
    if ctx.ledger.dialect == "postgres":
        import psycopg

        return psycopg.connect(ctx.ledger.database)  # not autocommit: a transaction is open
    return sqlite3.connect(ctx.ledger.database, timeout=60)


def enqueue(ctx: Enqueueing) -> None:
    conn = _connect(ctx)
    try:
        for start in range(0, ctx.count, PER_TRANSACTION):
            if ctx.ledger.dialect == "sqlite":
                conn.execute("BEGIN IMMEDIATE")  # the write lock now, not at the first write
            refs = [
                ctx.app.enqueue(JOB, i, delay=ctx.delay(i), connection=conn)
                for i in range(start, min(start + PER_TRANSACTION, ctx.count))
            ]
            if ctx.rng.random() < 0.25:
                conn.rollback()
                ctx.ledger.expect(WORKLOAD.name, refs, GONE)
            else:
                conn.commit()
                ctx.ledger.expect(WORKLOAD.name, refs, JobStatus.SUCCEEDED)
    finally:
        conn.close()


WORKLOAD = Workload(
    "txn",
    f"{PER_TRANSACTION} enqueues in the caller's transaction; 1 in 4 rolled back, must not exist",
    7,
    register,
    enqueue,
    most=400,
)
