"""The benchmark driver: ``python -m anvil.bench`` (what ``nox -s bench`` runs).

On each provider it measures (a) enqueue throughput, single and batch; (b) drain throughput of
a backlog with zero-work handlers, for 1 and 2 worker processes and 1, 4 and 16 executors;
(c) pickup latency from enqueue to handler start into an idle worker (PostgreSQL: with
LISTEN/NOTIFY and with the listener off; SQLite: by poll from another process, and with the
in-process bell); (d) the gates: lanes, a hot concurrency key, a rate meter (``anvil.gates``).
Each measurement is a warm-up run and three measured runs on fresh ledgers; the JSON and
markdown results go to ``docs/benchmarks/<date>-<machine>.{json,md}``.

``--quick`` runs the same pieces with small sizes and a single run each, as a check that the
harness works; its files get a ``-quick`` suffix and its numbers are not for the record.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psycopg

from acta.about import install_hint
from anvil import gates, measure, pickup, report
from anvil.bench_app import DEFAULT_PROFILE
from anvil.measure import Measurement, loadavg, repeat
from anvil.workload import Target, clock

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_MARIADB_DSN = "mariadb://root@127.0.0.1:3306/test"
PROVIDERS = ("sqlite", "postgres", "mariadb")
PARTS = ("enqueue", "drain", "pickup", "gates")


@dataclass(frozen=True)
class Plan:
    """Sizes and repetitions of one bench invocation."""

    single: int = 2_000
    batch_jobs: int = 50_000
    batch_per_call: int = 1_000
    drain_warmup_jobs: int = 1_000  # the warm-up backlog; it also sizes the measured ones
    drain_seconds: float = 8.0  # measured backlogs last about this long...
    drain_max_jobs: int = 20_000  # ...but hold at most this many jobs
    processes: tuple[int, ...] = (1, 2)
    executors: tuple[int, ...] = (1, 4, 16)
    bell_samples: int = 200  # pickups woken by a bell (NOTIFY, in-process)
    poll_samples: int = 30  # pickups found by polling take ~1 s each
    poll: float = 1.0  # acta's default safety poll
    # Worker execution profiles: the default one everywhere, the others for bell pickups and
    # for these (processes, executors) drains.
    profiles: tuple[str, ...] = (DEFAULT_PROFILE, "direct", "bulk")
    other_profile_drains: tuple[tuple[int, int], ...] = ((1, 16),)
    warmups: int = 1
    runs: int = 3
    gates: gates.GatePlan = gates.FULL_GATES


FULL = Plan()
QUICK = Plan(
    single=200,
    batch_jobs=5_000,
    drain_warmup_jobs=500,
    drain_max_jobs=500,
    bell_samples=50,
    poll_samples=5,
    warmups=0,
    runs=1,
    gates=gates.QUICK_GATES,
)


def drain_measurement(
    target: Target, plan: Plan, processes: int, executors: int, profile: str = DEFAULT_PROFILE
) -> Measurement:
    """Drain runs; the warm-up's rate sizes the measured backlogs to ``plan.drain_seconds``."""
    params: dict[str, Any] = {"processes": processes, "executors": executors, "profile": profile}
    params["jobs"] = plan.drain_warmup_jobs
    m = Measurement("drain", target.provider, params, "jobs/s", "jobs_per_s")
    m.begin()
    for _ in range(plan.warmups):
        warm = measure.drain(target, plan.drain_warmup_jobs, processes, executors, profile)
        m.warmups.append(warm)
        sized = round(warm["jobs_per_s"] * plan.drain_seconds, -2)
        params["jobs"] = int(min(max(sized, plan.drain_warmup_jobs), plan.drain_max_jobs))
    for _ in range(plan.runs):
        m.runs.append(measure.drain(target, params["jobs"], processes, executors, profile))
    m.end()
    return m


