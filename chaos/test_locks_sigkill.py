"""Locks inside handlers under repeated SIGKILLs of their holders: real worker processes.

Worker processes run jobs whose handler takes one of two hot lock keys with ``ctx.lock`` and
holds it for a few milliseconds. Inside the section the handler writes a witness row when it
enters and, in a ``finally``, another just before it leaves (each through a connection of its
own, committed at once), so a kill lands before, inside or after a section. Heartbeats are
short (0.2 s: a lease of 0.8 s), so a dead holder's lease lapses fast and recovery frees its
lock for the waiters. A killer loop SIGKILLs a worker that is executing jobs every 0.5 to 1.5 s
and starts a replacement, until every job has succeeded.

The promise is judged from SQL alone by ``locks_exclusive`` (anvil/checks): no two runs were
inside one key's section at once, except where the earlier run had lost its lease (a killed
holder's section never closes; recovery takes its lease back first). Every job succeeded, and
at least one lease was lost. The test waits only on its children's output and on the ledger,
with deadlines.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from anvil.checks import describe, run_check
from anvil.checks import witness as witnesses
from chaos.durable_support import (
    Ledger,
    clock,
    open_ledger,
    pump,
    reap,
    registered,
    tail,
    wait_until,
)
from chaos.process import Child, spawn_worker

pytestmark = pytest.mark.chaos

JOB = "chaos.locked"
SETTINGS = {"heartbeat": 0.2, "poll": 0.05, "executors": 2, "shutdown_grace": 2.0}
DEADLINE = 120.0  # seconds for the whole run


@dataclass(frozen=True)
class Plan:
    processes: int
    jobs: int
    spread: float  # seconds over which the jobs fall due
    kills: int  # at least this many
    most_kills: int  # then the survivors drain


PLANS = {"postgres": Plan(3, 30, 6.0, 3, 6), "sqlite": Plan(2, 20, 5.0, 2, 4)}

APP = textwrap.dedent(
    """
    import os, random, threading, time
    from acta import Acta, SyncJobContext

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])
    INSERT = os.environ["WITNESS_INSERT"]
    rng = random.Random(os.getpid())
    local = threading.local()

    def connection():
        if getattr(local, "conn", None) is None:
            if os.environ["WITNESS_DIALECT"] == "postgres":
                import psycopg
                local.conn = psycopg.connect(os.environ["ACTA_DATABASE"], autocommit=True)
            else:
                import sqlite3
                local.conn = sqlite3.connect(
                    os.environ["ACTA_DATABASE"], isolation_level=None, timeout=30
                )
        return local.conn

    def witness(ref, step, execution):
        row = {"job_ref": ref, "step": step, "execution": execution,
               "pid": os.getpid(), "token": step}
        connection().execute(INSERT, row)

    @app.job("chaos.locked", input=int, timeout="60s", max_attempts=100)
    def locked(n: int, ctx: SyncJobContext) -> int:
        key = f"hot-{n % 2}"
        ref = str(ctx.job)
        with ctx.lock(key, timeout="30s"):
            witness(ref, f"lock-enter:{key}", ctx.execution)
            try:
                time.sleep(rng.uniform(0.005, 0.03))  # the critical section's work
            finally:
                witness(ref, f"lock-exit:{key}", ctx.execution)
        return n
    """
)

SUCCEEDED = (
    "SELECT count(*) FROM {schema}.runtime r JOIN {schema}.definitions d "
    "ON d.id = r.definition_id WHERE d.name = :job AND r.status = 100"
)
EXECUTING = (
    "SELECT DISTINCT w.pid FROM {schema}.runtime r JOIN {schema}.workers w "
    "ON w.id = r.lease_owner WHERE r.status = 21"
)
STATUSES = (
    "SELECT c.name, count(*) FROM {schema}.runtime r JOIN {schema}.codes c "
    "ON c.family = 'job_status' AND c.code = r.status GROUP BY c.name ORDER BY c.name"
)


def _killer(
    ledger: Ledger, plan: Plan, workers: list[Child], spawn: Any, rng: random.Random
) -> int:
    """Kill a busy worker every 0.5-1.5 s and start a replacement, until every job succeeded
    (or ``plan.most_kills`` were made). Returns the kills made."""
    deadline = clock.monotonic() + DEADLINE
    kills = 0
    next_kill = clock.monotonic() + rng.uniform(0.5, 1.5)
    while ledger.value(SUCCEEDED, job=JOB) < plan.jobs:
        if clock.monotonic() > deadline:
            statuses = ledger.rows(STATUSES)
            raise AssertionError(f"not finished: kills {kills}; {statuses}\n{tail(workers)}")
        live = {w.pid: w for w in workers if w.process.poll() is None}
        if kills < plan.most_kills and clock.monotonic() >= next_kill:
            busy = [live[pid] for (pid,) in ledger.rows(EXECUTING) if pid in live]
            if busy:
                rng.choice(sorted(busy, key=lambda w: w.pid)).kill()
                kills += 1
                workers.append(spawn(f"w{len(workers) + 1}"))
                next_kill = clock.monotonic() + rng.uniform(0.5, 1.5)
        pump(workers, 0.05)
    return kills


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_lock_holders_never_overlap_through_sigkills(
    request: pytest.FixtureRequest, tmp_path: Path, dialect: str
) -> None:
    plan = PLANS[dialect]
    with open_ledger(request, tmp_path, dialect) as ledger:
        witnesses.create(ledger.conn, dialect, ledger.schema)
        try:
            _run(ledger, plan, tmp_path)
        finally:
            witnesses.drop(ledger.conn, dialect, ledger.schema)


def _run(ledger: Ledger, plan: Plan, tmp_path: Path) -> None:
    (tmp_path / "chaos_app.py").write_text(APP)
    env = {
        "ACTA_DATABASE": ledger.database,
        "ACTA_SCHEMA": ledger.schema,
        "WITNESS_DIALECT": ledger.dialect,
        "WITNESS_INSERT": witnesses.prepare_insert(ledger.dialect, ledger.schema),
    }
    producer = Acta(ledger.database, schema=ledger.schema)
    producer.define(JOB, input=int, max_attempts=100)
    gap = timedelta(seconds=plan.spread / plan.jobs)
    producer.enqueue_batch([producer.request(JOB, n, delay=gap * n) for n in range(plan.jobs)])
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)

    def spawn(name: str) -> Child:
        return spawn_worker(name, tmp_path, "chaos_app:app", env, **SETTINGS)

    workers = [spawn(f"w{i}") for i in range(1, plan.processes + 1)]
    try:
        kills = _killer(ledger, plan, workers, spawn, rng)
        live = [w for w in workers if w.process.poll() is None]
        wait_until(
            workers,
            "the live workers registered",
            lambda: all(registered(w) for w in live),
            clock.monotonic() + 30,
        )
        for worker in live:
            assert worker.terminate() == 0, tail([worker])
    finally:
        reap(workers)
        producer.close()

    assert kills >= plan.kills, f"only {kills} kills (seed {seed})"
    assert ledger.value("SELECT count(*) FROM {schema}.events WHERE code = 30") > 0
    entered = [
        r for r in witnesses.rows(ledger.conn, ledger.dialect, ledger.schema) if "enter" in r[1]
    ]
    assert len(entered) >= plan.jobs
    found = run_check(ledger.conn, "locks_exclusive", ledger.dialect, ledger.schema)
    assert found == [], describe("locks_exclusive", found) + f"\n(seed {seed})"
    print(
        f"\n{ledger.dialect}: {plan.jobs} jobs on 2 lock keys, {kills} kills, "
        f"{len(entered)} sections entered; locks_exclusive: no violations (seed {seed})"
    )
