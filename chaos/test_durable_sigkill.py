"""Durable steps under repeated SIGKILLs: real worker processes, killed again and again.

On PostgreSQL three worker processes run 100 jobs whose handler has five durable steps and
one at-most-once step, interleaved (s1, s2, amo, s3, s4, s5). Every step body writes a witness
row (job ref, step, ctx.execution, pid, a uuid) through a database connection of its own, in
a transaction of its own that commits before the body returns, and takes a few milliseconds on
either side of that write, so kills land before, inside and after bodies. Heartbeats are
short (0.2 s: a lease of 0.8 s, a dead worker after 1.4 s), so a victim's leases lapse fast.
A killer loop SIGKILLs a worker that is executing jobs every 0.5 to 1.5 s and starts a
replacement, until every job has succeeded (at most 12 kills: then the survivors drain). The
jobs fall due one after another over 12 s, so work keeps arriving for at least six kills
however fast the machine is. The handler catches StepInterruptedError for the
at-most-once step and returns "interrupted" for it, so every job ends succeeded.

The promises are then judged from SQL alone, by the checks kept in anvil/checks (they return
violating rows; none expected): ``durable_steps_once`` (no completed step's body ran again in
a later execution, and it ran exactly once in the execution that recorded it) and
``durable_amo_once`` (an at-most-once body ran at most once, in the execution that wrote its
intent). The test also checks that each stored result is the uuid of the body run that
recorded it. A smaller SQLite run (two processes on one file) does the same.

The test waits only on its children's output and on the ledger, with deadlines.
"""

from __future__ import annotations

import random
import textwrap
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from anvil.checks import WITNESSED, describe, run_check
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

JOB = "chaos.durable"
STEPS = ("s1", "s2", "amo", "s3", "s4", "s5")
SETTINGS = {"heartbeat": 0.2, "poll": 0.05, "executors": 2, "shutdown_grace": 2.0}
DEADLINE = 120.0  # seconds for the whole run; it takes about 15-25 on two cores


@dataclass(frozen=True)
class Plan:
    """How big a run is on one provider."""

    processes: int
    jobs: int
    spread: float  # seconds over which the jobs fall due, so work keeps arriving that long
    kills: int  # at least this many; the killer goes on until the jobs are done
    most_kills: int  # then it lets the survivors drain


PLANS = {"postgres": Plan(3, 100, 12.0, 6, 12), "sqlite": Plan(2, 40, 6.0, 3, 6)}

APP = textwrap.dedent(
    """
    import os, random, threading, time, uuid
    from acta import Acta, StepInterruptedError, SyncJobContext

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])
    INSERT = os.environ["WITNESS_INSERT"]
    rng = random.Random(os.getpid())
    local = threading.local()

    def connection():
        # One connection per executor thread, of the body's own (not acta's).
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

    def body(ref: str, step: str, execution: int) -> str:
        time.sleep(rng.uniform(0.002, 0.008))
        token = str(uuid.uuid4())
        row = {"job_ref": ref, "step": step, "execution": execution,
               "pid": os.getpid(), "token": token}
        connection().execute(INSERT, row)  # committed: the body has run, whatever comes next
        time.sleep(rng.uniform(0.002, 0.008))
        return token

    @app.job("chaos.durable", input=int, timeout="60s", max_attempts=100)
    def durable(n: int, ctx: SyncJobContext) -> dict:
        ref, results = str(ctx.job), {}
        for step in ("s1", "s2", "amo", "s3", "s4", "s5"):
            if step != "amo":
                results[step] = ctx.step(step, body, ref, step, ctx.execution)
                continue
            try:
                results[step] = ctx.step(step, body, ref, step, ctx.execution, at_most_once=True)
            except StepInterruptedError:
                results[step] = "interrupted"
        return results
    """
)

