"""Does the claim slow with backlog depth? ``python -m anvil.depth`` (PostgreSQL).

Drains the same number of zero-work jobs (``--drain``, 10,000) out of backlogs of different
depths (``--backlogs``, 10,000 and 1,000,000), the depths interleaved over ``--runs`` rounds,
each run on a fresh ledger, and each depth twice (``--storage``): on the ledger as the
migrations leave it, and with the storage parameters of migration 13 reset (the ledger as it
was before that migration). The first 10,000 jobs of a backlog are enqueued through
``enqueue_batch``, the rest copied from them in SQL (see ``preload``); the tables are then
vacuumed and analysed once, as autovacuum would have done to a backlog that has been waiting.
The worker processes start after that and take the backlog in claim order.
The rate is ``drain / (the drain-th settle - the first execution-started)``, both read from
the ledger, so worker start-up is outside the window. What the claim pays for dead index
entries left by the rows it has already claimed shows up inside the window.
The JSON and a markdown table go to ``docs/benchmarks/<date>-depth[-<label>].{json,md}``.
"""

from __future__ import annotations

import argparse
import functools
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
from anvil.bench_peers import _patiently
from anvil.measure import DRAIN_POLL, loadavg, other_tests
from anvil.workload import BenchError, Ledger, Target, clock, fresh_ledger, instant, wait_for
from anvil.workload import workers as spawn_workers

PER_CALL = 10_000


SEED = 10_000  # jobs enqueued through the API; the rest of a backlog is copied from them
CLONE_CHUNK = 100_000

# A ledger as it was before migration 13: the storage parameters that migration sets, reset.
RESET_STORAGE = (
    "ALTER TABLE {runtime} RESET (fillfactor, autovacuum_vacuum_scale_factor, "
    "autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor, autovacuum_analyze_threshold, "
    "autovacuum_vacuum_cost_limit)",
    "ALTER TABLE {events} RESET (autovacuum_vacuum_insert_scale_factor, "
    "autovacuum_vacuum_insert_threshold, autovacuum_analyze_scale_factor)",
    "ALTER TABLE {jobs} RESET (autovacuum_vacuum_insert_scale_factor, "
    "autovacuum_vacuum_insert_threshold, autovacuum_analyze_scale_factor)",
)

# Copies of the seed's first job: the same rows fused_enqueue writes (a job, its ready runtime
# row, its enqueued event), with refs of the documented form made from a counter.
CLONE = """
WITH seed AS (
    SELECT j.namespace_id, j.definition_id, j.input_codec, j.input, r.priority
    FROM {jobs} j JOIN {runtime} r ON r.job_id = j.id
    JOIN {definitions} d ON d.id = j.definition_id
    WHERE d.name = '%(name)s' ORDER BY j.id LIMIT 1
),
made AS (
    INSERT INTO {jobs} (job_ref, namespace_id, definition_id, input_codec, input, created_at)
    SELECT 'job_0' || lpad(to_hex(k), 25, '0'), s.namespace_id, s.definition_id,
           s.input_codec, s.input, now()
    FROM generate_series(%(first)s, %(last)s) AS k, seed s
    RETURNING id, job_ref, namespace_id, definition_id
),
ready AS (
    INSERT INTO {runtime} (job_id, namespace_id, definition_id, status, priority, next_run_at,
                           updated_at)
    SELECT m.id, m.namespace_id, m.definition_id, 10, (SELECT priority FROM seed), now(), now()
    FROM made m
),
logged AS (
    INSERT INTO {events} (at, namespace_id, job_id, job_ref, code)
    SELECT now(), m.namespace_id, m.id, m.job_ref, 1 FROM made m
)
SELECT count(*) FROM made
"""


def preload(ledger: Ledger, jobs: int) -> float:
    """A backlog of ``jobs`` no-op jobs: the first ``SEED`` enqueued through the API, the rest
    copied from them in SQL (enqueuing a million through the API takes ten minutes on this
    loaded machine; the claim sees the same rows either way). Then VACUUM ANALYZE, as
    autovacuum would have done to a backlog that has been waiting. Returns the seconds taken."""
    started = clock.monotonic()
    app = ledger.app()
    try:
        for first in range(0, min(jobs, SEED), PER_CALL):
            last = min(first + PER_CALL, jobs, SEED)
            app.enqueue_batch([app.request(NOOP, i) for i in range(first, last)])
    finally:
        app.close()
    for first in range(SEED, jobs, CLONE_CHUNK):
        last = min(first + CLONE_CHUNK, jobs) - 1
        ledger.sql(CLONE % {"name": NOOP, "first": first, "last": last})
    ledger.sql("SELECT 1")  # opens the ledger's own autocommit connection
    for table in ("jobs", "runtime", "events"):
        ledger._conn.execute(f"VACUUM (ANALYZE) {ledger.table(table)}")
    return clock.monotonic() - started


# Block traffic of the ledger's tables and their indexes: "read" is a block PostgreSQL had to
# fetch from outside shared_buffers (the OS cache or the disk), "hit" one it found there.
IO_SQL = (
    "SELECT coalesce(sum(heap_blks_read), 0) + coalesce(sum(idx_blks_read), 0), "
    "coalesce(sum(heap_blks_hit), 0) + coalesce(sum(idx_blks_hit), 0) "
    "FROM pg_statio_user_tables WHERE schemaname = '{schema}'"
)


def block_io(ledger: Ledger) -> tuple[int, int]:
    """Blocks read and hit so far by every statement on the ledger's tables and indexes."""
    [(read, hit)] = ledger.sql(IO_SQL.format(schema=ledger.schema))
    return int(read), int(hit)


