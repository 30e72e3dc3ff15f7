"""The non-interactive lab: enqueue N, kill a worker every K seconds, wait for the drain, record.

``run(lab, plan)`` starts ``plan.workers`` worker processes, enqueues ``plan.jobs`` jobs in
batches while they already drain, and every ``plan.kill_every`` seconds SIGKILLs a random
worker and starts a replacement, so the fleet keeps its size and every kill leaves leases for
recovery to take back. Once no lab job is unfinished it waits for recovery to declare every
killed worker dead (``worker-died``), stops the fleet gracefully and judges the run from the
ledger alone:

- ``lost``: lab jobs that did not succeed (the count of jobs not in ``succeeded``), plus any
  job the producer wrote that is missing from the ledger;
- ``stuck_leased``: runtime rows still holding a lease after every worker stopped;
- ``recoveries``: ``lease-lost`` events (jobs taken back from a dead worker), and
  ``workers_declared_dead``: ``worker-died`` events, which should match the kills.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from acta.clock import SystemClock
from acta.model.codes import EventCode, JobStatus
from anvil.lab.control import Lab
from anvil.lab.fleet import Worker
from anvil.lab.memory import Memory
from anvil.lab.observe import Snapshot

clock = SystemClock()
# What an unreachable ledger raises (a restarted server): the run waits and asks again.
UNREACHABLE = (psycopg.OperationalError, sqlite3.OperationalError)
RETRY_KILL = 0.5  # seconds before looking again for a worker worth killing


@dataclass(frozen=True)
class Plan:
    """One non-interactive run."""

    jobs: int
    workers: int = 3
    kill_every: float = 10.0  # seconds between kills; 0 for none
    max_kills: int = 0  # stop killing after this many; 0 for no limit
    timeout: float = 3600.0  # give up on the drain after this long
    refresh: float = 2.0  # seconds between progress lines
    seed: int | None = None


def run(lab: Lab, plan: Plan, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Carry out ``plan`` on ``lab`` and return the record (see the module docstring)."""
    rng = random.Random(plan.seed)
    lab.start_workers(plan.workers)
    started = clock.monotonic()
    lab.enqueue(plan.jobs)
    next_kill = started + plan.kill_every if plan.kill_every > 0 else float("inf")
    next_line = started
    enqueued_at: float | None = None
    snap: Snapshot | None = None
    drained_in_time = True
    memory = Memory()
    while True:
        now = clock.monotonic()
        if enqueued_at is None and lab.enqueue_done():
            lab.wait_enqueued()
            enqueued_at = now
            say(f"enqueued {plan.jobs:,} jobs in {enqueued_at - started:.1f} s")
        if now >= next_line:
            try:
                if (upkeep := lab.maintain()) is not None:
                    say(upkeep)
                snap = lab.snapshot()
            except UNREACHABLE as exc:
                say(f"{now - started:7.1f}s the ledger does not answer ({exc}); trying again")
                next_line = now + plan.refresh
                _wait(lab, plan.refresh)
                continue
            say(_line(lab, snap, now - started))
            memory.sample([(w.number, w.pid) for w in lab.fleet.live()], now - started)
            next_line = now + plan.refresh
            if enqueued_at is not None and snap.backlog == 0 and snap.jobs >= plan.jobs:
                break
        limited = plan.max_kills > 0 and lab.fleet.kills >= plan.max_kills
        if now >= next_kill and not limited and (enqueued_at is None or _unfinished_now(lab)):
            try:
                ready = _victims(lab)
            except UNREACHABLE:
                ready = []
            victim = lab.fleet.kill(rng.choice(ready).pid) if ready else None
            if victim is not None:
                say(
                    f"killed worker process {victim.number} (pid {victim.pid}); "
                    "starting a replacement"
                )
                # Not waiting for it to register: the loop goes on watching meanwhile.
                replacement = lab.fleet.spawn()
                lab.note(f"started worker process {replacement.number} (pid {replacement.pid})")
                next_kill = now + plan.kill_every
            else:  # nobody holds work yet: look again shortly
                next_kill = now + min(plan.kill_every, RETRY_KILL)
        if now - started > plan.timeout:
            say(f"not drained after {plan.timeout:g} s: stopping and recording what happened")
            drained_in_time = False
            break
        _wait(lab, min(next_line, next_kill) - clock.monotonic())
    drained = clock.monotonic() - started
    seen = _await_deaths(lab, lab.fleet.kills, timeout=lab.options.heartbeat * 20 + 10)
    lab.fleet.stop()
    enqueue_s = (enqueued_at - started) if enqueued_at is not None else drained
    record = _record(lab, plan, drained, enqueue_s, seen, drained_in_time)
    record["memory"] = {"workers": memory.summary(), "series": memory.samples}
    return record


def _wait(lab: Lab, seconds: float) -> None:
    """Let time pass by waiting on a worker process (returns early if it exits), not sleeping."""
    live = lab.fleet.live()
    if seconds <= 0 or not live:
        return
    try:
        live[0].process.wait(timeout=seconds)
    except Exception:  # TimeoutExpired: the usual case
        return


def _line(lab: Lab, snap: Snapshot, elapsed: float) -> str:
    p = lab.progress
    alive = sum(1 for w in snap.workers if w.status == "active")
    return (
        f"{elapsed:7.1f}s enqueued {p.written:>9,}/{p.asked:,}  backlog {snap.backlog:>9,}  "
        f"done {snap.succeeded:>9,}  {snap.jobs_per_s:>7,.0f} jobs/s  "
        f"executing {snap.executing:>4}  "
        f"workers {alive}  kills {lab.fleet.kills} (dead in ledger {snap.workers_died})  "
        f"recovered {snap.leases_lost}"
    )


