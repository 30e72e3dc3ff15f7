"""One certification run, from an empty ledger to a written record.

``certify(options)``: open a fresh ledger, enqueue every workload's share, start the lab-app
workers, inject the seeded faults while the jobs fall due, wait for the drain, stop the fleet
gracefully, then judge the ledger's rows (``anvil.certify.verdict``) and write the record
(``anvil.certify.record``). The loop waits on its children's output (select with a timeout)
and polls the ledger between reads; it never sleeps blindly.
"""

from __future__ import annotations

import random
import shutil
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.certify import faults as fault_plan
from anvil.certify.fleet import Fleet, clock
from anvil.certify.labapp import BREAK_FENCING, build
from anvil.certify.ledger import Ledger, drop, open_ledger
from anvil.certify.record import commit, write_record
from anvil.certify.tiers import Tier
from anvil.certify.verdict import judge
from anvil.certify.workloads import Enqueueing, Workload, all_workloads

REMAINING = (
    "SELECT count(*) FROM {schema}.expected x JOIN {schema}.jobs j ON j.job_ref = x.job_ref "
    "JOIN {schema}.runtime r ON r.job_id = j.id WHERE x.outcome <> 0 AND r.status < 100"
)
STATS = {
    "jobs": "SELECT count(*) FROM {schema}.expected WHERE outcome <> 0",
    "rolled_back": "SELECT count(*) FROM {schema}.expected WHERE outcome = 0",
    "executions": "SELECT count(*) FROM {schema}.events WHERE code = 10",
    "leases_lost": "SELECT count(*) FROM {schema}.events WHERE code = 30",
    "writes_fenced": "SELECT count(*) FROM {schema}.events WHERE code = 31",
    "handler_runs": "SELECT count(*) FROM {schema}.handler_runs",
    "worker_incarnations": "SELECT count(*) FROM {schema}.workers",
    "workers_declared_dead": "SELECT count(*) FROM {schema}.events WHERE code = 52",
    "retries": "SELECT count(*) FROM {schema}.events WHERE code = 12",
    # What the waits, the schedule and the outbox did: a check that holds over none of them
    # proves nothing, so the record says how many there were.
    "suspensions": "SELECT count(*) FROM {schema}.events WHERE code = 24",
    "signals": "SELECT count(*) FROM {schema}.events WHERE code = 25",
    "firings": "SELECT count(*) FROM {schema}.events WHERE code = 46",
    "outbox_delivered": "SELECT count(*) FROM {schema}.events WHERE code = 48",
}


@dataclass
class Options:
    """What to certify and where to put the record."""

    provider: str
    tier: Tier
    seed: int
    out: Path
    dsn: str | None = None
    schema: str | None = None  # PostgreSQL: use this migrated, empty schema (else make one)
    keep: bool = False  # keep the ledger (PostgreSQL schema, SQLite file) for inspection
    break_fencing: bool = False  # the deliberately broken worker (tests of the checker)
    workloads: list[Workload] = field(default_factory=all_workloads)
    progress: Callable[[str], None] | None = None  # told how the run goes, every 10 s


def shares(workloads: list[Workload], total: int) -> dict[str, int]:
    """Each workload's number of jobs: ``total`` split by weight (largest remainder), no
    workload over its ``most``; what the capped ones leave is split among the others."""
    counts: dict[str, int] = {}
    left, open_ = total, list(workloads)
    while open_:
        weight = sum(w.weight for w in open_)
        capped = [w for w in open_ if w.most is not None and left * w.weight / weight > w.most]
        if not capped:
            break
        for w in capped:
            counts[w.name] = w.most or 0
            left -= counts[w.name]
            open_.remove(w)
    weight = sum(w.weight for w in open_) or 1
    exact = {w.name: left * w.weight / weight for w in open_}
    floor = {name: int(value) for name, value in exact.items()}
    rest = sorted(exact, key=lambda n: exact[n] - floor[n], reverse=True)
    for name in rest[: left - sum(floor.values())]:
        floor[name] += 1
    counts.update(floor)
    return {w.name: counts[w.name] for w in workloads}


