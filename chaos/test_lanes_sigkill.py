"""Lanes under a crash: real worker processes, one killed with SIGKILL mid-run (issue 9).

On PostgreSQL four worker processes serve 200 laned jobs over 20 lanes (ten members each,
enqueued interleaved across lanes, some in batches, some one by one, some while the workers
run). Handlers take a few tens of milliseconds, so runs of different lanes overlap across
processes. Once the run is under way, the process holding the most executing jobs is killed
with SIGKILL; its leases lapse (short heartbeats) and the survivors recover them. When every
job has succeeded, the ledger alone must show that no lane ever had two members executing at
once and that every lane ran in enqueue order: the SQL checks kept in anvil/checks, which
return the violating rows (none expected). A smaller SQLite run (two processes on one file)
does the same.

The test waits only on its children's output or the ledger, with deadlines; real time passes
inside the worker processes (their handlers sleep), as in the other chaos tests.
"""

from __future__ import annotations

import os
import random
import selectors
import sqlite3
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from acta.clock import SystemClock
from acta.provider.testing import LedgerLocation
from anvil.checks import CHECKS, describe, qualifier, run_check
from chaos.process import Child, spawn_worker

pytestmark = pytest.mark.chaos

LANES = 20
MEMBERS = 10
JOB = "chaos.lane-step"
HEARTBEAT = 0.2  # lease 0.8 s, dead after 1.4 s: the victim's leases come back in seconds
SETTINGS = {"heartbeat": HEARTBEAT, "poll": 0.05, "executors": 4, "shutdown_grace": 2.0}
DEADLINE = 45.0  # seconds for the whole run to drain; it takes a few on two cores
_clock = SystemClock()

APP = textwrap.dedent(
    """
    import os, random, time
    from acta import Acta, JobContext

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])
    rng = random.Random(os.getpid())

    @app.job("chaos.lane-step", input=str, timeout="60s")
    def lane_step(member: str, ctx: JobContext) -> str:
        time.sleep(rng.uniform(0.02, 0.06))  # real work, so runs overlap across processes
        print(f"RAN {member} {ctx.execution} {os.getpid()}", flush=True)
        return member
    """
)


@dataclass
class Ledger:
    """Where the run's ledger is, and a connection of the test's own to read it."""

    database: str
    location: LedgerLocation
    processes: int
    conn: Any

    def rows(self, text: str, **params: Any) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(self.location.prepare(text), params).fetchall())

    def value(self, text: str, **params: Any) -> Any:
        [[found]] = self.rows(text, **params)
        return found


