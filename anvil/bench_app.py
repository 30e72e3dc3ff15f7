"""The application the benchmarks run: two zero-work async jobs, and a worker entry point.

``bench.noop`` does nothing; it measures the cost of the machinery around a handler.
``bench.metered`` is a zero-work job behind a 50/s rate meter (the gate benchmarks also run
``bench.noop`` in lanes and under one concurrency key). ``bench.pickup`` reports the instant its
handler starts (wall time, from ``SystemClock``) so the
bench can compute enqueue-to-start latency across processes on one machine.

Worker processes run ``python -m anvil.bench_app``, configured by environment variables
(``ACTA_BENCH_DATABASE``, ``ACTA_BENCH_SCHEMA``, ``ACTA_BENCH_EXECUTORS``, ``ACTA_BENCH_LISTEN``,
``ACTA_BENCH_POLL``, ``ACTA_BENCH_PROFILE``). A pickup handler in a worker process prints one
line per job, which the bench reads from the process's stdout.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from acta import Acta
from acta.clock import SystemClock

NOOP = "bench.noop"
PICKUP = "bench.pickup"
METERED = "bench.metered"
METER_RATE = "50/s"
PICKUP_MARK = "acta-bench-pickup"
READY_MARK = "registered in namespace"
DEFAULT_PROFILE = "buffered"  # the worker's execution profile (acta's default)

Report = Callable[[int, float], None]
_clock = SystemClock()


def print_report(n: int, started: float) -> None:
    """The default pickup report: one line on stdout, flushed at once."""
    print(f"{PICKUP_MARK} {n} {started:.6f}", flush=True)


def build(database: str, schema: str, report: Report = print_report) -> Acta:
    """A bench application on ``database`` (schema ``schema``); ``report(n, started)`` is
    called by the pickup handler with its start instant in seconds since the epoch."""
    app = Acta(database, schema=schema)

    @app.job(NOOP)
    async def noop(n: int) -> None:
        return None

    @app.job(PICKUP)
    async def pickup(n: int) -> None:
        report(n, _clock.now().timestamp())

    @app.job(METERED, rate_limit=METER_RATE)
    async def metered(n: int) -> None:
        return None

    return app


def worker_env(
    database: str,
    schema: str,
    *,
    executors: int,
    listen: bool,
    poll: float,
    profile: str = DEFAULT_PROFILE,
    count: bool = False,
) -> dict[str, str]:
    """The environment that configures ``main`` in a child process."""
    return {
        "ACTA_BENCH_COUNT": "1" if count else "0",
        "ACTA_BENCH_DATABASE": database,
        "ACTA_BENCH_SCHEMA": schema,
        "ACTA_BENCH_EXECUTORS": str(executors),
        "ACTA_BENCH_LISTEN": "1" if listen else "0",
        "ACTA_BENCH_POLL": repr(poll),
        "ACTA_BENCH_PROFILE": profile,
    }


def main() -> None:
    """Run one worker in the foreground until SIGTERM (its log goes to stdout)."""
    env = os.environ
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(name)s %(message)s")
    app = build(env["ACTA_BENCH_DATABASE"], env["ACTA_BENCH_SCHEMA"])
    settings: dict[str, Any] = {
        "executors": int(env["ACTA_BENCH_EXECUTORS"]),
        "listen": env["ACTA_BENCH_LISTEN"] == "1",
        "poll": float(env["ACTA_BENCH_POLL"]),
    }
    profile = env.get("ACTA_BENCH_PROFILE", DEFAULT_PROFILE)
    if profile != DEFAULT_PROFILE:  # only then: older builds have no such setting
        settings["profile"] = profile
    if env.get("ACTA_BENCH_COUNT") == "1":  # the write budget counts this worker's statements
        from anvil import counting

        counting.install()
        app.run_worker(**settings)
        print(counting.report_line(), flush=True)
        return
    app.run_worker(**settings)


if __name__ == "__main__":
    main()
