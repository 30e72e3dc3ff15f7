"""Does a worker's memory stay flat over a long drain? ``python -m anvil.memory`` (PostgreSQL).

One worker process (``--executors``, 16; ``--profile``, bulk) drains a backlog of ``--jobs``
zero-work jobs (1,000,000), preloaded the way ``anvil.depth`` does it (the first 10,000 through
``enqueue_batch``, the rest copied in SQL, then VACUUM ANALYZE). Every ``--every`` seconds the
bench reads the worker's resident set size from ``/proc/<pid>/status`` (VmRSS) and how many
of its jobs are still ready. A worker that leaks a
little per job shows it as a slope: the page gives the RSS once warm (after the first tenth of
the drain), at the end and at its peak, and the least-squares slope over the rest of the drain
in KiB per 100,000 jobs. Linux only (``/proc``). The samples go to
``docs/benchmarks/<date>-memory[-<label>].json`` and a summary to the ``.md`` beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from acta.model.codes import JobStatus
from anvil import report
from anvil.bench import DEFAULT_DSN, _check_postgres, _interruptible
from anvil.bench_app import NOOP
from anvil.depth import preload
from anvil.measure import DRAIN_POLL, loadavg
from anvil.workload import BenchError, Target, clock, fresh_ledger, pump
from anvil.workload import workers as spawn_workers

WARM = 0.1  # the share of the drain after which the worker counts as warm
# One read per sample: the bench's own jobs still ready (acta's recurring sys.* slots wait as
# ready rows too), and what the claim's scans wade through, the runtime table's dead tuples
# (rows a claim or settle left behind, until a vacuum) and its autovacuums so far.
SAMPLE_SQL = (
    "SELECT (SELECT count(*) FROM {{runtime}} r JOIN {{definitions}} d "
    "ON d.id = r.definition_id WHERE d.name = '{name}' AND r.status = {ready}), "
    "s.n_dead_tup, s.autovacuum_count FROM pg_stat_user_tables s "
    "WHERE s.schemaname = '{schema}' AND s.relname = 'runtime'"
)


def rss_kib(pid: int) -> int:
    """The resident set size of process ``pid`` in KiB (VmRSS of ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for process {pid}: is it a zombie?")


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of y over x (0 for fewer than two distinct x)."""
    if len({x for x, _ in points}) < 2:
        return 0.0
    xs, ys = zip(*points, strict=True)
    return statistics.linear_regression(xs, ys).slope


def drain(
    target: Target, jobs: int, executors: int, profile: str, every: float, vacuum_every: float
) -> dict[str, Any]:
    """Drain a backlog of ``jobs`` with one worker, sampling its RSS; the samples and summary.
    ``vacuum_every`` (seconds, 0: never) runs VACUUM on the runtime table that often."""
    samples: list[dict[str, float]] = []
    vacuums = 0
    with fresh_ledger(target) as ledger:
        load_seconds = preload(ledger, jobs)
        sample_sql = SAMPLE_SQL.format(name=NOOP, ready=int(JobStatus.READY), schema=ledger.schema)
        settings = {"executors": executors, "listen": True, "poll": DRAIN_POLL}
        with spawn_workers(ledger, 1, profile=profile, **settings) as children:
            (child,) = children
            pid = child.process.pid
            started = vacuumed = clock.monotonic()
            deadline = started + 600 + jobs / 200
            while True:
                ready, dead, autovacuums = ledger.sql(sample_sql)[0]
                samples.append(
                    {
                        "s": round(clock.monotonic() - started, 2),
                        "drained": jobs - int(ready),
                        "rss_kib": rss_kib(pid),
                        "runtime_dead_tuples": int(dead),
                        "runtime_autovacuums": int(autovacuums),
                    }
                )
                if not ready:
                    break
                if not child.alive():
                    tail = "\n".join(child.lines[-20:])
                    raise BenchError(f"the worker exited ({child.process.returncode}):\n{tail}")
                if clock.monotonic() > deadline:
                    raise BenchError(f"timed out with {ready:,} jobs still ready")
                if vacuum_every and clock.monotonic() - vacuumed >= vacuum_every:
                    ledger._conn.execute(f"VACUUM {ledger.table('runtime')}")
                    vacuumed, vacuums = clock.monotonic(), vacuums + 1
                pump(children, every)  # keeps the worker's pipe drained while we wait
    took = samples[-1]["s"]
    warm = [p for p in samples if p["drained"] >= WARM * jobs]
    warm_rss = warm[0]["rss_kib"] if warm else samples[-1]["rss_kib"]
    per_job = slope([(p["drained"], p["rss_kib"]) for p in warm])
    return {
        "jobs": jobs,
        "preload_s": load_seconds,
        "drain_s": took,
        "jobs_per_s": jobs / took if took else 0.0,
        "rss_start_kib": samples[0]["rss_kib"],
        "rss_warm_kib": warm_rss,
        "rss_end_kib": samples[-1]["rss_kib"],
        "rss_peak_kib": max(p["rss_kib"] for p in samples),
        "slope_kib_per_100k_jobs": per_job * 100_000,
        "manual_vacuums": vacuums,
        "samples": samples,
    }


def by_tenth(samples: list[dict[str, float]], jobs: int) -> list[tuple[int, float, float]]:
    """For each tenth of the drain: (jobs drained at its end, jobs/s over it, RSS in KiB at its
    end), from the samples that bracket it."""
    out: list[tuple[int, float, float]] = []
    previous = samples[0]
    for k in range(1, 11):
        mark = jobs * k / 10
        end = next((p for p in samples if p["drained"] >= mark), samples[-1])
        if end is previous or end["s"] <= previous["s"]:
            continue
        rate = (end["drained"] - previous["drained"]) / (end["s"] - previous["s"])
        out.append((int(end["drained"]), rate, end["rss_kib"]))
        previous = end
    return out


def _page(env: dict[str, Any], args: argparse.Namespace, result: dict[str, Any]) -> list[str]:
    mib = 1024.0
    tenths = [
        f"| {drained:,} | {rate:,.0f} | {rss / mib:,.1f} MiB |"
        for drained, rate, rss in by_tenth(result["samples"], result["jobs"])
    ]
    return [
        f"# Worker memory over a long drain, {env['date']}",
        "",
        f"Command: `{env['command']}`",
        "",
        f"Commit {env['acta']['commit'][:12]}, one process x {args.executors} executors, "
        f"profile {args.profile}, {result['jobs']:,} zero-work jobs, RSS sampled every "
        f"{args.every:g} s ({len(result['samples'])} samples; all of them in the JSON beside "
        f"this page). Server autovacuum: {env['postgres'].get('autovacuum', 'unknown')}; "
        "VACUUM of the runtime table by the bench: "
        + (
            f"every {args.vacuum_every:g} s ({result['manual_vacuums']} runs)."
            if args.vacuum_every
            else "none."
        ),
        "",
        "| drained in | jobs/s | RSS at start | RSS warm (10% drained) | RSS at end | peak | "
        "slope after warm-up |",
        "|---|---|---|---|---|---|---|",
        f"| {result['drain_s']:,.0f} s | {result['jobs_per_s']:,.0f} | "
        f"{result['rss_start_kib'] / mib:,.1f} MiB | {result['rss_warm_kib'] / mib:,.1f} MiB | "
        f"{result['rss_end_kib'] / mib:,.1f} MiB | {result['rss_peak_kib'] / mib:,.1f} MiB | "
        f"{result['slope_kib_per_100k_jobs']:+,.0f} KiB per 100,000 jobs |",
        "",
        "By tenth of the drain (between the samples that bracket each tenth):",
        "",
        "| drained by | jobs/s over the tenth | RSS |",
        "|---|---|---|",
        *tenths,
    ]


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    _interruptible()
    parser = argparse.ArgumentParser(prog="python -m anvil.memory", description=__doc__)
    parser.add_argument("--dsn", default=os.environ.get("ACTA_BENCH_DSN") or DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--executors", type=int, default=16)
    parser.add_argument("--profile", default="bulk")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument(
        "--vacuum-every",
        type=float,
        default=0.0,
        help="run VACUUM on the runtime table every this many seconds (0: never); stands in "
        "for autovacuum on a server that runs without it",
    )
    parser.add_argument("--label", default="", help="added to the file name")
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    args = parser.parse_args(args_list)
    if args.jobs < 1 or args.every <= 0:
        parser.error("--jobs must be at least 1 and --every above 0")
    if not sys.platform.startswith("linux"):
        parser.error("the memory bench reads /proc: Linux only")
    _check_postgres(args.dsn)
    env = report.environment("python -m anvil.memory " + " ".join(args_list), args.dsn)
    workdir = Path(tempfile.mkdtemp(prefix="acta-memory-"))
    try:
        before = loadavg()
        result = drain(
            Target("postgres", workdir, args.dsn), args.jobs, args.executors, args.profile,
            args.every, args.vacuum_every,
        )  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    doc = {"environment": env, "args": vars(args) | {"out": str(args.out)},
           "load": {"before": before, "after": loadavg()}, "result": result}  # fmt: skip
    name = f"{env['date']}-memory" + (f"-{args.label}" if args.label else "")
    lines = _page(env, args, result)
    report.save_page(doc, lines, args.out, name)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        raise SystemExit(f"interrupted ({stop}); the worker stopped, the ledger dropped") from None