def certify(options: Options) -> tuple[dict[str, Any], Path]:
    """Run one certification; the record (as a dict) and the path of its JSON file."""
    tier = options.tier
    started_at = clock.now()
    stamp = started_at.strftime("%Y%m%dT%H%M%SZ")
    code = commit()  # what runs is what is checked out now, not at the end
    name = f"{stamp}-{options.provider}-tier{tier.name}-seed{options.seed}"
    work = options.out / name
    work.mkdir(parents=True, exist_ok=True)
    ledger = open_ledger(options.provider, work, options.dsn, options.schema)
    try:
        record = _run(options, ledger, name, started_at.isoformat())
        record["commit"] = code
        # A failed run keeps its ledger, so the offending rows can be read in full.
        keep = options.keep or (not record["passed"] and ledger.owned)
        if keep:
            where = ledger.schema if ledger.dialect == "postgres" else str(work)
            record["notes"].append(f"the ledger was kept for inspection: {where}")
        path = write_record(record, options.out, name)
    except BaseException:
        keep = options.keep
        raise
    finally:
        if not keep:
            _teardown(options.workloads, ledger)
            drop(ledger)
        ledger.close()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return record, path


def _run(options: Options, ledger: Ledger, name: str, started_at: str) -> dict[str, Any]:
    tier = options.tier
    seed = options.seed
    run_id = f"certify-{uuid.uuid4().hex[:8]}"
    env = {
        "CERTIFY_DIALECT": ledger.dialect,
        "ACTA_SCHEMA": ledger.schema,
        "CERTIFY_HEARTBEAT": str(tier.heartbeat),
        "CERTIFY_EXECUTORS": str(tier.executors),
        "CERTIFY_POLL": "0.05",
    }
    if options.break_fencing:
        env[BREAK_FENCING] = "1"
    # A workload that cannot run on this provider is skipped, and the record says why.
    workloads = [w for w in options.workloads if ledger.dialect in w.providers]
    skipped = [w for w in options.workloads if ledger.dialect not in w.providers]
    for w in workloads:
        w.setup(ledger.dialect, ledger.database, ledger.schema)
    producer = build(ledger.dialect, ledger.database, ledger.schema)
    counts = shares(workloads, tier.jobs)
    contexts = {
        w.name: Enqueueing(
            producer, ledger, counts[w.name], random.Random(f"{seed}-{w.name}"), tier.window
        )
        for w in workloads
    }
    planned = fault_plan.plan(
        seed,
        ledger.dialect,
        tier.window,
        tier.kill_every,
        tier.zombies,
        tier.restarts if ledger.dialect == "postgres" else 0,
        tier.backends_every,
        tier.locks,
    )
    fleet = Fleet(run_id, env, ledger.database, ledger.dialect)
    injector = fault_plan.Injector(fleet, ledger, planned, seed)
    notes: list[str] = [
        f"workload {w.name} skipped on {ledger.dialect}: {w.skipped_because}" for w in skipped
    ]
    drained = False
    done = threading.Event()
    try:
        # The fleet first: a worker takes seconds to start on a loaded machine, and the
        # jobs fall due over the window from their enqueue on.
        for _ in range(tier.workers):
            fleet.spawn()
        deadline = clock.monotonic() + 120
        while not all(w.registered() for w in fleet.workers):
            if clock.monotonic() > deadline or not all(w.alive for w in fleet.workers):
                raise RuntimeError(f"the workers did not start:\n{fleet.tail()}")
            fleet.pump(0.1)
        t0 = clock.monotonic()
        for workload in workloads:
            workload.enqueue(contexts[workload.name])
            fleet.pump(0)
        # The fault schedule counts from the end of the enqueue: faults planned for its
        # first seconds would otherwise all fire at once when it ends.
        start = clock.monotonic()
        enqueue_seconds = start - t0
        if options.progress is not None:
            options.progress(f"enqueued {tier.jobs} jobs in {enqueue_seconds:.1f} s")
        # The producer's own calls during the run (cancels) go on in a thread of their own:
        # one can wait many seconds on a locked SQLite file or a restarting server, and the
        # fault schedule must not wait with it.
        producer_thread = threading.Thread(
            target=_produce,
            args=(workloads, contexts, start, done, notes),
            name="certify-producer",
            daemon=True,
        )
        producer_thread.start()
        next_look = 0.0
        while True:
            elapsed = clock.monotonic() - start
            injector.tick(elapsed)
            _replace_exited(fleet, injector, elapsed)
            if elapsed >= next_look:
                next_look = elapsed + 1.0
                try:
                    remaining = ledger.value(REMAINING)
                    if options.progress is not None and int(elapsed) % 10 == 0:
                        options.progress(
                            f"{elapsed:.0f} s: {remaining} jobs not yet terminal, "
                            f"{len(injector.log)} faults so far"
                        )
                    if elapsed > 1.0 and remaining == 0:
                        drained = all(not c.state.get("pending") for c in contexts.values())
                        if drained:
                            break
                except Exception as error:  # the server is restarting; look again later
                    notes.append(f"{elapsed:.1f} s progress query: {error!r}"[:300])
            if elapsed > tier.window + tier.drain:
                notes.append(f"the jobs did not drain within {tier.window + tier.drain:g} s")
                break
            fleet.pump(0.05)
        run_seconds = clock.monotonic() - start
        done.set()
        producer_thread.join(timeout=120)
        unfired = injector.finish(clock.monotonic() - start)
        notes += fleet.shutdown(clock.monotonic() + 60)
        tail = fleet.tail()
    finally:
        done.set()
        fleet.reap()
        producer.close()
    verdict = judge(ledger, workloads)
    stats = {key: ledger.value(sql) for key, sql in STATS.items()}
    server = ledger.value("SHOW server_version") if ledger.dialect == "postgres" else None
    return {
        "name": name,
        "started_at": started_at,
        "provider": ledger.dialect,
        "tier": tier.as_dict(),
        "seed": seed,
        "broken_fencing": options.break_fencing,
        "workloads": [
            {"name": w.name, "summary": w.summary, "jobs": counts[w.name], "checks": list(w.checks)}
            for w in workloads
        ]
        + [
            {
                "name": w.name,
                "summary": w.summary,
                "jobs": 0,
                "checks": [],
                "skipped": f"not run on {ledger.dialect}: {w.skipped_because}",
            }
            for w in skipped
        ],
        "timings": {
            "enqueue_seconds": round(enqueue_seconds, 2),
            "run_seconds": round(run_seconds, 2),
            "drained": drained,
        },
        "fault_plan": [{"at": f.at, "kind": f.kind} for f in planned],
        "faults": injector.records(),
        "faults_not_fired": [{"at": f.at, "kind": f.kind} for f in unfired],
        "stats": stats,
        "notes": notes,
        "worker_output_tail": tail if not verdict["passed"] else "",
        "server_version": server,
        **verdict,
    }


