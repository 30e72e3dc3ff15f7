"""Fan-out with real worker processes: a parent spawns 1,000 children and waits for them.

On PostgreSQL two worker processes serve one parent job. Its handler spawns 1,000 children
with ``ctx.spawn_many`` and waits with ``ctx.wait_children()``; each child returns the square
of its input. The parent must be parked while they run (status suspended, no lease: no worker
holds it or an executor for it), be released by the last child's terminal transition, and
resume exactly once: two executions in all (one that spawned and suspended, one that resumed
and found the children it had already spawned), the code after the wait running once, with
all 1,000 results in spawn order.

The test reads the parent's row in jobs_view while the children run (one sample per pass of
its wait loop, between reads of the workers' output) and, at the end, the ledger's events:
the parent's first execution finished as suspended, and its next execution started only after
the last child's terminal event (event ids order the ledger exactly). It prints how long the
spawn, the drain of the children and the whole run took. It waits only on its children's
output and on the ledger, with deadlines.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from chaos.durable_support import Ledger, clock, open_ledger, reap, registered, tail, wait_until
from chaos.process import Child, spawn_worker

pytestmark = pytest.mark.chaos

CHILDREN = 1000
PROCESSES = 2
# No kills here: a lease of 8 s keeps a busy shared machine from taking leases by accident.
SETTINGS = {"heartbeat": 2.0, "poll": 0.05, "executors": 8, "shutdown_grace": 5.0}
DEADLINE = 150.0  # seconds for the whole run; it should take well under a minute

APP = textwrap.dedent(
    """
    import os, time
    from acta import Acta, SyncJobContext

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])

    @app.job("chaos.child", input=int, result=int, timeout="60s")
    def child(n: int) -> int:
        return n * n

    @app.job("chaos.parent", input=int, timeout="120s")
    def parent(count: int, ctx: SyncJobContext) -> dict:
        print(f"PARENT {ctx.execution} {os.getpid()}", flush=True)
        began = time.perf_counter()
        refs = ctx.spawn_many("chaos.child", list(range(count)), group="g")
        spent = time.perf_counter() - began
        print(f"SPAWNED {ctx.execution} {len(refs)} {spent:.3f}", flush=True)
        began = time.perf_counter()
        outcomes = ctx.wait_children()
        # Below the wait: this must run once, in the execution the last child released.
        spent = time.perf_counter() - began
        print(f"RESUMED {ctx.execution} {os.getpid()} {spent:.3f}", flush=True)
        return {
            "results": [o.result for o in outcomes],
            "names": [o.name for o in outcomes] == [f"g-{i}" for i in range(count)],
            "refs": [str(o.ref) for o in outcomes] == [str(r) for r in refs],
            "statuses": sorted({o.status for o in outcomes}),
            "timed_out": sum(1 for o in outcomes if o.timed_out),
        }
    """
)

# The parent's row as an operator sees it, with the lease owner's id from runtime itself.
PARENT = (
    "SELECT v.status, r.lease_owner, v.open_children, v.waiting_for, v.executions, "
    "(SELECT count(*) FROM {schema}.runtime c JOIN {schema}.jobs cj ON cj.id = c.job_id "
    " WHERE cj.parent_id = v.job_id AND c.status >= 100) AS finished_children "
    "FROM {schema}.jobs_view v JOIN {schema}.runtime r ON r.job_id = v.job_id "
    "WHERE v.job_ref = :ref"
)


def _events(ledger: Ledger, ref: str) -> list[tuple[Any, ...]]:
    """The parent's events: (id, name, execution, outcome name)."""
    return ledger.rows(
        "SELECT e.id, c.name, e.execution, o.name FROM {schema}.events e "
        "JOIN {schema}.codes c ON c.family = 'event' AND c.code = e.code "
        "LEFT JOIN {schema}.codes o ON o.family = 'outcome' AND o.code = e.outcome "
        "WHERE e.job_ref = :ref ORDER BY e.id",
        ref=ref,
    )


@pytest.mark.parametrize("dialect", ["postgres"])
def test_a_parent_waits_for_a_thousand_children_without_a_lease(
    request: pytest.FixtureRequest, tmp_path: Path, dialect: str
) -> None:
    with open_ledger(request, tmp_path, dialect) as ledger:
        _run(ledger, tmp_path)


