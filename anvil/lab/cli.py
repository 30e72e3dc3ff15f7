"""``python -m anvil lab``: the lab's command line.

Interactive (the default): a live terminal view, with typed commands, and with ``--port`` also
a page at http://127.0.0.1:PORT/. Non-interactive with ``--until-drained``: enqueue ``--jobs``,
kill a worker every ``--kill-every`` seconds, wait for the drain and write ``--record``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import psycopg

from anvil import report
from anvil.lab import app as lab_app
from anvil.lab import drain, record
from anvil.lab.control import DEFAULT_DSN, Lab, Options


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m anvil lab", description=__doc__)
    p.add_argument("--provider", choices=("postgres", "sqlite"), default="postgres")
    p.add_argument("--dsn", default=os.environ.get("ACTA_LAB_DSN") or DEFAULT_DSN)
    p.add_argument("--database", help="SQLite file (default: one in a temporary directory)")
    p.add_argument("--workers", type=int, default=3, help="worker processes to start (3)")
    p.add_argument("--executors", type=int, default=lab_app.EXECUTORS, help="per worker")
    p.add_argument("--heartbeat", type=float, default=lab_app.HEARTBEAT, help="seconds")
    p.add_argument(
        "--profile",
        choices=("buffered", "direct", "bulk"),
        default=lab_app.PROFILE,
        help="the workers' execution profile (buffered)",
    )
    p.add_argument("--work-ms", type=int, default=0, help="how long each job takes (0)")
    p.add_argument("--jobs", type=int, default=0, help="jobs to enqueue at the start")
    p.add_argument("--kill-every", type=float, default=0, help="seconds between kills (0: none)")
    p.add_argument("--max-kills", type=int, default=0, help="kill at most this many (0: no cap)")
    p.add_argument("--until-drained", action="store_true", help="non-interactive: drain and exit")
    p.add_argument("--record", type=Path, help="with --until-drained: write the record here")
    p.add_argument("--timeout", type=float, default=3600, help="give up on the drain after (s)")
    p.add_argument("--refresh", type=float, default=2.0, help="seconds between progress lines")
    p.add_argument("--seed", type=int, help="seed of the choice of workers to kill")
    p.add_argument("--port", type=int, help="also serve the page on 127.0.0.1:PORT (0: any)")
    p.add_argument("--no-terminal", action="store_true", help="page only, no terminal view")
    p.add_argument("--keep", action="store_true", help="keep the ledger afterwards")
    return p


def interruptible() -> None:
    """SIGTERM ends the lab through its cleanups (workers stopped, ledger dropped)."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(args_list)
    if args.workers < 1 or args.jobs < 0 or (args.until_drained and args.jobs < 1):
        parser().error("--workers must be at least 1; --until-drained needs --jobs of at least 1")
    if args.provider == "postgres":
        try:
            psycopg.connect(args.dsn, connect_timeout=5).close()
        except psycopg.Error as exc:
            raise SystemExit(f"cannot reach PostgreSQL at {args.dsn!r}: {exc}") from exc
    options = Options(
        provider=args.provider,
        dsn=args.dsn,
        database=args.database,
        executors=args.executors,
        heartbeat=args.heartbeat,
        profile=args.profile,
        work_ms=args.work_ms,
        keep=args.keep,
    )
    with Lab(options) as lab:
        if args.until_drained:
            return _drain(lab, args, args_list)
        from anvil.lab import terminal

        return terminal.run(lab, args.workers, args.jobs, args.port, show=not args.no_terminal)


def _drain(lab: Lab, args: argparse.Namespace, argv: list[str]) -> int:
    plan = drain.Plan(
        jobs=args.jobs,
        workers=args.workers,
        kill_every=args.kill_every,
        max_kills=args.max_kills,
        timeout=args.timeout,
        refresh=args.refresh,
        seed=args.seed,
    )
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a log file too
    command = "python -m anvil lab " + " ".join(argv)
    # Taken at the start, so the record's date, time and commit are the run's own.
    env = report.environment(command, args.dsn if args.provider == "postgres" else None)
    print(f"lab ledger: {args.provider} schema {lab.schema}; worker logs in {lab.workdir}")
    rec = drain.run(lab, plan)
    print(
        ("drained" if rec["drained"] else "NOT drained: stopped at the timeout; ran")
        + f" {rec['jobs']:,} jobs in {rec['duration_s']:,.1f} s ({rec['rate_jobs_per_s']:,.0f}"
        f" jobs/s); kills {rec['kills']}, declared dead {rec['workers_declared_dead']}, "
        f"recoveries {rec['recoveries']:,}; lost {rec['lost']:,}, "
        f"stuck leased {rec['stuck_leased']}"
    )
    if args.record is not None:
        doc = {"environment": env, "record": rec}
        json_path, md_path = record.write(doc, args.record)
        print(f"wrote {json_path} and {md_path}")
    return 0 if rec["ok"] else 1