SUCCEEDED = (
    "SELECT count(*) FROM {schema}.runtime r JOIN {schema}.definitions d "
    "ON d.id = r.definition_id WHERE d.name = :job AND r.status = 100"
)
# Live worker processes executing jobs now.
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
    (or ``plan.most_kills`` were made: then the survivors drain). Returns the kills made."""
    deadline = clock.monotonic() + DEADLINE
    kills = 0
    next_kill = clock.monotonic() + rng.uniform(0.5, 1.5)

    def diagnose() -> str:
        return f"kills {kills}; statuses {ledger.rows(STATUSES)}"

    while ledger.value(SUCCEEDED, job=JOB) < plan.jobs:
        if clock.monotonic() > deadline:
            raise AssertionError(f"the jobs did not finish: {diagnose()}\n{tail(workers)}")
        live = {w.pid: w for w in workers if w.process.poll() is None}
        if kills < plan.most_kills and clock.monotonic() >= next_kill:
            busy = [live[pid] for (pid,) in ledger.rows(EXECUTING) if pid in live]
            if busy:  # a worker holding running jobs: the kill lands mid-handler
                victim = rng.choice(sorted(busy, key=lambda w: w.pid))
                victim.kill()
                kills += 1
                workers.append(spawn(f"w{len(workers) + 1}"))
                next_kill = clock.monotonic() + rng.uniform(0.5, 1.5)
        pump(workers, 0.05)
    return kills


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_durable_steps_hold_through_repeated_sigkills(
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
    started = clock.monotonic()
    (tmp_path / "chaos_app.py").write_text(APP)
    env = {
        "ACTA_DATABASE": ledger.database,
        "ACTA_SCHEMA": ledger.schema,
        "WITNESS_DIALECT": ledger.dialect,
        "WITNESS_INSERT": witnesses.prepare_insert(ledger.dialect, ledger.schema),
    }
    producer = Acta(ledger.database, schema=ledger.schema)
    producer.define(JOB, input=int, max_attempts=100)
    # Jobs fall due one after another over the spread (the ledger holds them until then), so
    # the run lasts long enough for the kills however fast the machine drains a backlog.
    gap = timedelta(seconds=plan.spread / plan.jobs)
    requests = [producer.request(JOB, n, delay=gap * n) for n in range(plan.jobs)]
    refs = [str(ref) for ref in producer.enqueue_batch(requests)]
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)

    def spawn(name: str) -> Child:
        return spawn_worker(name, tmp_path, "chaos_app:app", env, **SETTINGS)

    workers = [spawn(f"w{i}") for i in range(1, plan.processes + 1)]
    try:
        kills = _killer(ledger, plan, workers, spawn, rng)
        live = [w for w in workers if w.process.poll() is None]
        # A replacement still starting has no SIGTERM handler yet: let it register first.
        wait_until(
            workers,
            "the live workers registered",
            lambda: all(registered(w) for w in live),
            clock.monotonic() + 30,
        )
        for worker in live:  # a graceful stop: nothing is left leased
            assert worker.terminate() == 0, tail([worker])
    finally:
        reap(workers)
    elapsed = clock.monotonic() - started

    # Every job succeeded, once, with a result for each of its six steps.
    jobs = ledger.rows(
        "SELECT j.job_ref, r.status, r.executions, "
        "(SELECT count(*) FROM {schema}.events e WHERE e.job_id = j.id AND e.code = 20) "
        "FROM {schema}.jobs j JOIN {schema}.runtime r ON r.job_id = j.id "
        "JOIN {schema}.definitions d ON d.id = j.definition_id WHERE d.name = :job",
        job=JOB,
    )
    assert sorted(ref for ref, *_ in jobs) == sorted(refs)
    assert [ref for ref, status, _, wins in jobs if status != 100 or wins != 1] == []
    assert kills >= plan.kills, f"only {kills} kills (seed {seed})"

    # The invariants, from SQL alone: no rows means they hold.
    found = {
        name: run_check(ledger.conn, name, ledger.dialect, ledger.schema) for name in WITNESSED
    }
    assert all(rows == [] for rows in found.values()), (
        "\n".join(describe(name, rows) for name, rows in found.items()) + f"\n(seed {seed})"
    )

    # Each stored result is the uuid of the body run that recorded it; an interrupted
    # at-most-once step is the only "interrupted" one, and its body ran at most once.
    recorded = {
        (ref, step): (state, execution)
        for ref, step, state, execution in ledger.rows(
            "SELECT job_ref, step, state, execution FROM {schema}.steps_view"
        )
    }
    rows = witnesses.rows(ledger.conn, ledger.dialect, ledger.schema)
    tokens = {(ref, step, execution): token for ref, step, execution, _, token in rows}
    interrupted = 0
    for ref in refs:
        result = producer.result(ref)
        assert sorted(result) == sorted(STEPS), (ref, result)
        for step in STEPS:
            state, execution = recorded[(ref, step)]
            if result[step] == "interrupted":
                assert (step, state) == ("amo", "interrupted"), (ref, step, state)
                interrupted += 1
            else:
                assert state == "completed" and tokens[(ref, step, execution)] == result[step]
    producer.close()

    bodies = Counter((ref, step) for ref, step, *_ in rows)
    reruns = sum(n - 1 for n in bodies.values())  # legitimate: earlier runs never recorded
    lost = ledger.value("SELECT count(*) FROM {schema}.events WHERE code = 30")
    assert lost > 0, "no kill took a lease from a running job"
    executions = Counter(x for _, _, x, _ in jobs)
    print(
        f"\n{ledger.dialect}: {plan.jobs} jobs x {len(STEPS)} steps, {plan.processes} "
        f"processes, {elapsed:.1f} s, seed {seed}; {kills} kills, {lost} leases lost, "
        f"{len(workers)} processes in all; {len(rows)} body runs, {reruns} re-runs of "
        f"unrecorded bodies, {interrupted} at-most-once steps interrupted; executions per "
        f"job {dict(sorted(executions.items()))}; checks {', '.join(WITNESSED)}: no violations"
    )