def _run(ledger: Ledger, tmp_path: Path) -> None:
    (tmp_path / "chaos_app.py").write_text(APP)
    env = {"ACTA_DATABASE": ledger.database, "ACTA_SCHEMA": ledger.schema}
    producer = Acta(ledger.database, schema=ledger.schema)
    producer.define("chaos.parent", input=int)
    workers: list[Child] = [
        spawn_worker(f"w{i}", tmp_path, "chaos_app:app", env, **SETTINGS)
        for i in range(1, PROCESSES + 1)
    ]
    samples: list[tuple[float, tuple[Any, ...]]] = []
    try:
        deadline = clock.monotonic() + DEADLINE
        wait_until(
            workers, "the workers registered", lambda: all(map(registered, workers)), deadline
        )
        started = clock.monotonic()
        ref = str(producer.enqueue("chaos.parent", CHILDREN))

        def parent_done() -> bool:
            [row] = ledger.rows(PARENT, ref=ref)
            samples.append((clock.monotonic() - started, row))
            return bool(row[0] == "succeeded")

        wait_until(
            workers,
            "the parent to succeed",
            parent_done,
            deadline,
            every=0.1,
            diagnose=lambda: f"last samples: {samples[-3:]}",
        )
        elapsed = clock.monotonic() - started
        for worker in workers:
            assert worker.terminate() == 0, tail([worker])
    finally:
        reap(workers)

    result = producer.result(ref)
    producer.close()
    assert result["results"] == [n * n for n in range(CHILDREN)]
    assert (result["names"], result["refs"]) == (True, True)
    assert (result["statuses"], result["timed_out"]) == (["succeeded"], 0)

    # Two executions: the one that spawned and suspended, the one that resumed. The code below
    # the wait ran once; the spawn ran twice, the second finding the children already there.
    lines = [line for w in workers for line in w.lines]
    assert sorted(line.split()[1] for line in lines if line.startswith("PARENT ")) == ["1", "2"]
    spawned = sorted(line.split()[1:] for line in lines if line.startswith("SPAWNED "))
    assert [(x, n) for x, n, _ in spawned] == [("1", str(CHILDREN)), ("2", str(CHILDREN))]
    resumed = [line.split()[1:] for line in lines if line.startswith("RESUMED ")]
    assert [x for x, _, _ in resumed] == ["2"]
    assert (
        ledger.value(
            "SELECT r.executions FROM {schema}.runtime r JOIN {schema}.jobs j ON j.id = r.job_id "
            "WHERE j.job_ref = :ref",
            ref=ref,
        )
        == 2
    )
    children = ledger.rows(
        "SELECT c.status, c.executions FROM {schema}.runtime c "
        "JOIN {schema}.jobs j ON j.id = c.job_id "
        "WHERE j.parent_id = (SELECT id FROM {schema}.jobs WHERE job_ref = :ref)",
        ref=ref,
    )
    assert Counter(status for status, _ in children) == {100: CHILDREN}
    # A child may run twice if a starved machine let its lease lapse: allowed, and reported.
    again = sum(1 for _, executions in children if executions > 1)

    # From the ledger: suspended by execution 1, restarted only after the last child ended.
    events = _events(ledger, ref)
    names = [(name, execution, outcome) for _, name, execution, outcome in events]
    assert ("execution-finished", 1, "suspended") in names, names
    started_ids = [i for i, name, _, _ in events if name == "execution-started"]
    finished_1 = next(i for i, name, x, _ in events if name == "execution-finished" and x == 1)
    assert len(started_ids) == 2 and started_ids[0] < finished_1 < started_ids[1], names
    last_child_end = ledger.value(
        "SELECT max(e.id) FROM {schema}.events e JOIN {schema}.jobs j ON j.id = e.job_id "
        "WHERE e.code IN (20, 21, 22) "
        "AND j.parent_id = (SELECT id FROM {schema}.jobs WHERE job_ref = :ref)",
        ref=ref,
    )
    assert started_ids[1] > last_child_end > finished_1, (started_ids, last_child_end)

    # While the children ran, the parent sat suspended with no lease, waiting for them.
    # Samples from the first suspended one up to the last with an open child must all be so.
    first = next(n for n, (_, row) in enumerate(samples) if row[0] == "suspended")
    last = max(n for n, (_, row) in enumerate(samples) if row[2] > 0)
    waiting = [row for _, row in samples[first : last + 1]]
    bad = [r for r in waiting if (r[0], r[1], r[3]) != ("suspended", None, "children:children-1")]
    assert bad == [], bad[:5]
    progress = sorted({row[5] for row in waiting})
    assert len(waiting) >= 5 and progress[-1] - progress[0] >= CHILDREN // 2, (
        f"too few samples while the children ran: {len(waiting)}, finished counts {progress}"
    )
    # Durations from the ledger's instants (transaction starts: close enough for a report).
    at = dict(
        ledger.rows(
            "SELECT c.name || '-' || COALESCE(e.execution, 0), e.at FROM {schema}.events e "
            "JOIN {schema}.codes c ON c.family = 'event' AND c.code = e.code "
            "WHERE e.job_ref = :ref",
            ref=ref,
        )
    )
    first_run = (at["execution-finished-1"] - at["execution-started-1"]).total_seconds()
    drain = (at["released-0"] - at["children-spawned-1"]).total_seconds()
    wake = (at["execution-started-2"] - at["released-0"]).total_seconds()
    second_run = (at["execution-finished-2"] - at["execution-started-2"]).total_seconds()
    print(
        f"\npostgres fan-out: {CHILDREN} children, {PROCESSES} processes x "
        f"{SETTINGS['executors']} executors, parent succeeded {elapsed:.1f} s after enqueue: "
        f"execution 1 {first_run:.2f} s (spawn_many {spawned[0][2]} s), children spawned to "
        f"last one done {drain:.2f} s ({CHILDREN / drain:.0f}/s), release to resume {wake:.2f} "
        f"s, execution 2 {second_run:.2f} s (spawn_many again {spawned[1][2]} s, "
        f"wait_children {resumed[0][2]} s); {again} children ran more than once; "
        f"{len(waiting)} samples while waiting, all suspended without a lease"
    )
