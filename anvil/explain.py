"""EXPLAIN ANALYZE of acta's PostgreSQL statements as the runtime really issues them.

``python -m anvil.explain [--dsn ...] [--executors 16] [--jobs 20000]`` runs, on a fresh schema,
single enqueues, batch enqueues of 1,000 and then an in-process worker draining a backlog. A
hook on the provider times every statement and commit round trip from the client, and runs a
few occurrences of each fused statement once more under ``EXPLAIN (ANALYZE, BUFFERS)`` inside
a savepoint that is rolled back (or a transaction of its own, for a statement that runs as its
own transaction), with the real parameters and data, just before it runs for real. It prints
a markdown report: round trips per phase, planning and execution time per statement and batch
size, and one full plan of each.

It patches the provider class for the duration of the run: a lab tool, not for production.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from acta.model.codes import JobStatus
from acta.provider.postgres.link import AsyncLink, SyncLink
from acta.provider.verb import Op
from anvil.bench_app import NOOP
from anvil.workload import Ledger, Target, clock, fresh_ledger

EXPLAIN = "EXPLAIN (ANALYZE, BUFFERS) "
_TIME = re.compile(r"^(Planning|Execution) Time: ([\d.]+) ms", re.M)
_BUFFERS = re.compile(r"Buffers: shared hit=(\d+)")
_TRIGGER = re.compile(r"^Trigger for constraint (\S+).*time=([\d.]+) calls=(\d+)", re.M)


def batch_size(op: Op) -> int:
    params = op.params if isinstance(op.params, dict) else {}
    for key in ("job_refs", "job_ids"):
        if key in params:
            return len(params[key])
    return int(params.get("limit", 1))


@dataclass
class Probe:
    """What the hook saw: round trips by (phase, statement), plans by (statement, batch)."""

    skip: int = 3
    samples: int = 5
    phase: str = ""
    trips: dict[tuple[str, str], list[tuple[float, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    seen: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))
    plans: dict[tuple[str, int], list[str]] = field(default_factory=lambda: defaultdict(list))
    prepared: dict[tuple[str, int], list[tuple[float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    count: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    timeline: dict[str, list[tuple[int, int, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _early: bool = False
    _late: bool = False

    def wants_plan(self, op: Op) -> bool:
        """The first few occurrences of each (statement, batch size) after ``skip``, and the
        statement's occurrences numbered by a power of two, to see the cost change over time."""
        if not op.statement.startswith("fused_"):
            return False
        key = (op.statement, batch_size(op))
        self.seen[key] += 1
        self.count[op.statement] += 1
        n = self.count[op.statement]
        self._early = self.skip < self.seen[key] <= self.skip + self.samples
        self._late = n >= 8 and n & (n - 1) == 0
        return self._early or self._late

    def keep(self, op: Op, rows: list[dict[str, Any]]) -> None:
        plan = "\n".join(r["QUERY PLAN"] for r in rows)
        if self._early:
            self.plans[(op.statement, batch_size(op))].append(plan)
        if self._late:
            self.timeline[op.statement].append((self.count[op.statement], batch_size(op), plan))

    def compared(self, op: Op, unprepared: float, prepared: float) -> None:
        self.prepared[(op.statement, batch_size(op))].append((unprepared, prepared))

    def trip(self, name: str, seconds: float, size: int) -> None:
        self.trips[(self.phase, name)].append((seconds, size))


def _undoable(autocommit: bool) -> tuple[str, str]:
    """How to run a probe so that it leaves nothing behind: in the verb's transaction, inside
    a savepoint; on a connection in autocommit (a statement that runs as its own transaction),
    inside a transaction of its own."""
    if autocommit:
        return "BEGIN", "ROLLBACK"
    return "SAVEPOINT anvil_explain", "ROLLBACK TO SAVEPOINT anvil_explain"


def _split(timed: list[tuple[bool, float]]) -> tuple[float, float]:
    """Median unprepared and prepared round trips; the first prepared one (which sends the
    PREPARE) is left out."""
    unprepared = [t for prepared, t in timed if not prepared]
    prepared = [t for prepared, t in timed if prepared][1:]
    return statistics.median(unprepared), statistics.median(prepared)