def _teardown(workloads: list[Workload], ledger: Ledger) -> None:
    """Remove what the workloads made beside the ledger (their ``setup``)."""
    for w in workloads:
        if ledger.dialect in w.providers:
            w.teardown(ledger.dialect, ledger.database, ledger.schema)


def _produce(
    workloads: list[Workload],
    contexts: dict[str, Enqueueing],
    start: float,
    done: threading.Event,
    notes: list[str],
) -> None:
    """The producer's side of the run: each workload's ``during``, every 0.1 s, until done."""
    while not done.is_set():
        elapsed = clock.monotonic() - start
        for workload in workloads:
            try:
                workload.during(contexts[workload.name], elapsed)
            except Exception as error:  # a cancel refused while the server restarts
                notes.append(f"{elapsed:.1f} s {workload.name}: {error!r}"[:300])
        done.wait(0.1)  # a pace, not a deadline: what is due is sent on the next pass


def _replace_exited(fleet: Fleet, injector: fault_plan.Injector, elapsed: float) -> None:
    """A worker that exited without being killed is a finding: log it, start another."""
    killed = {r.target for r in injector.log if r.kind == "kill"}
    for worker in fleet.workers:
        if not worker.alive and worker.name not in killed and not worker.noted:
            worker.noted = True
            spare = fleet.spawn()
            injector._note(
                elapsed,
                "exit",
                worker.name,
                f"exited by itself with {worker.process.returncode}; {spare.name} started; "
                f"last output: {' | '.join(worker.lines[-3:])[:400]}",
            )
