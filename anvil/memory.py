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
import json
import os
import shutil
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


def rss_kib(pid: int) -> int:
    """The resident set size of process ``pid`` in KiB (VmRSS of ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for process {pid}: is it a zombie?")


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of y over x (0 for fewer than two distinct x)."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def drain(target: Target, jobs: int, executors: int, profile: str, every: float) -> dict[str, Any]:
    """Drain a backlog of ``jobs`` with one worker, sampling its RSS; the samples and summary."""
    samples: list[dict[str, float]] = []
    with fresh_ledger(target) as ledger:
        load_seconds = preload(ledger, jobs)
        # The bench's own jobs only: acta's recurring sys.* slots wait as ready rows too.
        ready_sql = (
            "SELECT count(*) FROM {runtime} r JOIN {definitions} d ON d.id = r.definition_id "
            f"WHERE d.name = '{NOOP}' AND r.status = {int(JobStatus.READY)}"
        )
        settings = {"executors": executors, "listen": True, "poll": DRAIN_POLL}
        with spawn_workers(ledger, 1, profile=profile, **settings) as children:
            (child,) = children
            pid = child.process.pid
            started = clock.monotonic()
            deadline = started + 600 + jobs / 200
            while True:
                ready = int(ledger.sql(ready_sql)[0][0])
                samples.append(
                    {
                        "s": round(clock.monotonic() - started, 2),
                        "drained": jobs - ready,
                        "rss_kib": rss_kib(pid),
                    }
                )
                if ready == 0:
                    break
                if not child.alive():
                    tail = "\n".join(child.lines[-20:])
                    raise BenchError(f"the worker exited ({child.process.returncode}):\n{tail}")
                if clock.monotonic() > deadline:
                    raise BenchError(f"timed out with {ready:,} jobs still ready")
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
        "samples": samples,
    }


def _page(env: dict[str, Any], args: argparse.Namespace, result: dict[str, Any]) -> list[str]:
    mib = 1024.0
    return [
        f"# Worker memory over a long drain, {env['date']}",
        "",
        f"Command: `{env['command']}`",
        "",
        f"Commit {env['acta']['commit'][:12]}, one process x {args.executors} executors, "
        f"profile {args.profile}, {result['jobs']:,} zero-work jobs, RSS sampled every "
        f"{args.every:g} s ({len(result['samples'])} samples; all of them in the JSON beside "
        "this page).",
        "",
        "| drained in | jobs/s | RSS at start | RSS warm (10% drained) | RSS at end | peak | "
        "slope after warm-up |",
        "|---|---|---|---|---|---|---|",
        f"| {result['drain_s']:,.0f} s | {result['jobs_per_s']:,.0f} | "
        f"{result['rss_start_kib'] / mib:,.1f} MiB | {result['rss_warm_kib'] / mib:,.1f} MiB | "
        f"{result['rss_end_kib'] / mib:,.1f} MiB | {result['rss_peak_kib'] / mib:,.1f} MiB | "
        f"{result['slope_kib_per_100k_jobs']:+,.0f} KiB per 100,000 jobs |",
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
            args.every,
        )  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    doc = {"environment": env, "args": vars(args) | {"out": str(args.out)},
           "load": {"before": before, "after": loadavg()}, "result": result}  # fmt: skip
    name = f"{env['date']}-memory" + (f"-{args.label}" if args.label else "")
    lines = _page(env, args, result)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    (args.out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        raise SystemExit(f"interrupted ({stop}); the worker stopped, the ledger dropped") from None