@pytest.fixture(params=["postgres", "sqlite"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    """A migrated, empty ledger: PostgreSQL with four workers, SQLite with two."""
    if request.param == "sqlite":
        path = tmp_path / "ledger.sqlite3"
        Acta(str(path), apply_migrations=True).migrate()
        location = LedgerLocation("sqlite", "acta", qualifier("sqlite", "acta"), path=path)
        lite = sqlite3.connect(path, isolation_level=None)
        yield Ledger(str(path), location, 2, lite)
        lite.close()
        return
    import psycopg

    dsn, schema = request.getfixturevalue("pg_ledger")
    location = LedgerLocation(
        "postgres", schema, qualifier("postgres", schema), dsn=dsn, paramstyle="pyformat"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield Ledger(dsn, location, 4, conn)


def _pump(children: list[Child], seconds: float) -> None:
    """Read what the children print for up to ``seconds`` (their pipes must never fill up)."""
    with selectors.DefaultSelector() as selector:
        for child in children:
            if child.process.stdout is not None and not child.closed:
                selector.register(child.process.stdout, selectors.EVENT_READ, child)
        if not selector.get_map():
            return
        for key, _ in selector.select(timeout=seconds):
            child = key.data
            chunk = os.read(child.process.stdout.fileno(), 65536)
            if not chunk:
                child.closed = True
                continue
            child.partial += chunk.decode("utf-8", "replace")
            *complete, child.partial = child.partial.split("\n")
            child.lines.extend(complete)


def _wait_until(children: list[Child], what: str, ready: Callable[[], Any], deadline: float) -> Any:
    """Poll the ledger (``ready``) between reads of the children's output until it answers
    something true; fail at ``deadline`` (a monotonic instant) saying what was awaited."""
    while True:
        found = ready()
        if found:
            return found
        if _clock.monotonic() > deadline:
            tail = "\n".join(f"[{c.name}] {line}" for c in children for line in c.lines[-10:])
            raise AssertionError(f"timed out waiting for {what}; recent output:\n{tail}")
        _pump(children, 0.05)


def _enqueue(producer: Acta, members: list[tuple[str, int]], batch: bool) -> None:
    requests = [producer.request(JOB, f"{lane}/{seq}", lane=lane) for lane, seq in members]
    if batch:
        producer.enqueue_batch(requests)
    else:
        for request in requests:
            producer.enqueue_batch([request])


def _round(rng: random.Random, seqs: range) -> list[tuple[str, int]]:
    """Members ``seqs`` of every lane, lanes interleaved in a shuffled order per position."""
    out: list[tuple[str, int]] = []
    for seq in seqs:
        lanes = [f"lane-{n:02d}" for n in range(LANES)]
        rng.shuffle(lanes)
        out.extend((lane, seq) for lane in lanes)
    return out


SUCCEEDED = (
    "SELECT count(*) FROM {schema}.runtime r JOIN {schema}.definitions d "
    "ON d.id = r.definition_id WHERE d.name = :job AND r.status = 100"
)
# Per live worker process: how many jobs it is executing now.
EXECUTING = (
    "SELECT w.pid, count(*) FROM {schema}.runtime r JOIN {schema}.workers w "
    "ON w.id = r.lease_owner WHERE r.status = 21 GROUP BY w.pid ORDER BY count(*) DESC, w.pid"
)


def test_lanes_hold_through_a_sigkill(tmp_path: Path, ledger: Ledger) -> None:
    started = _clock.monotonic()
    deadline = started + DEADLINE
    (tmp_path / "chaos_app.py").write_text(APP)
    env = {"ACTA_DATABASE": ledger.database, "ACTA_SCHEMA": ledger.location.schema}
    producer = Acta(ledger.database, schema=ledger.location.schema)
    producer.define(JOB, input=str)
    rng = random.Random(9)
    # Positions 1-3 of every lane in one batch (lane order kept inside it), 4-5 one by one.
    _enqueue(producer, _round(rng, range(1, 4)), batch=True)
    _enqueue(producer, _round(rng, range(4, 6)), batch=False)

    workers = [
        spawn_worker(f"w{i}", tmp_path, "chaos_app:app", env, **SETTINGS)
        for i in range(1, ledger.processes + 1)
    ]
    try:
        # The rest while the workers run: a batch per position, or one by one.
        for seq in range(6, MEMBERS + 1):
            _enqueue(producer, _round(rng, range(seq, seq + 1)), batch=seq % 2 == 0)
            _pump(workers, 0)

        def busy_victim() -> Child | None:
            """A process executing jobs now, once a fifth of the work is done."""
            if ledger.value(SUCCEEDED, job=JOB) < LANES * MEMBERS // 5:
                return None
            by_pid = {w.pid: w for w in workers}
            for pid, _ in ledger.rows(EXECUTING):
                if pid in by_pid:
                    return by_pid[pid]
            return None

        victim: Child = _wait_until(workers, "a process executing jobs", busy_victim, deadline)
        victim.kill()
        done_at_kill = ledger.value(SUCCEEDED, job=JOB)
        survivors = [w for w in workers if w is not victim]
        _wait_until(
            survivors,
            f"all {LANES * MEMBERS} jobs succeeded",
            lambda: ledger.value(SUCCEEDED, job=JOB) == LANES * MEMBERS,
            deadline,
        )
        for survivor in survivors:  # a graceful stop: nothing is left leased
            assert survivor.terminate() == 0
    finally:
        for w in workers:
            if w.process.poll() is None:
                w.process.kill()
                w.process.wait()
        producer.close()
    elapsed = _clock.monotonic() - started

    # Every job succeeded, once: one succeeded event each, nothing in any other status.
    jobs = ledger.rows(
        "SELECT j.job_ref, r.status, "
        "(SELECT count(*) FROM {schema}.events e WHERE e.job_id = j.id AND e.code = 20) "
        "FROM {schema}.jobs j JOIN {schema}.runtime r ON r.job_id = j.id "
        "JOIN {schema}.definitions d ON d.id = j.definition_id WHERE d.name = :job",
        job=JOB,
    )
    assert len(jobs) == LANES * MEMBERS
    assert [ref for ref, status, wins in jobs if status != 100 or wins != 1] == []

    # The kill hit work: leases of the victim's incarnation were lost, some mid-execution.
    lost = ledger.rows(
        "SELECT e.job_ref, e.execution FROM {schema}.events e "
        "JOIN {schema}.workers w ON w.id = e.worker_id WHERE e.code = 30 AND w.pid = :pid",
        pid=victim.pid,
    )
    assert [ref for ref, execution in lost if execution is not None], (
        f"no executing job was lost by the killed process {victim.pid}: {lost}"
    )

    # The invariants, from the ledger alone: no rows means they hold.
    found = {
        name: run_check(ledger.conn, name, ledger.location.dialect, ledger.location.schema)
        for name in CHECKS
    }
    assert all(rows == [] for rows in found.values()), "\n".join(
        describe(name, rows) for name, rows in found.items()
    )

    starts = Counter(
        dict(
            ledger.rows(
                "SELECT w.pid, count(*) FROM {schema}.events e JOIN {schema}.workers w "
                "ON w.id = e.worker_id WHERE e.code = 10 GROUP BY w.pid"
            )
        )
    )
    events = dict(
        ledger.rows(
            "SELECT c.name, count(*) FROM {schema}.events e JOIN {schema}.codes c "
            "ON c.family = 'event' AND c.code = e.code GROUP BY c.name ORDER BY c.name"
        )
    )
    print(
        f"\n{ledger.location.dialect}: {len(jobs)} laned jobs over {LANES} lanes, "
        f"{ledger.processes} processes, {elapsed:.1f} s; killed pid {victim.pid} after "
        f"{done_at_kill} succeeded; it lost {len(lost)} lease(s), "
        f"{sum(1 for _, x in lost if x is not None)} mid-execution; starts per pid "
        f"{dict(starts)}; events {events}; checks {', '.join(found)}: no violations"
    )