@contextlib.contextmanager
def hooked(probe: Probe) -> Iterator[None]:
    """Patch the provider's links (and psycopg's commit) to feed ``probe``."""
    run_sync, run_async = SyncLink.execute, AsyncLink.execute
    commit_sync, commit_async = psycopg.Connection.commit, psycopg.AsyncConnection.commit

    async def execute(self: SyncLink, op: Op, sql: str) -> Any:
        cur = self.cur
        if probe.wants_plan(op):
            before, after = _undoable(cur.connection.autocommit)
            cur.execute(before)
            cur.execute(EXPLAIN + sql, op.params, prepare=False)
            probe.keep(op, cur.fetchall())
            cur.execute(after)
            timed = []
            for prepare in (False, True, True, False, True, False):
                cur.execute(before)
                begun = clock.monotonic()
                cur.execute(sql, op.params, prepare=prepare)
                timed.append((prepare, clock.monotonic() - begun))
                cur.execute(after)
            probe.compared(op, *_split(timed))
        begun = clock.monotonic()
        result = await run_sync(self, op, sql)
        probe.trip(op.statement, clock.monotonic() - begun, batch_size(op))
        return result

    async def aexecute(self: AsyncLink, op: Op, sql: str) -> Any:
        cur = self.cur
        if probe.wants_plan(op):
            before, after = _undoable(cur.connection.autocommit)
            await cur.execute(before)
            await cur.execute(EXPLAIN + sql, op.params, prepare=False)
            probe.keep(op, await cur.fetchall())
            await cur.execute(after)
            timed = []
            for prepare in (False, True, True, False, True, False):
                await cur.execute(before)
                begun = clock.monotonic()
                await cur.execute(sql, op.params, prepare=prepare)
                timed.append((prepare, clock.monotonic() - begun))
                await cur.execute(after)
            probe.compared(op, *_split(timed))
        begun = clock.monotonic()
        result = await run_async(self, op, sql)
        probe.trip(op.statement, clock.monotonic() - begun, batch_size(op))
        return result

    def commit(self: Any) -> None:
        begun = clock.monotonic()
        commit_sync(self)
        probe.trip("COMMIT", clock.monotonic() - begun, 1)

    async def acommit(self: Any) -> None:
        begun = clock.monotonic()
        await commit_async(self)
        probe.trip("COMMIT", clock.monotonic() - begun, 1)

    SyncLink.execute = execute  # type: ignore[method-assign]
    AsyncLink.execute = aexecute  # type: ignore[method-assign]
    psycopg.Connection.commit = commit  # type: ignore[method-assign]
    psycopg.AsyncConnection.commit = acommit  # type: ignore[method-assign]
    try:
        yield
    finally:
        SyncLink.execute = run_sync  # type: ignore[method-assign]
        AsyncLink.execute = run_async  # type: ignore[method-assign]
        psycopg.Connection.commit = commit_sync  # type: ignore[method-assign]
        psycopg.AsyncConnection.commit = commit_async  # type: ignore[method-assign]


async def _drain(ledger: Ledger, executors: int) -> float:
    app = ledger.app()
    worker = app.worker(executors=executors, poll=0.02)
    stopping = asyncio.Event()
    begun = clock.monotonic()
    serving = asyncio.create_task(worker.serve(stopping))
    left = (
        "SELECT count(*) FROM {runtime} r JOIN {definitions} d ON d.id = r.definition_id "
        f"WHERE d.name = '{NOOP}' AND r.status < {int(JobStatus.SUCCEEDED)}"
    )
    try:
        while ledger.sql(left)[0][0] > 0:
            await clock.sleep_until(clock.now() + timedelta(milliseconds=50))
    finally:
        stopping.set()
        await serving
        await app.provider.aclose()
        app.close()
    return clock.monotonic() - begun


def workload(ledger: Ledger, probe: Probe, *, singles: int, jobs: int, executors: int) -> Any:
    """Single enqueues, batch enqueues, then a drain of everything; returns drain seconds."""
    app = ledger.app()
    try:
        probe.phase = "single enqueue"
        for i in range(singles):
            app.enqueue(NOOP, i)
        probe.phase = "batch enqueue (1,000)"
        for first in range(0, jobs, 1000):
            app.enqueue_batch([app.request(NOOP, i) for i in range(first, first + 1000)])
    finally:
        app.close()
    probe.phase = f"drain ({executors} executors)"
    return asyncio.run(_drain(ledger, executors))