def _await_deaths(lab: Lab, kills: int, timeout: float) -> int:
    """Wait (bounded) until the ledger has declared as many workers dead as the lab killed;
    returns how many it has. Recovery does this after seven silent heartbeats."""
    deadline = clock.monotonic() + timeout
    while True:
        died = lab.observer.deaths()
        if died >= kills or clock.monotonic() > deadline:
            return died
        _wait(lab, lab.options.heartbeat)


def _victims(lab: Lab) -> list[Worker]:
    """The live workers worth killing: registered ones holding leases, so that each kill
    leaves work for recovery to take back. One still starting, or idle, would test nothing."""
    rows = lab.observer.sql(
        "SELECT w.pid, EXISTS (SELECT 1 FROM {runtime} r WHERE r.lease_owner = w.id) "
        "FROM {workers} w WHERE w.status = 1"
    )
    holding = {int(pid) for pid, leases in rows if leases}
    return [w for w in lab.fleet.live() if w.pid in holding]


def _unfinished_now(lab: Lab) -> bool:
    try:
        return _unfinished(lab)
    except UNREACHABLE:
        return False


def _unfinished(lab: Lab) -> bool:
    """Whether some lab job is not finished yet (a kill after the drain would prove nothing)."""
    ids = lab.observer.ids()
    if ids is None:
        return True
    found = lab.observer.sql(
        "SELECT 1 FROM {runtime} WHERE definition_id = ? AND status < ? LIMIT 1",
        (ids[1], int(JobStatus.SUCCEEDED)),
    )
    return bool(found)


def _count_events(lab: Lab, code: EventCode) -> int:
    return int(lab.observer.sql("SELECT count(*) FROM {events} WHERE code = ?", (int(code),))[0][0])


def checks(lab: Lab, jobs: int) -> dict[str, int]:
    """The ledger's verdict on the lab jobs, after the fleet stopped.

    ``lost`` counts jobs that did not succeed. After a timeout that count includes jobs simply
    not reached yet, so three more say what a loss would look like then: a written job missing
    from the ledger (``missing``), a job that ended any other way (``failed_or_cancelled``), and
    an unfinished job that is not plainly ``ready`` for the next claim (``unfinished_not_ready``).
    """
    ids = lab.observer.ids()
    definition = ids[1] if ids else -1
    by = lab.observer.counts()
    [(executions, again)] = lab.observer.sql(
        "SELECT coalesce(sum(executions), 0), "
        "coalesce(sum(CASE WHEN executions > 1 THEN 1 ELSE 0 END), 0) "
        "FROM {runtime} WHERE definition_id = ?",
        (definition,),
    )
    [(leased,)] = lab.observer.sql(
        "SELECT count(*) FROM {runtime} WHERE lease_owner IS NOT NULL OR status IN (?, ?)",
        (int(JobStatus.DISPATCHED), int(JobStatus.EXECUTING)),
    )
    total = sum(by.values())
    succeeded = by[JobStatus.SUCCEEDED]
    ended_otherwise = by[JobStatus.FAILED] + by[JobStatus.CANCELLED]
    return {
        "jobs_written": lab.progress.written,
        "jobs_in_ledger": total,
        "succeeded": succeeded,
        "lost": jobs - succeeded,
        "missing": lab.progress.written - total,
        "failed_or_cancelled": ended_otherwise,
        "unfinished_ready": by[JobStatus.READY],
        "unfinished_not_ready": total - succeeded - ended_otherwise - by[JobStatus.READY],
        "stuck_leased": int(leased),
        "executions": int(executions),
        "jobs_run_more_than_once": int(again),
    }


def _record(
    lab: Lab, plan: Plan, drained: float, enqueued: float, seen: int, in_time: bool
) -> dict[str, Any]:
    verdict = checks(lab, plan.jobs)
    recoveries = _count_events(lab, EventCode.LEASE_LOST)
    record: dict[str, Any] = {
        "provider": lab.options.provider,
        "plan": asdict(plan),
        "executors_per_worker": lab.options.executors,
        "profile": lab.options.profile,
        "heartbeat_s": lab.options.heartbeat,
        "jobs": plan.jobs,
        "drained": in_time,
        "duration_s": round(drained, 1),
        "enqueue_s": round(enqueued, 1),
        # Succeeded jobs over the run's duration: for a run stopped by its timeout too.
        "rate_jobs_per_s": round(verdict["succeeded"] / drained, 1) if drained > 0 else 0.0,
        "kills": lab.fleet.kills,
        "vacuum_analyze_runs": lab.upkeeps,
        "workers_declared_dead": seen,
        "recoveries": recoveries,
        **verdict,
    }
    # Nothing lost so far: holds for a run stopped by its timeout as well as a drained one.
    record["none_lost_so_far"] = (
        verdict["missing"] == 0
        and verdict["failed_or_cancelled"] == 0
        and verdict["unfinished_not_ready"] == 0
        and verdict["stuck_leased"] == 0
    )
    record["ok"] = (
        in_time
        and record["none_lost_so_far"]
        and verdict["lost"] == 0
        and verdict["jobs_in_ledger"] == plan.jobs
        and seen >= lab.fleet.kills
    )
    return record
