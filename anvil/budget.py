"""The write budget: rows and statements per job, enqueue to success (``python -m anvil.budget``).

On a fresh PostgreSQL ledger per execution profile: 1,000 jobs enqueued one call each (and,
on another ledger, in one ``enqueue_batch`` call), then drained by one worker process with 16
executors. Two independent counts:

* rows, from the server: ``pg_stat_user_tables`` deltas (inserted, updated, HOT-updated,
  deleted) per table of the ledger's schema, read after the worker has stopped (a backend
  flushes its counters when it goes idle or exits);
* statements and transactions, from the client: ``anvil.counting`` wraps acta's PostgreSQL
  links in the producer and in the worker process.

Background work during the drain (heartbeats, the worker's registration and recovery polls)
is included, so the figures are what a real drain of 1,000 jobs costs, divided by 1,000.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acta.model.codes import JobStatus
from anvil import counting
from anvil.bench import DEFAULT_DSN, _check_postgres
from anvil.bench_app import NOOP, READY_MARK
from anvil.measure import DRAIN_POLL
from anvil.workload import Ledger, Target, fresh_ledger, pump, spawn, wait_for

TABLES_SQL = (
    "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables "
    "WHERE schemaname = '{schema}' ORDER BY relname"
)


def table_counts(ledger: Ledger) -> dict[str, list[int]]:
    ledger.sql("SELECT pg_stat_clear_snapshot()")
    rows = ledger.sql(TABLES_SQL.format(schema=ledger.schema))
    return {name: [int(x) for x in rest] for name, *rest in rows}


def delta(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, list[int]]:
    out = {}
    for name, values in after.items():
        old = before.get(name, [0, 0, 0, 0])
        diff = [b - a for a, b in zip(old, values, strict=True)]
        if any(diff):
            out[name] = diff
    return out


def settle_stats(ledger: Ledger, before: dict[str, list[int]], want: int) -> dict[str, list[int]]:
    """Counters flush a moment after a backend goes idle: read until they stop moving and
    show at least ``want`` inserted rows in total."""
    last: dict[str, list[int]] = {}
    for _ in range(100):
        now = delta(before, table_counts(ledger))
        if now == last and sum(v[0] for v in now.values()) >= want:
            return now
        last = now
        time.sleep(0.3)  # the statistics have no event to wait on
    return last


def run_profile(target: Target, profile: str, jobs: int, batch: bool) -> dict[str, Any]:
    with fresh_ledger(target) as ledger:
        app = ledger.app()
        counting.install()
        try:
            app.enqueue(NOOP, -1)  # the definition ids are cached: not counted
            base = table_counts(ledger)
            counting.reset()
            if batch:
                app.enqueue_batch([app.request(NOOP, i) for i in range(jobs)])
            else:
                for i in range(jobs):
                    app.enqueue(NOOP, i)
            enqueue_statements = counting.snapshot()
        finally:
            app.close()
        enqueue_rows = settle_stats(ledger, base, jobs)
        base = table_counts(ledger)
        env = ledger.worker_env(
            executors=16, listen=True, poll=DRAIN_POLL, profile=profile, count=True
        )
        child = spawn(env)
        try:
            done_sql = f"SELECT count(*) FROM {{runtime}} WHERE status = {int(JobStatus.SUCCEEDED)}"
            wait_for([child], lambda: ledger.sql(done_sql)[0][0] >= jobs + 1, 120, "draining",
                     step=0.05)  # fmt: skip
        finally:
            child.process.send_signal(signal.SIGTERM)
            while not child.closed:
                pump([child], 1.0)
            child.process.wait()
        worker_statements: dict[str, int] = {}
        for line in child.lines:
            if line.startswith(counting.MARK):
                worker_statements = json.loads(line.split(" ", 1)[1])
        if not any(READY_MARK in line for line in child.lines):
            raise RuntimeError("the worker never registered")
        drain_rows = settle_stats(ledger, base, jobs)
    return {
        "profile": profile,
        "jobs": jobs,
        "enqueue": "batch" if batch else "single",
        "enqueue_rows": enqueue_rows,
        "enqueue_statements": enqueue_statements,
        "drain_rows": drain_rows,
        "drain_statements": worker_statements,
    }


def per_job(result: dict[str, Any]) -> str:
    n = result["jobs"]
    lines = [f"## {result['profile']}, enqueue {result['enqueue']} ({n:,} jobs)"]
    for phase in ("enqueue", "drain"):
        rows = result[f"{phase}_rows"]
        lines.append(f"{phase} rows per job (ins/upd/hot/del):")
        total = [0, 0, 0, 0]
        for table, values in sorted(rows.items()):
            total = [a + b for a, b in zip(total, values, strict=True)]
            lines.append(f"  {table:18} " + " ".join(f"{v / n:6.2f}" for v in values))
        lines.append(f"  {'total':18} " + " ".join(f"{v / n:6.2f}" for v in total))
        stmts = result[f"{phase}_statements"]
        lines.append(f"{phase} statements per job: " + ", ".join(
            f"{k}={v / n:.3f}" for k, v in sorted(stmts.items())))  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anvil.budget", description=__doc__)
    parser.add_argument("--dsn", default=os.environ.get("ACTA_BENCH_DSN") or DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--profiles", default="buffered,direct,bulk")
    parser.add_argument("--out", type=Path, help="write the JSON here")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    _check_postgres(args.dsn)
    target = Target("postgres", Path(tempfile.gettempdir()), args.dsn)
    results = []
    for profile in args.profiles.split(","):
        for batch in (False, True):
            result = run_profile(target, profile, args.jobs, batch)
            results.append(result)
            print(per_job(result), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