def drain_from(
    target: Target,
    backlog: int,
    drain: int,
    processes: int,
    executors: int,
    profile: str,
    storage: str,
) -> dict[str, float]:
    """Drain ``drain`` jobs from a backlog of ``backlog``; the rate and what it took.
    ``storage`` is ``migrated`` (as the migrations leave the ledger) or ``reset`` (the storage
    parameters of migration 13 reset: the ledger as before it)."""
    with fresh_ledger(target) as ledger:
        if storage == "reset":
            for statement in RESET_STORAGE:
                ledger.sql("SELECT 1")
                ledger._conn.execute(statement.format(**{
                    t: ledger.table(t) for t in ("runtime", "events", "jobs")}))  # fmt: skip
        load_seconds = preload(ledger, backlog)
        done_sql = f"SELECT count(*) FROM {{runtime}} WHERE status >= {int(JobStatus.SUCCEEDED)}"
        settings = {"executors": executors, "listen": True, "poll": DRAIN_POLL}
        read_before, hit_before = block_io(ledger)
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
        read_after, hit_after = block_io(ledger)
        stats = ledger.sql(
            "SELECT n_dead_tup, n_live_tup, autovacuum_count, n_tup_hot_upd, n_tup_upd "
            f"FROM pg_stat_user_tables WHERE schemaname = '{ledger.schema}' "
            "AND relname = 'runtime'"
        )
    window = (instant(rows[0][0]) - instant(first_start)).total_seconds()
    dead, live, autovacuums, hot, updates = stats[0] if stats else (0, 0, 0, 0, 0)
    read, hit = read_after - read_before, hit_after - hit_before
    return {
        "jobs_per_s": drain / window,
        "window_s": window,
        "preload_s": load_seconds,
        "runtime_dead_tuples": float(dead),
        "runtime_live_tuples": float(live),
        "runtime_autovacuums": float(autovacuums),
        "runtime_hot_update_share": hot / updates if updates else 0.0,
        # Whether the drain's working set fits shared_buffers: blocks per job drained, and
        # the share of them PostgreSQL had to fetch from outside its cache.
        "blocks_per_job": (read + hit) / drain,
        "blocks_read_share": read / (read + hit) if read + hit else 0.0,
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
    parser.add_argument("--storage", default="reset,migrated",
                        help="storage variants to interleave: reset (before migration 13), "
                        "migrated")  # fmt: skip
    parser.add_argument("--label", default="", help="added to the file name")
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    args = parser.parse_args(args_list)
    backlogs = [int(b) for b in args.backlogs.split(",")]
    if any(b < args.drain for b in backlogs):
        parser.error("every backlog must hold at least --drain jobs")
    _check_postgres(args.dsn)
    env = report.environment("python -m anvil.depth " + " ".join(args_list), args.dsn)
    workdir = Path(tempfile.mkdtemp(prefix="acta-depth-"))
    target = Target("postgres", workdir, args.dsn)
    variants = [v for v in args.storage.split(",") if v]
    keys = [f"{v}/{b}" for v in variants for b in backlogs]
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in keys}
    rounds: list[dict[str, Any]] = []
    try:
        for _ in range(args.runs):
            for backlog in backlogs:
                for variant in variants:
                    before = {"load": loadavg(), "others": len(other_tests())}
                    result, retries = _patiently(functools.partial(
                        drain_from, target, backlog, args.drain, args.processes,
                        args.executors, args.profile, variant))  # fmt: skip
                    result["retries"] = float(retries)
                    runs[f"{variant}/{backlog}"].append(result)
                    rounds.append({"variant": variant, "backlog": backlog, **before,
                                   "load_after": loadavg()})  # fmt: skip
                    print(f"{variant:8} backlog {backlog:>9,}: {result['jobs_per_s']:,.0f} "
                          f"jobs/s ({result})", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    medians = {k: statistics.median(r["jobs_per_s"] for r in runs[k]) for k in keys}
    doc = {"environment": env, "args": vars(args) | {"out": str(args.out)}, "runs": runs,
           "rounds": rounds, "medians": medians}  # fmt: skip
    name = f"{env['date']}-depth" + (f"-{args.label}" if args.label else "")
    lines = [f"# Depth benchmark, {env['date']}", "", f"Command: `{env['command']}`", "",
             f"Commit {env['acta']['commit'][:12]}, "
             f"{args.processes} process x {args.executors} executors, profile {args.profile}, "
             f"drain {args.drain:,} jobs", "", "| storage | backlog | median jobs/s | min–max | "
             "vs smallest backlog | blocks per job | read outside shared_buffers |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for v in variants:
        base = medians[f"{v}/{backlogs[0]}"]
        for b in backlogs:
            values = [r["jobs_per_s"] for r in runs[f"{v}/{b}"]]
            blocks = statistics.median(r["blocks_per_job"] for r in runs[f"{v}/{b}"])
            share = statistics.median(r["blocks_read_share"] for r in runs[f"{v}/{b}"])
            lines.append(f"| {v} | {b:,} | {medians[f'{v}/{b}']:,.0f} | {min(values):,.0f}–"
                         f"{max(values):,.0f} | {medians[f'{v}/{b}'] / base:.2f} | "
                         f"{blocks:,.1f} | {share:.1%} |")  # fmt: skip
    report.save_page(doc, lines, args.out, name)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        raise SystemExit(f"interrupted ({stop}); workers stopped, ledgers dropped") from None