def pickup_measurements(target: Target, plan: Plan) -> Iterable[Measurement]:
    """The pickup cases of one provider, the headline case first."""
    poll_wake = f"poll ({plan.poll:g} s)"
    poll, bell = plan.poll_samples, plan.bell_samples
    cases: list[tuple[str, str, str, int, Callable[[int], pickup.Run]]] = []
    if target.provider == "postgres":
        for profile in plan.profiles:
            cases.append(
                ("notify", "other process", profile, bell,
                 functools.partial(pickup.pickup, target, listen=True, profile=profile))
            )  # fmt: skip
        cases.append(
            (poll_wake + ", listener off", "other process", DEFAULT_PROFILE, poll,
             lambda n: pickup.pickup(target, n, listen=False, poll=plan.poll))
        )  # fmt: skip
    else:
        cases.append(
            (poll_wake, "other process", DEFAULT_PROFILE, poll,
             lambda n: pickup.pickup(target, n, listen=True, poll=plan.poll))
        )  # fmt: skip
        for profile in plan.profiles:
            cases.append(
                ("in-process bell", "same process", profile, bell,
                 functools.partial(pickup.pickup_in_process, target, profile=profile))
            )  # fmt: skip
    for wake, where, profile, samples, run in cases:
        warm = max(samples // 5, 2)
        params = {"wake": wake, "worker": where, "profile": profile, "samples": samples}
        m = Measurement("pickup", target.provider, params | {"poll_s": plan.poll}, "ms", "p50_ms")
        m.begin()
        for _ in range(plan.warmups):
            m.warmups.append(run(warm))  # a shorter warm-up: it only has to warm things up
        for _ in range(plan.runs):
            m.runs.append(run(samples))
        m.end()
        yield m


def run_provider(
    target: Target,
    plan: Plan,
    parts: Iterable[str] = PARTS,
    progress: Callable[[Measurement], None] = lambda m: None,
) -> list[Measurement]:
    """Every selected measurement on one provider, in order."""
    parts = set(parts)
    done: list[Measurement] = []

    def record(m: Measurement) -> None:
        done.append(m)
        progress(m)

    provider, w, r = target.provider, plan.warmups, plan.runs
    if "enqueue" in parts:
        single = Measurement(
            "enqueue_single", provider, {"jobs": plan.single}, "jobs/s", "jobs_per_s"
        )
        record(repeat(single, lambda: measure.enqueue_single(target, plan.single), w, r))
        params = {"jobs": plan.batch_jobs, "per_call": plan.batch_per_call}
        batch = Measurement("enqueue_batch", provider, params, "jobs/s", "jobs_per_s")
        run = lambda: measure.enqueue_batch(target, plan.batch_jobs, plan.batch_per_call)  # noqa: E731
        record(repeat(batch, run, w, r))
    if "drain" in parts:
        for processes in plan.processes:
            for executors in plan.executors:
                record(drain_measurement(target, plan, processes, executors))
        for profile in plan.profiles:
            if profile != DEFAULT_PROFILE:
                for processes, executors in plan.other_profile_drains:
                    record(drain_measurement(target, plan, processes, executors, profile))
    if "pickup" in parts:
        for m in pickup_measurements(target, plan):
            record(m)
    if "gates" in parts:
        for m in gates.measurements(target, plan.gates, plan.warmups, plan.runs):
            record(m)
    return done


def describe(m: Measurement) -> str:
    params = ", ".join(f"{k}={v}" for k, v in m.params.items())
    return f"{m.provider:8} {m.name:15} {params}: {m.median():,.2f} {m.unit} (median)"


def _command(argv: list[str]) -> str:
    if os.environ.get("NOX_CURRENT_SESSION"):
        return "nox -s bench" + (" -- " + " ".join(argv) if argv else "")
    return "python -m anvil.bench" + (" " + " ".join(argv) if argv else "")


def _check_postgres(dsn: str) -> None:
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except psycopg.Error as exc:
        raise SystemExit(
            f"cannot reach PostgreSQL at {dsn!r}: {exc}; use --provider sqlite"
        ) from exc


def _check_mariadb(dsn: str) -> None:
    try:
        import pymysql

        from anvil.workload import _mariadb

        _mariadb(dsn).close()
    except ImportError as exc:
        raise SystemExit(f"MariaDB needs PyMySQL ({install_hint('mariadb')}): {exc}") from exc
    except pymysql.err.Error as exc:
        raise SystemExit(
            f"cannot reach MariaDB at {dsn!r}: {exc}; use --provider sqlite or postgres"
        ) from exc


def _interruptible() -> None:
    """Ctrl-C and SIGTERM end the bench through its cleanups (workers stopped, schemas
    dropped). nox starts it with SIGINT ignored, so the handler is set explicitly."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    _interruptible()
    parser = argparse.ArgumentParser(prog="python -m anvil.bench", description=__doc__)
    parser.add_argument("--provider", choices=(*PROVIDERS, "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each")
    parser.add_argument("--dsn", default=os.environ.get("ACTA_BENCH_DSN") or DEFAULT_DSN)
    parser.add_argument(
        "--mariadb-dsn",
        default=os.environ.get("ACTA_BENCH_MARIADB_DSN") or DEFAULT_MARIADB_DSN,
    )
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument("--only", default=",".join(PARTS), help="comma list of " + ",".join(PARTS))
    parser.add_argument("--runs", type=int, help="measured runs per measurement")
    parser.add_argument("--warmups", type=int, help="warm-up runs per measurement")
    parser.add_argument(
        "--workdir", type=Path, help="where SQLite ledgers go (default: a temp dir)"
    )
    args = parser.parse_args(args_list)
    plan = QUICK if args.quick else FULL
    if args.runs is not None:
        plan = replace(plan, runs=args.runs)
    if args.warmups is not None:
        plan = replace(plan, warmups=args.warmups)
    parts = [p for p in args.only.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown or plan.runs < 1:
        parser.error(f"--only takes {', '.join(PARTS)}; --runs must be at least 1")
    providers = list(PROVIDERS) if args.provider == "all" else [args.provider]
    dsns = {"postgres": args.dsn, "mariadb": args.mariadb_dsn}
    if "mariadb" in providers:
        _check_mariadb(args.mariadb_dsn)
    if "postgres" in providers:
        _check_postgres(args.dsn)
        if psycopg.pq.__impl__ == "python":
            print("warning: psycopg runs its pure-Python implementation here; install "
                  "psycopg[binary] or psycopg[c] for numbers a production install would see",
                  file=sys.stderr)  # fmt: skip

    env = report.environment(_command(args_list), args.dsn if "postgres" in providers else None)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="acta-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    load: dict[str, Any] = {"before": loadavg(), "acta_before": measure.acta_fingerprint()}
    started = clock.monotonic()
    measurements: list[Measurement] = []
    try:
        for provider in providers:
            target = Target(provider, workdir, dsns.get(provider, ""))
            measurements += run_provider(target, plan, parts, lambda m: print(describe(m)))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    load |= {"after": loadavg(), "wall_s": clock.monotonic() - started}
    load["acta_after"] = measure.acta_fingerprint()
    method = {"warmups": plan.warmups, "runs": plan.runs, "quick": args.quick, "plan": asdict(plan)}
    doc = report.document(env, measurements, load, method)
    name = report.slug(env) + ("-quick" if args.quick else "")
    json_path, md_path = report.write(doc, args.out, name)
    if not args.quick:
        report.index(args.out)
    print(f"wrote {json_path} and {md_path} in {load['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        raise SystemExit(f"interrupted ({stop}); workers stopped, ledgers dropped") from None
