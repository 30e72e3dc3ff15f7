"""Pickup latency on SQLite across processes, with and without the Redis bell.

A producer (this process) enqueues into a SQLite file that one idle worker process polls.
Without a bell the worker sees a job at its next poll; with ``ACTA_BELL`` set (both processes
read it: acta.redis_bell) the producer's commit publishes on Redis and the worker looks at
once. Each mode runs ``anvil.pickup.pickup``: enqueue-to-handler-start latency, producer
arrivals spread over one poll period, so the polled samples are those of random arrivals.

    python -m anvil.bell_latency --samples 20 --redis redis://127.0.0.1:6379/0

Keep runs short on a shared machine: two modes of 20 samples take about half a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from acta.redis_bell import ENV
from anvil.pickup import Run, pickup
from anvil.workload import Target


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
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="acta-bell-bench-") as workdir:
        results = measure(Path(workdir), args.samples, args.poll, args.redis)
    print(table(results, args.poll))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
