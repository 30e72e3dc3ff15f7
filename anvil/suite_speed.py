"""How long one conformance spec takes, setup and teardown included, per provider.

``python -m anvil.suite_speed --provider sqlite|postgres [--dsn DSN] [--out FILE.json]`` runs
the specs under ``conformance/`` in this process, one pytest session without xdist (so each
number is one spec's own cost, not a share of two workers), and adds up the setup, call and
teardown durations pytest reports for each test. It prints how many tests ran and the p50, p90,
p99, max and total of those per-test durations, and the first test's (which pays for what the
session sets up once), and the p50 and p90 of this process's CPU time per test (which other
load on the machine barely moves), and writes every test's duration as JSON with ``--out``.
``--path`` runs another test tree instead (``anvil/userproject``, a user-style project with its own
rootdir); ``--xdist N`` runs it on N xdist workers. Run it before and after a change to the
test harness (docs/benchmarks/suite-speed-*).

A lab tool: reading wall time here is fine; acta itself never does (acta/clock.py aside).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"


class Durations:
    """A pytest plugin object: per test, the sum of its setup, call and teardown durations."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.outcomes: dict[str, str] = {}
        self.first: str | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        # This process's CPU time over the test's setup, call and teardown (every thread of
        # it: the host's loop and handler threads too). Unlike the wall time, another load on
        # the machine barely moves it; a database server's own CPU is not in it.
        started = time.process_time()
        try:
            return (yield)
        finally:
            self.cpu[item.nodeid] = time.process_time() - started

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.first is None:
            self.first = report.nodeid
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped:
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, "passed")


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of an ascending sequence (0 when empty)."""
    if not ordered:
        return 0.0
    rank = max(1, round(fraction * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def summary(seconds: dict[str, float]) -> dict[str, float]:
    """count, p50, p90, p99, max and total (milliseconds, total in seconds)."""
    ordered = sorted(seconds.values())
    return {
        "count": len(ordered),
        "p50_ms": round(percentile(ordered, 0.50) * 1000, 2),
        "p90_ms": round(percentile(ordered, 0.90) * 1000, 2),
        "p99_ms": round(percentile(ordered, 0.99) * 1000, 2),
        "max_ms": round((ordered[-1] if ordered else 0.0) * 1000, 2),
        "total_s": round(sum(ordered), 3),
    }


def run(
    provider: str,
    dsn: str | None,
    extra: Sequence[str],
    path: Path | None = None,
    xdist: int = 0,
) -> dict[str, Any]:
    """Run the conformance specs (or the tests under ``path``) on ``provider`` in this process
    and measure each test; ``xdist`` workers when above 0."""
    durations = Durations()
    args = [
        str(path or REPO / "conformance"),
        "-q",
        *(["-n", str(xdist)] if xdist else ["-p", "no:xdist"]),
        "-p",
        "no:randomly",
        f"--acta-provider={provider}",
        *([f"--acta-dsn={dsn}"] if dsn else []),
        *extra,
    ]
    started = time.perf_counter()
    code = pytest.main(args, plugins=[durations])
    wall = time.perf_counter() - started
    outcomes = list(durations.outcomes.values())
    first = durations.first
    return {
        "provider": provider,
        "path": str(path or "conformance"),
        "xdist": xdist,
        "first_test": first,
        "first_test_ms": round(durations.seconds.get(first, 0.0) * 1000, 2) if first else None,
        "exit_code": int(code),
        "session_wall_s": round(wall, 3),
        "outcomes": {k: outcomes.count(k) for k in sorted(set(outcomes))},
        "summary": summary(durations.seconds),
        "cpu_summary": summary(durations.cpu) if durations.cpu else None,
        "python": platform.python_version(),
        "tests_ms": {k: round(v * 1000, 3) for k, v in sorted(durations.seconds.items())},
        "tests_cpu_ms": {k: round(v * 1000, 3) for k, v in sorted(durations.cpu.items())},
    }


def render(result: dict[str, Any]) -> str:
    s = result["summary"]
    cpu = result["cpu_summary"] or {"p50_ms": None, "p90_ms": None}
    return (
        f"{result['provider']}: {s['count']} tests, p50 {s['p50_ms']} ms, p90 {s['p90_ms']} ms, "
        f"p99 {s['p99_ms']} ms, max {s['max_ms']} ms, total {s['total_s']} s, "
        f"first {result['first_test_ms']} ms; process CPU p50 {cpu['p50_ms']} ms, "
        f"p90 {cpu['p90_ms']} ms "
        f"(session {result['session_wall_s']} s, {result['outcomes']})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m anvil.suite_speed", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--provider", choices=("sqlite", "postgres"), required=True)
    parser.add_argument(
        "--dsn", default=None, help=f"PostgreSQL DSN (default: $ACTA_TEST_DSN or {DEFAULT_DSN})"
    )
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON")
    parser.add_argument(
        "--path", type=Path, default=None, help="the tests to run (default: conformance/)"
    )
    parser.add_argument("--xdist", type=int, default=0, help="xdist workers (default: none)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    dsn = args.dsn or (os.environ.get("ACTA_TEST_DSN") if args.provider == "postgres" else None)
    result = run(args.provider, dsn, args.pytest_args, args.path, args.xdist)
    print(render(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
        print(f"wrote {args.out}")
    return result["exit_code"]  # type: ignore[no-any-return]


if __name__ == "__main__":
    sys.exit(main())