def render(probe: Probe, counts: dict[str, int]) -> str:
    out = ["## Round trips seen by the client", ""]
    out += ["| phase | statement | calls | mean batch | mean ms | total s | µs per job |"]
    out += ["| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (phase, name), trips in probe.trips.items():
        total = sum(s for s, _ in trips)
        size = sum(n for _, n in trips) / len(trips)
        per_job = total / counts[phase] * 1e6 if counts.get(phase) else 0.0
        out.append(
            f"| {phase} | {name} | {len(trips):,} | {size:.1f} | {total / len(trips) * 1e3:.3f} "
            f"| {total:.2f} | {per_job:.0f} |"
        )
    out += ["", "## EXPLAIN ANALYZE (median of the sampled occurrences)", ""]
    out += ["| statement | batch | samples | planning ms | execution ms | FK triggers ms |"]
    out += ["| --- | ---: | ---: | ---: | ---: | ---: |"]
    for (name, size), plans in sorted(probe.plans.items()):
        planning = statistics.median(float(_times(p)["Planning"]) for p in plans)
        execution = statistics.median(float(_times(p)["Execution"]) for p in plans)
        triggers = statistics.median(
            sum(float(t) for _, t, _ in _TRIGGER.findall(p)) for p in plans
        )
        cells = f"{planning:.3f} | {execution:.3f} | {triggers:.3f}"
        out.append(f"| {name} | {size} | {len(plans)} | {cells} |")
    out += ["", "## Cost over the run (occurrence n of the statement, n a power of two)", ""]
    out += ["| statement | n | batch | planning ms | execution ms | shared buffers hit |"]
    out += ["| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, points in sorted(probe.timeline.items()):
        for n, size, plan in points:
            times, hit = _times(plan), _BUFFERS.search(plan)
            cells = f"{times['Planning']} | {times['Execution']} | {hit.group(1) if hit else '?'}"
            out.append(f"| {name} | {n:,} | {size} | {cells} |")
    out += ["", "## The same statement, in its transaction, unprepared vs. prepared", ""]
    out += ["Round trips from the client (the sampled occurrences, each rolled back)."]
    out += ["", "| statement | batch | unprepared ms (acta today) | prepared ms | saved ms |"]
    out += ["| --- | ---: | ---: | ---: | ---: |"]
    for (name, size), pairs in sorted(probe.prepared.items()):
        plain = statistics.median(u for u, _ in pairs) * 1e3
        ready = statistics.median(p for _, p in pairs) * 1e3
        out.append(f"| {name} | {size} | {plain:.3f} | {ready:.3f} | {plain - ready:.3f} |")
    out += ["", "## One plan of each statement (its largest sampled batch)", ""]
    largest: dict[str, tuple[int, str]] = {}
    for (name, size), plans in probe.plans.items():
        if size >= largest.get(name, (0, ""))[0]:
            largest[name] = (size, plans[len(plans) // 2])
    for name, (size, plan) in sorted(largest.items()):
        out += [f"### {name}, batch {size}", "", "```", plan, "```", ""]
    return "\n".join(out)


def _times(plan: str) -> dict[str, str]:
    return dict(_TIME.findall(plan))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anvil.explain", description=__doc__)
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--executors", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=20_000, help="batch-enqueued backlog")
    parser.add_argument("--singles", type=int, default=500)
    args = parser.parse_args(argv)
    probe = Probe()
    target = Target("postgres", Path("."), args.dsn)
    with fresh_ledger(target) as ledger, hooked(probe):
        seconds = workload(
            ledger, probe, singles=args.singles, jobs=args.jobs, executors=args.executors
        )
    drained = args.singles + args.jobs
    counts = {
        "single enqueue": args.singles,
        "batch enqueue (1,000)": args.jobs,
        f"drain ({args.executors} executors)": drained,
    }
    print(f"# Statements on PostgreSQL ({drained:,} jobs drained in {seconds:.1f} s, in-process)")
    print()
    print(render(probe, counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
