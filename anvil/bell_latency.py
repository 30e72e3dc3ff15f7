"""Pickup latency on SQLite across processes, with and without the Redis bell.

A producer (this process) enqueues into a SQLite file that one idle worker process polls.
Without a bell the worker sees a job at its next poll; with ``ACTA_BELL`` set (both processes
read it: acta.redis_bell) the producer's commit publishes on Redis and the worker looks at
once. Each mode runs ``anvil.pickup.pickup``: enqueue-to-handler-start latency, producer
arrivals spread over one poll period, so the polled samples are those of random arrivals.
``--mariadb DSN`` measures MariaDB too (no NOTIFY either), on a database of its own that is
dropped afterwards; anvil's workload makes only SQLite and PostgreSQL ledgers, so the MariaDB
loop is written here, with the same pauses and the same statistics.

    python -m anvil.bell_latency --samples 20 --redis redis://127.0.0.1:6379/0 \
        --mariadb mariadb://root@127.0.0.1:3306/test

Keep runs short on a shared machine: two modes of 20 samples take about half a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from acta.redis_bell import ENV
from anvil import bench_app
from anvil.pickup import Run, latency_stats, pauses, pickup
from anvil.workload import Child, Ledger, Target, clock, pause, wait_for, workers


@contextmanager
def _bell(url: str) -> Iterator[None]:
    """Set ``$ACTA_BELL`` for this process and the workers it spawns ("" for none)."""
    before = os.environ.get(ENV)
    os.environ[ENV] = url
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def measure(workdir: Path, samples: int, poll: float, redis_url: str) -> dict[str, Run]:
    """Both modes on fresh SQLite ledgers in ``workdir``: ``poll`` and ``redis bell``."""
    target = Target("sqlite", workdir)
    found: dict[str, Run] = {}
    for mode, url in (("poll", ""), ("redis bell", redis_url)):
        with _bell(url):
            found[mode] = pickup(target, samples, listen=False, poll=poll)
    return found


def measure_mariadb(dsn: str, samples: int, poll: float, redis_url: str) -> dict[str, Run]:
    """Both modes on MariaDB at ``dsn``, each on a fresh database dropped afterwards."""
    found: dict[str, Run] = {}
    for mode, url in (("MariaDB, poll", ""), ("MariaDB, redis bell", redis_url)):
        with _bell(url):
            found[mode] = _mariadb_pickup(dsn, samples, poll)
    return found


def _mariadb_pickup(dsn: str, samples: int, poll: float, seed: int = 7) -> Run:
    schema = f"acta_bench_{secrets.token_hex(4)}"
    ledger = Ledger(Target("mariadb", Path(tempfile.gettempdir()), dsn), dsn, schema)
    started: dict[int, float] = {}
    app = bench_app.build(dsn, schema)
    try:
        app.migrate()
        with workers(ledger, 1, executors=4, listen=False, poll=poll) as children:

            def on_line(child: Child, line: str) -> None:
                if line.startswith(bench_app.PICKUP_MARK):
                    _, n, instant = line.split()
                    started[int(n)] = float(instant)

            def one(n: int) -> tuple[float, float]:
                begun = clock.now()
                ref = app.enqueue(bench_app.PICKUP, n)
                call = (clock.now() - begun).total_seconds() * 1000
                wait_for(children, lambda: n in started, 30 + 2 * poll, "a pickup", on_line=on_line)
                wait_for(children, lambda: app.get(ref).status.terminal, 30, "a settle", step=0.002)
                return (started[n] - begun.timestamp()) * 1000, call

            one(-1)  # the producer's pool and definition ids: not a sample
            latencies = []
            for n, gap in enumerate(pauses(samples, True, poll, random.Random(seed))):
                pause(children, gap)
                latencies.append(one(n))
    finally:
        app.close()
        _drop(dsn, schema)
    return latency_stats(latencies)


def _drop(dsn: str, schema: str) -> None:
    import pymysql

    parts = urlsplit(dsn)
    conn = pymysql.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
    )
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{schema}`")
    finally:
        conn.close()


def table(results: dict[str, Run], poll: float) -> str:
    """A Markdown table of the percentiles, in ms."""
    lines = [
        f"| mode (poll {poll:g} s) | samples | p50 ms | p95 ms | p99 ms | mean ms | max ms |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mode, run in results.items():
        lines.append(
            f"| {mode} | {run['samples']:.0f} | {run['p50_ms']:.1f} | {run['p95_ms']:.1f} | "
            f"{run['p99_ms']:.1f} | {run['mean_ms']:.1f} | {run['max_ms']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--poll", type=float, default=1.0)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--mariadb", help="also measure MariaDB at this DSN")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="acta-bell-bench-") as workdir:
        results = measure(Path(workdir), args.samples, args.poll, args.redis)
    if args.mariadb:
        results.update(measure_mariadb(args.mariadb, args.samples, args.poll, args.redis))
    print(table(results, args.poll))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
