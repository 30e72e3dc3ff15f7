"""A one-second schedule under SIGKILL: real worker processes, the slot's holder killed mid-firing.

On PostgreSQL three worker processes of a lab app (chaos/schedule_support.py) keep one job on a
``"1s"`` interval schedule (misfire ``skip``, the default) for 60 real seconds. About every
10 s the test waits until the slot is executing a firing and SIGKILLs the process that holds
it, alternately after the handler's effect (its witness row committed, the settle not yet
written) and before it, then starts a replacement; the other workers live on. Heartbeats are
short (0.2 s: a lease of 0.8 s, a dead worker after 1.4 s), so a victim's slot comes back
quickly. Then the live workers stop gracefully and the ledger is judged.

What the schedules guide promises, checked exactly:

- one ``fired`` event per instant, never two (the claim is the election), each succeeded;
- firings move forward on the one-second grid, and between two consecutive firings every
  instant is accounted for: the later firing's ``missed`` count is the number of whole
  seconds skipped (``skip`` fires the latest due instant and counts the older ones it drops,
  which happens while the killed holder's lease runs out);
- a firing interrupted by a kill is run again, the same firing (same instant), by another
  process: its handler ran exactly once in the execution that recorded it, and ran in an
  earlier execution only when a lease-lost event on the slot says that execution was taken
  back;
- the same, from SQL alone, by the checks kept in anvil/checks: ``schedule_fired_once``,
  ``schedule_no_gap`` and ``schedule_witness_once`` (they return violating rows; none).

A smaller SQLite run (two processes on one file, 20 s, a kill about every 5 s) does the same.
The test waits only on its children's output and on the ledger, with deadlines.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from anvil.checks import SCHEDULES, describe, run_check
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
from chaos.schedule_support import APP, EVERY_MS, HOLDER, Fired, firings, slot_ref

pytestmark = pytest.mark.chaos

SETTINGS = {"heartbeat": 0.2, "poll": 0.05, "executors": 2, "shutdown_grace": 5.0}


@dataclass(frozen=True)
class Plan:
    """How big a run is on one provider."""

    processes: int
    seconds: float  # real seconds the schedule runs under the killer
    kill_every: float  # a kill about this often (jittered by a fifth either way)
    kills: int  # at least this many must land


# The issue asks for 60 s on PostgreSQL with 3 workers; keep it so in CI.
PLANS = {"postgres": Plan(3, 60.0, 10.0, 5), "sqlite": Plan(2, 20.0, 5.0, 3)}
STARTUP = 60.0  # seconds for the first firing to appear (workers import acta, register)


# The run lasts a minute by design (the 60 s), more than the suite's usual per-test
# timeout leaves on a loaded machine once workers start and stop; its own waits have deadlines.
@pytest.mark.timeout(300)
@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_a_one_second_schedule_fires_each_instant_once_through_sigkills(
    request: pytest.FixtureRequest, tmp_path: Path, dialect: str
) -> None:
    plan = PLANS[dialect]
    with open_ledger(request, tmp_path, dialect) as ledger:
        witnesses.create(ledger.conn, dialect, ledger.schema)
        try:
            _run(ledger, plan, tmp_path)
        finally:
            witnesses.drop(ledger.conn, dialect, ledger.schema)


def _killer(
    ledger: Ledger, plan: Plan, ref: str, workers: list[Child], spawn: Any, rng: random.Random
) -> tuple[int, int, int]:
    """For ``plan.seconds``, about every ``plan.kill_every`` s, SIGKILL the process executing
    a firing of the slot and start a replacement. Kills alternate: the first, third, ... wait
    (up to 3 s) for the handler's effect (its witness row) to be committed, the others for the
    handler to be running without it yet. Returns (kills, kills that landed while the handler
    was executing, of which after its effect)."""
    end = clock.monotonic() + plan.seconds
    kills = mid_firing = after_effect = 0

    def next_kill() -> float:
        return clock.monotonic() + plan.kill_every * rng.uniform(0.8, 1.2)

    due = next_kill()
    while clock.monotonic() < end:
        if clock.monotonic() < due:
            pump(workers, 0.05)
            continue
        live = {w.pid: w for w in workers if w.process.poll() is None}
        want_effect = kills % 2 == 0
        # The slot is busy about a fifth of each second: wait (bounded) for the moment.
        give_up = clock.monotonic() + 3.0
        victim = None
        while victim is None and clock.monotonic() < give_up:
            for pid, status, effect in ledger.rows(HOLDER, ref=ref):
                if pid in live and status == 21 and bool(effect) == want_effect:
                    victim = live[pid]
            if victim is None:
                pump(workers, 0.005)
        if victim is not None:
            mid_firing += 1
            after_effect += want_effect
        else:  # never caught at that moment: kill whoever holds the slot, or anyone
            held = [live[pid] for pid, *_ in ledger.rows(HOLDER, ref=ref) if pid in live]
            victim = held[0] if held else rng.choice(sorted(live.values(), key=lambda w: w.pid))
        victim.kill()
        kills += 1
        workers.append(spawn(f"w{len(workers) + 1}"))
        due = next_kill()
    return kills, mid_firing, after_effect


def _run(ledger: Ledger, plan: Plan, tmp_path: Path) -> None:
    (tmp_path / "chaos_sched.py").write_text(APP)
    env = {
        "ACTA_DATABASE": ledger.database,
        "ACTA_SCHEMA": ledger.schema,
        "WITNESS_DIALECT": ledger.dialect,
        "WITNESS_INSERT": witnesses.prepare_insert(ledger.dialect, ledger.schema),
    }
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)

    def spawn(name: str) -> Child:
        return spawn_worker(name, tmp_path, "chaos_sched:app", env, **SETTINGS)

    workers = [spawn(f"w{i}") for i in range(1, plan.processes + 1)]
    try:
        wait_until(
            workers,
            "the first firing",
            lambda: firings(ledger),
            clock.monotonic() + STARTUP,
        )
        ref = slot_ref(ledger)
        assert ref is not None
        kills, mid_firing, after_effect = _killer(ledger, plan, ref, workers, spawn, rng)
        live = [w for w in workers if w.process.poll() is None]
        # A replacement still starting has no SIGTERM handler yet: let it register first.
        wait_until(
            workers,
            "the live workers registered",
            lambda: all(registered(w) for w in live),
            clock.monotonic() + 30,
        )
        for worker in live:  # a graceful stop: a firing in progress finishes first
            assert worker.terminate() == 0, tail([worker])
    finally:
        reap(workers)

    fired = firings(ledger)
    _judge(ledger, plan, ref, fired, seed)
    lost_at = [
        event_id
        for (event_id,) in ledger.rows(
            "SELECT e.id FROM {schema}.events e JOIN {schema}.jobs j ON j.id = e.job_id "
            "WHERE j.job_ref = :ref AND e.code = 30",
            ref=ref,
        )
    ]
    lost = len(lost_at)
    assert kills >= plan.kills, f"only {kills} kills (seed {seed})"
    assert mid_firing > 0, f"no kill landed inside a firing (seed {seed})"
    assert after_effect >= 2, f"fewer than two kills after a handler's effect (seed {seed})"
    assert lost > 0, f"no kill took the slot's lease from its holder (seed {seed})"
    witnessed = witnesses.rows(ledger.conn, ledger.dialect, ledger.schema)
    reruns = len(witnessed) - len({(r[1]) for r in witnessed})
    # A kill after the effect and before the settle makes the next run repeat the firing's
    # handler (the guide's at-least-once); a settle may still win the race against a kill.
    assert reruns >= 1, f"no firing's handler ran again after a kill (seed {seed})"
    dropped = sum(f.missed for f in fired[1:])
    # Why instants were dropped (for the reader; lateness breaks no promise): a kill's
    # recovery re-runs the pending firing, then the next firing is late. So count the missed
    # instants of firings with a lost lease of the slot since the firing before the last.
    after_loss = sum(
        fired[i].missed
        for i in range(2, len(fired))
        if any(fired[i - 2].event_id < lost_id < fired[i].event_id for lost_id in lost_at)
    )
    span = (fired[-1].at - fired[0].at).total_seconds()
    print(
        f"\n{ledger.dialect}: {plan.processes} processes, {len(workers)} in all, seed {seed}; "
        f"{len(fired)} firings over {span:.0f} s of instants, {dropped} instants dropped by "
        f"skip (in the missed counts), {after_loss} of them just after a lost lease; {kills} "
        f"kills ({mid_firing} inside a firing, {after_effect} after its effect), {lost} "
        f"slot leases lost, {reruns} handler re-runs after a lost lease; checks "
        f"{', '.join(SCHEDULES)}: no violations"
    )


def _judge(ledger: Ledger, plan: Plan, ref: str, fired: list[Fired], seed: int) -> None:
    """The guide's promises, from the ledger: see the module docstring."""
    every = timedelta(milliseconds=EVERY_MS)
    note = f"(seed {seed})"
    assert [
        f for f in fired if (f.outcome, f.triggered, f.schedules) != ("succeeded", False, "default")
    ] == [], note
    twice = [at for at, n in Counter(f.at for f in fired).items() if n > 1]
    assert twice == [], f"instants fired twice: {twice} {note}"
    off_grid = [f.at for f in fired if f.at.microsecond or f.at.timestamp() % 1]
    assert off_grid == [], note
    # Consecutive firings: forward, and the later one's missed count covers the gap exactly.
    for before, after in pairwise(fired):
        gap = (after.at - before.at) / every
        assert gap == after.missed + 1, (before, after, note)
    span = (fired[-1].at - fired[0].at) / every
    assert span == sum(f.missed + 1 for f in fired[1:]), note
    assert span >= plan.seconds - 2, f"the schedule fired over {span} s only {note}"

    # The handler ran once in the execution that recorded each firing; an earlier run of the
    # same firing only in an execution that lost its lease (its holder was killed).
    lost = {
        execution
        for (execution,) in ledger.rows(
            "SELECT e.execution FROM {schema}.events e JOIN {schema}.jobs j ON j.id = e.job_id "
            "WHERE j.job_ref = :ref AND e.code = 30",
            ref=ref,
        )
    }
    runs = Counter(
        (step, execution)
        for job_ref, step, execution, _, _ in witnesses.rows(
            ledger.conn, ledger.dialect, ledger.schema
        )
        if job_ref == ref
    )
    recorded = {(f.at.isoformat(), f.execution) for f in fired}
    assert [k for k in recorded if runs[k] != 1] == [], note
    unexplained = [k for k in runs if k not in recorded and k[1] not in lost]
    assert unexplained == [], f"handler runs no lease loss explains: {unexplained} {note}"

    found = {
        name: run_check(ledger.conn, name, ledger.dialect, ledger.schema) for name in SCHEDULES
    }
    assert all(rows == [] for rows in found.values()), (
        "\n".join(describe(name, rows) for name, rows in found.items()) + f"\n{note}"
    )
