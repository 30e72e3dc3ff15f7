"""Does the claim slow with backlog depth? ``python -m anvil.depth`` (PostgreSQL).

Drains the same number of zero-work jobs (``--drain``, 10,000) out of backlogs of different
depths (``--backlogs``, 10,000 and 1,000,000), the depths interleaved over ``--runs`` rounds,
each run on a fresh ledger. The backlog is enqueued through ``enqueue_batch`` (calls of
10,000) and then vacuumed and analysed once, as autovacuum would have done to a backlog that
has been waiting; the worker processes start after that and take the backlog in claim order.
The rate is ``drain / (the drain-th settle - the first execution-started)``, both read from
the ledger, so worker start-up is outside the window. What the claim pays for dead index
entries left by the rows it has already claimed shows up inside the window.
The JSON goes to ``docs/benchmarks/<date>-depth-<label>.json`` with a markdown summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from acta.model.codes import EventCode, JobStatus
from anvil import report
from anvil.bench import DEFAULT_DSN, _check_postgres, _interruptible
from anvil.bench_app import DEFAULT_PROFILE, NOOP
from anvil.measure import DRAIN_POLL, loadavg, other_tests
from anvil.workload import BenchError, Ledger, Target, clock, fresh_ledger, instant, wait_for
from anvil.workload import workers as spawn_workers

PER_CALL = 10_000


def preload(ledger: Ledger, jobs: int) -> float:
    """Enqueue ``jobs`` no-op jobs, then VACUUM ANALYZE the hot tables; seconds taken."""
    started = clock.monotonic()
    app = ledger.app()
    try:
        for first in range(0, jobs, PER_CALL):
            last = min(first + PER_CALL, jobs)
            app.enqueue_batch([app.request(NOOP, i) for i in range(first, last)])
    finally:
        app.close()
    ledger.sql("SELECT 1")  # opens the ledger's own autocommit connection
    for table in ("jobs", "runtime", "events"):
        ledger._conn.execute(f"VACUUM (ANALYZE) {ledger.table(table)}")
    return clock.monotonic() - started


def drain_from(
    target: Target, backlog: int, drain: int, processes: int, executors: int, profile: str
) -> dict[str, float]:
    """Drain ``drain`` jobs from a backlog of ``backlog``; the rate and what it took."""
    with fresh_ledger(target) as ledger:
        load_seconds = preload(ledger, backlog)
        done_sql = f"SELECT count(*) FROM {{runtime}} WHERE status >= {int(JobStatus.SUCCEEDED)}"
        settings = {"executors": executors, "listen": True, "poll": DRAIN_POLL}
        with spawn_workers(ledger, processes, profile=profile, **settings) as children:
            wait_for(children, lambda: ledger.sql(done_sql)[0][0] >= drain,
                     120 + drain / 20, "draining", step=0.5)  # fmt: skip
        [(first_start,)] = ledger.sql(
            f"SELECT min(at) FROM {{events}} WHERE code = {int(EventCode.EXECUTION_STARTED)}"
        )
        rows = ledger.sql(
            f"SELECT updated_at FROM {{runtime}} WHERE status = {int(JobStatus.SUCCEEDED)} "
            f"ORDER BY updated_at OFFSET {drain - 1} LIMIT 1"
        )
        if not rows:
            raise BenchError(f"fewer than {drain} jobs settled")
        stats = ledger.sql(
            "SELECT n_dead_tup, n_live_tup, autovacuum_count, n_tup_hot_upd, n_tup_upd "
            f"FROM pg_stat_user_tables WHERE schemaname = '{ledger.schema}' "
            "AND relname = 'runtime'"
        )
    window = (instant(rows[0][0]) - instant(first_start)).total_seconds()
    dead, live, autovacuums, hot, updates = stats[0] if stats else (0, 0, 0, 0, 0)
    return {
        "jobs_per_s": drain / window,
        "window_s": window,
        "preload_s": load_seconds,
        "runtime_dead_tuples": float(dead),
        "runtime_live_tuples": float(live),
        "runtime_autovacuums": float(autovacuums),
        "runtime_hot_update_share": hot / updates if updates else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    _interruptible()
    parser = argparse.ArgumentParser(prog="python -m anvil.depth", description=__doc__)
    parser.add_argument("--dsn", default=os.environ.get("ACTA_BENCH_DSN") or DEFAULT_DSN)
    parser.add_argument("--backlogs", default="10000,1000000")
    parser.add_argument("--drain", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--executors", type=int, default=16)
    parser.add_argument("--profile", default=DEFAULT_PROFILE)
    parser.add_argument("--label", default="", help="added to the file name (e.g. before)")
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    args = parser.parse_args(args_list)
    backlogs = [int(b) for b in args.backlogs.split(",")]
    if any(b < args.drain for b in backlogs):
        parser.error("every backlog must hold at least --drain jobs")
    _check_postgres(args.dsn)
    env = report.environment("python -m anvil.depth " + " ".join(args_list), args.dsn)
    workdir = Path(tempfile.mkdtemp(prefix="acta-depth-"))
    target = Target("postgres", workdir, args.dsn)
    runs: dict[int, list[dict[str, float]]] = {b: [] for b in backlogs}
    rounds: list[dict[str, Any]] = []
    try:
        for _ in range(args.runs):
            for backlog in backlogs:
                before = {"load": loadavg(), "others": len(other_tests())}
                result = drain_from(target, backlog, args.drain, args.processes,
                                    args.executors, args.profile)  # fmt: skip
                runs[backlog].append(result)
                rounds.append({"backlog": backlog, **before, "load_after": loadavg()})
                print(f"backlog {backlog:>9,}: {result['jobs_per_s']:,.0f} jobs/s "
                      f"({result})", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    medians = {b: statistics.median(r["jobs_per_s"] for r in runs[b]) for b in backlogs}
    base = medians[backlogs[0]]
    doc = {"environment": env, "args": vars(args) | {"out": str(args.out)}, "runs": runs,
           "rounds": rounds, "medians": medians}  # fmt: skip
    name = f"{env['date']}-depth" + (f"-{args.label}" if args.label else "")
    lines = [f"depth ({args.label or 'unlabelled'}), commit {env['acta']['commit'][:12]}, "
             f"{args.processes} process x {args.executors} executors, profile {args.profile}, "
             f"drain {args.drain:,} jobs"]  # fmt: skip
    for b in backlogs:
        values = [r["jobs_per_s"] for r in runs[b]]
        lines.append(f"| {b:,} | {medians[b]:,.0f} | {min(values):,.0f}–{max(values):,.0f} | "
                     f"{medians[b] / base:.2f} |")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        raise SystemExit(f"interrupted ({stop}); workers stopped, ledgers dropped") from None
